//! Detection runs on the GPU: the instrumented tree copied with the detection runtime switched
//! on (`WMFIX_RACE`) and built, then run natively, each run writing its trace, and read back.

use super::trace::Trace;
use crate::app::builder;
use crate::app::config::App;
use crate::fences::record::FenceList;
use crate::fences::set::FenceSet;
use crate::out_dir::OutDir;
use crate::run::environment::TestEnv;
use crate::run::trial::{self, Outcome};
use anyhow::{Context, Result};
use serde::Serialize;
use std::path::Path;
use std::time::Instant;

pub struct Options {
    /// Runs at most: fewer where `run`'s `after` says a run settles it.
    pub runs: usize,
    /// The first run's environment; later runs remap thread ids (its `+` form) where
    /// `remap_later`, so that each sees another schedule.
    pub env: TestEnv,
    pub remap_later: bool,
    pub seed: u64,
    /// wmfix's own fences enabled in the runs (`none`: the program's own fences only).
    pub fences: FenceSet,
    /// How big a run's trace buffer is (device memory).
    pub trace: TraceSize,
}

/// A detection run's trace buffer: a share of the device's free memory at the first launch
/// (`auto`, the default: the program's whole trace without a flag), or a number of records.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TraceSize {
    Share(f64),
    Events(u64),
}

/// The share of free device memory a trace takes by default (40 bytes a record: 35 GB, 870 M
/// events on an idle 141 GB H200).
pub const DEFAULT_SHARE: f64 = 0.25;

impl TraceSize {
    /// `--events N` where given, else `--trace-memory`'s share.
    pub fn of(events: Option<u64>, share: f64) -> TraceSize {
        events.map_or(TraceSize::Share(share), TraceSize::Events)
    }

    /// The runtime's variables for it.
    fn env(self) -> [(String, String); 2] {
        let (events, share) = match self {
            TraceSize::Share(s) => ("auto".to_string(), s),
            TraceSize::Events(n) => (n.to_string(), DEFAULT_SHARE),
        };
        [
            ("WMFIX_RACE_EVENTS".into(), events),
            ("WMFIX_RACE_MEMORY".into(), share.to_string()),
        ]
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct RunInfo {
    pub run: usize,
    pub seed: u64,
    pub env: TestEnv,
    pub outcome: Outcome,
    pub seconds: f64,
    pub events: usize,
    pub dropped: u64,
    /// Why nothing of this run could be checked, where that is so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost: Option<String>,
}

pub struct Runs {
    /// Each launch of each run, a trace of its own (`launches::split`).
    pub traces: Vec<Trace>,
    pub info: Vec<RunInfo>,
    /// How the original ended natively, and its seconds (for the overhead figure).
    pub native: Option<(Outcome, f64)>,
}

/// Copies the instrumented build's `tree/` and `runtime/` into `race/`, switches the detection
/// runtime on there and builds it, unless the instrumented build it came from is unchanged.
pub fn build(app: &App, out: &OutDir) -> Result<()> {
    let files = out.race();
    let stamp = std::fs::read_to_string(out.build_stamp()).unwrap_or_default();
    let up_to_date = std::fs::read_to_string(files.stamp()).is_ok_and(|s| s == stamp);
    if up_to_date && files.tree().is_dir() {
        return Ok(());
    }
    out.remove(&files.stamp())?;
    for (from, to) in [(out.tree(), files.tree()), (out.runtime(), files.runtime())] {
        out.remove(&to)?;
        copy_tree(&from, &to).with_context(|| format!("copying {}", from.display()))?;
    }
    let header = files.runtime().join("wmfix.cuh");
    let text = std::fs::read_to_string(&header).context("the copied runtime header")?;
    std::fs::write(&header, format!("#define WMFIX_RACE 1\n{text}"))?;
    let step = builder::spinner("building the detection variant");
    builder::run_build(app, &files.tree(), &files.build_log())?;
    step.finish_and_clear();
    std::fs::create_dir_all(files.dir())?;
    std::fs::write(files.stamp(), stamp)?;
    Ok(())
}

/// A folder copied as it is: files, folders, and links as links.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    for entry in walkdir::WalkDir::new(from).follow_links(false) {
        let entry = entry?;
        let rel = entry.path().strip_prefix(from).expect("inside the walk");
        let dest = to.join(rel);
        let kind = entry.file_type();
        if kind.is_dir() {
            std::fs::create_dir_all(&dest)?;
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(entry.path())?, &dest)?;
        } else {
            std::fs::copy(entry.path(), &dest)?;
        }
    }
    Ok(())
}

impl Options {
    /// Run `run`'s environment.
    fn env_of(&self, run: usize) -> TestEnv {
        if run > 0 && self.remap_later {
            TestEnv {
                randomise: true,
                ..self.env
            }
        } else {
            self.env
        }
    }
}

/// What the caller makes of a run's traces: whether `Runs` keeps them (else the caller has
/// checked them itself), and whether the run settles it (no more runs).
pub struct After {
    pub keep: bool,
    pub stop: bool,
}

impl After {
    /// Every trace kept, every run made.
    pub const KEEP_ALL: After = After {
        keep: true,
        stop: false,
    };
}

/// The original once natively (for the overhead), then the detection runs, each launch a
/// trace of its own (`launches::split`); after each run, `after(its traces)` says whether to
/// keep them and whether to stop there.
pub fn run(
    app: &App,
    out: &OutDir,
    opts: &Options,
    original: &Path,
    mut after: impl FnMut(&[Trace]) -> After,
) -> Result<Runs> {
    let files = out.race();
    let fences = FenceList::load(&out.fences_json())?;
    let kinds = super::sites::site_kinds(&fences);
    let native = timed(app, original, &[], &files.native_log())?;
    let mut runs = Runs {
        traces: Vec::new(),
        info: Vec::new(),
        native,
    };
    for run in 0..opts.runs {
        let seed = opts.seed + run as u64;
        let trace_path = files.trace(run);
        out.remove(&trace_path)?;
        let run_env = opts.env_of(run);
        let mut env = trial::TrialSpec::new(run_env, seed, &opts.fences).env_vars();
        env.push((
            "WMFIX_RACE_TRACE".into(),
            std::path::absolute(&trace_path)?.display().to_string(),
        ));
        env.extend(opts.trace.env());
        let Some((outcome, seconds)) = timed(app, &files.tree(), &env, &files.log(run))? else {
            return Err(crate::interrupt::stopped("during a detection run"));
        };
        // A run that wrote no trace (it crashed, or the buffer could not be made) checked
        // nothing: the verdict is inconclusive, never "no race".
        let mut trace = match std::fs::read(&trace_path) {
            Ok(bytes) => Trace::from_bytes(&bytes, &kinds)
                .with_context(|| format!("reading {}", trace_path.display()))?,
            Err(e) => Trace::lost(&format!(
                "run {run} ({outcome}) wrote no trace at {} ({e}); its output is in {}",
                trace_path.display(),
                files.log(run).display()
            )),
        };
        runs.info.push(RunInfo {
            run,
            seed,
            env: run_env,
            outcome,
            seconds,
            events: trace.events.len(),
            dropped: trace.dropped,
            lost: trace.lost.clone(),
        });
        trace.run = run;
        let pieces = super::launches::split(vec![trace]);
        let next = after(&pieces);
        if next.keep {
            runs.traces.extend(pieces);
        }
        if next.stop {
            break;
        }
    }
    Ok(runs)
}

fn timed(
    app: &App,
    dir: &Path,
    env: &[(String, String)],
    log: &Path,
) -> Result<Option<(Outcome, f64)>> {
    let t0 = Instant::now();
    let r = trial::run_once(app, dir, env, log)?;
    Ok(r.map(|(outcome, _, _)| (outcome, t0.elapsed().as_secs_f64())))
}

//! `wmfix race`: data races under the PTX (or scoped-HRF) model from one run (or a few), with
//! the fences that would order them.

use super::AppArgs;
use crate::cmd::values::{Count, Env, TraceShare};
use crate::exit_code;
use crate::fences::set::FenceSet;
use crate::race::detect::Options as Detect;
use crate::race::report::{self, Report};
use crate::race::runs::{self, RunInfo};
use crate::run::environment::TestEnv;
use serde::Serialize;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    app: AppArgs,
    /// Detection runs at most, each its own seed: the first in `--env`, the later ones with
    /// thread ids remapped by their seed (its `+` form), so that each sees another schedule.
    /// Stops after the first run that shows a race, unless `--all-runs`.
    #[arg(long, default_value = "3")]
    runs: Count,
    /// Every one of `--runs`, even after a run showed a race (to see whether the verdict is
    /// the same in each).
    #[arg(long)]
    all_runs: bool,
    /// Testing environment of the first run (`no-str-`: natively, as the program runs).
    #[arg(long, default_value = "no-str-")]
    env: Env,
    /// Steps a run (`{steps}` in wmfix.toml's run command). One by default, whatever
    /// wmfix.toml says: a race shows in one execution, and more steps only repeat it.
    #[arg(long, default_value_t = 1)]
    steps: u32,
    /// wmfix's fences enabled in the runs: `none` (the program's own fences only), `all`, or
    /// ids like `0,3,7-9`.
    #[arg(long, default_value = "none")]
    fences: FenceSet,
    /// Trace records a run may hold (40 bytes each, in device memory) [default: as many as
    /// `--trace-memory` allows]. Events past it are not checked, and "no race" is then not a
    /// verdict (exit 6).
    #[arg(long, value_parser = crate::cmd::values::whole_u64)]
    events: Option<u64>,
    /// The share of the device's free memory (at the program's first launch) a run's trace
    /// takes, unless `--events` is given.
    #[arg(long, default_value = "0.25")]
    trace_memory: TraceShare,
    /// Follow PTX strictly: a `__syncthreads` after a strong read does not complete its
    /// acquire (threadFenceReduction's reader then races).
    #[arg(long)]
    strict: bool,
    /// The memory model races are found under: `ptx` (fences alone make release and acquire
    /// patterns) or `scoped-hrf` (an atomic read-modify-write also acquires what it reads and
    /// releases at its scope). Under ptx, a row scoped-hrf would not report says so.
    #[arg(long, value_enum, default_value = "ptx")]
    model: crate::race::detect::Model,
    #[arg(long, default_value_t = 1, value_parser = crate::cmd::values::whole_u64)]
    seed: u64,
    /// Print the report (what race.json holds) as one JSON document on stdout; the table goes
    /// to stderr.
    #[arg(long)]
    json: bool,
}

/// `race.json`.
#[derive(Serialize)]
struct Document<'a> {
    app: String,
    env: TestEnv,
    fences: String,
    runs: &'a [RunInfo],
    /// The original program's run time natively, and the detection runs' mean.
    native_s: Option<f64>,
    /// How the original ended natively, and the detection runs that ended otherwise: the race
    /// build changed the program (or its outcome varies natively).
    native: Option<crate::run::trial::Outcome>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    unlike_original: Vec<usize>,
    detection_s: f64,
    /// Checking every trace (the host side of detection), seconds.
    check_s: f64,
    #[serde(flatten)]
    report: &'a Report,
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let app = crate::app::config::App::load(&args.app.dir)?.with_steps(Some(args.steps))?;
    // Before anything is written: no output folder for a run that cannot start.
    super::needs_gpu(&app, "race")?;
    let out = crate::out_dir::OutDir::open(&args.app.out(), std::slice::from_ref(&app.root))?;
    // Bad ids are refused before a build when an earlier one listed the fences; the list is
    // read again after the build, which may have changed it.
    let fences = crate::fences::record::FenceList::load(&out.fences_json()).ok();
    if let Some(f) = &fences {
        args.fences.check_ids("--fences", f.total)?;
    }
    let built = crate::app::builder::build(&app, &out, args.app.fence)?;
    let fences = crate::fences::record::FenceList::load(&out.fences_json())?;
    args.fences.check_ids("--fences", fences.total)?;
    runs::build(&app, &out)?;
    let opts = runs::Options {
        runs: args.runs.get(),
        env: args.env.0,
        remap_later: true,
        seed: args.seed,
        fences: args.fences.clone(),
        trace: runs::TraceSize::of(args.events, args.trace_memory.0),
    };
    let detect = Detect {
        barrier_acquires: !args.strict,
        model: args.model,
        fence_scope: args.app.fence.into(),
        ..Detect::default()
    };
    // Each run is checked once it ends and its traces let go (a trace can be tens of GB): a run
    // that shows a race settles the verdict, and the report is that run's with the clean runs'
    // figures added. `--all-runs` keeps every trace for one report over all of them.
    let mut check_s = 0.0;
    let mut each: Vec<Report> = Vec::new();
    let done = runs::run(&app, &out, &opts, &built.original, |traces| {
        if args.all_runs {
            return runs::After::KEEP_ALL;
        }
        let t0 = std::time::Instant::now();
        let r = report::report(traces, &detect, Some(&fences));
        check_s += t0.elapsed().as_secs_f64();
        let stop = !r.rows.is_empty();
        each.push(r);
        runs::After { keep: false, stop }
    })?;
    let t0 = std::time::Instant::now();
    let report = if args.all_runs {
        report::report(&done.traces, &detect, Some(&fences))
    } else {
        report::with_clean_runs(each)
    };
    check_s += t0.elapsed().as_secs_f64();
    let stopped = done.info.len() < args.runs.get();
    let detection_s =
        done.info.iter().map(|r| r.seconds).sum::<f64>() / done.info.len().max(1) as f64;
    let doc = Document {
        app: app.root.display().to_string(),
        env: args.env.0,
        fences: args.fences.to_string(),
        runs: &done.info,
        native_s: done.native.map(|(_, s)| s),
        native: done.native.map(|(o, _)| o),
        unlike_original: unlike_original(&done),
        detection_s,
        check_s,
        report: &report,
    };
    let text = serde_json::to_string_pretty(&doc)?;
    std::fs::write(out.race().report(), format!("{text}\n"))?;
    let mut human = report::table(&report);
    human.push_str(&timing(&done.info, doc.native_s));
    human.push_str(&schedules(&done.info, args.runs.get(), stopped));
    if let (Some(native), false) = (doc.native, doc.unlike_original.is_empty()) {
        human.push_str(&crate::exit_code::warning(format_args!(
            "detection run(s) {:?} ended otherwise than the original natively ({native}): the race build changed the program, or its outcome varies; see {}\n",
            doc.unlike_original,
            out.race().log(doc.unlike_original[0]).display()
        )));
    }
    human.push_str(&format!(
        "checked in {check_s:.2} s ({} threads, {} clock entries at the end)\n",
        report.stats.threads, report.stats.clock_entries
    ));
    human.push_str(&format!(
        "wmfix: report in {}\n",
        out.race().report().display()
    ));
    super::report(args.json, &doc, &human);
    // A race found in what was checked stands; "none" only from a whole trace.
    Ok(if !report.rows.is_empty() {
        exit_code::ERRORS_SEEN
    } else if !report.complete {
        exit_code::INCONCLUSIVE
    } else {
        exit_code::OK
    })
}

/// The detection runs that did not end as the original did natively.
fn unlike_original(done: &runs::Runs) -> Vec<usize> {
    let Some((native, _)) = done.native else {
        return Vec::new();
    };
    done.info
        .iter()
        .filter(|r| r.outcome != native)
        .map(|r| r.run)
        .collect()
}

/// What the runs were, so that a verdict says how many schedules it rests on.
fn schedules(info: &[RunInfo], most: usize, stopped: bool) -> String {
    let envs: Vec<String> = info.iter().map(|r| r.env.to_string()).collect();
    let stop = if stopped {
        format!(
            "; stopped after run {} showed a race (`--all-runs` runs all {most})",
            info.len() - 1
        )
    } else {
        String::new()
    };
    format!("schedules: {} ({}){stop}\n", info.len(), envs.join(", "))
}

fn timing(info: &[RunInfo], native_s: Option<f64>) -> String {
    let events: usize = info.iter().map(|r| r.events).sum();
    let mean = info.iter().map(|r| r.seconds).sum::<f64>() / info.len().max(1) as f64;
    let native = native_s.map_or_else(String::new, |n| {
        format!(
            " (the original natively: {n:.2} s, {:.1}x)",
            mean / n.max(1e-9)
        )
    });
    let outcomes: Vec<String> = info.iter().map(|r| r.outcome.to_string()).collect();
    format!(
        "{} detection run(s) ({}), {events} events, {mean:.2} s a run{native}\n",
        info.len(),
        outcomes.join(", ")
    )
}

//! `wmfix cost`: what the fences cost. The program is built three times with plain fences
//! compiled in (no wmfix runtime, so no mask look-ups or id remapping blur the comparison): as
//! written, with the reduced set, and with every fence; then run in rounds, each round running
//! every variant once in a fresh random order, so that drift (clocks, temperature) falls on all
//! variants alike. Each run's wall time, GPU energy (NVML) and the time the program reports
//! itself (a `wmfix-time-ms: X` line) are recorded; `cost.json` is rewritten after every run.

use crate::app::builder;
use crate::app::config::App;
use crate::cost::energy::Meter;
use crate::exit_code::{self, fail};
use crate::fences::id::{FenceId, Ids};
use crate::fences::scope::FenceScope;
use crate::fences::set::FenceSet;
use crate::out_dir::{CostFiles, OutDir};
use crate::reduce::record::Report as ReducedRecord;
use crate::run::trial::{self, Outcome};
use crate::stats::{self, Spread};
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The middle variant: the reduction's result, or fences named on the command line.
#[derive(Clone, Debug)]
pub enum Middle {
    Reduced,
    /// A reduction's `reduce.json` read from elsewhere (made on another machine, say).
    ReducedIn(PathBuf),
    Given(FenceSet),
}

pub struct Options {
    pub dir: PathBuf,
    pub out: PathBuf,
    pub middle: Middle,
    /// Timed rounds; each runs every variant once.
    pub rounds: usize,
    /// Untimed rounds first (caches, clocks, the file system).
    pub warmup: usize,
    pub seed: u64,
    pub hold: bool,
    /// NVML index of the GPU whose energy is read.
    pub nvml_index: u32,
    /// Fence scope for the "all" variant and for given fences (a reduction brings its own).
    pub scope: FenceScope,
    /// With a reduction as the middle variant: its model completion too.
    pub model: bool,
}

#[derive(Serialize, Clone, Debug)]
pub struct Sample {
    pub variant: String,
    pub round: usize,
    pub outcome: Outcome,
    pub wall_s: f64,
    pub energy_j: Option<f64>,
    pub reported_ms: Option<f64>,
}

#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Row {
    pub variant: String,
    pub fences: usize,
    pub runs: usize,
    /// Runs that failed the post-condition, timed out or crashed (still timed).
    pub errors: usize,
    pub wall_s: Option<Spread>,
    pub energy_j: Option<Spread>,
    pub reported_ms: Option<Spread>,
    /// Mean over the first variant's mean, with its 95% half-width.
    pub wall_ratio: Option<(f64, f64)>,
    pub energy_ratio: Option<(f64, f64)>,
    pub reported_ratio: Option<(f64, f64)>,
}

/// `cost.json`, and what `wmfix cost --json` prints.
#[derive(Serialize, Deserialize, Debug)]
pub struct Report {
    pub app: PathBuf,
    pub gpu: Option<String>,
    /// Why energy is missing, when it is.
    pub energy_note: Option<String>,
    pub seed: u64,
    pub rounds_done: usize,
    pub rounds_asked: usize,
    pub interrupted: bool,
    pub rows: Vec<Row>,
}

struct Variant {
    name: String,
    fences: Ids,
    tree: PathBuf,
}

/// Measures; returns the report and the file of its runs.
pub fn run(opts: &Options, out: &OutDir) -> Result<(Report, PathBuf)> {
    crate::interrupt::install();
    let app = App::load(&opts.dir)?;
    let built = builder::build(&app, out, opts.scope)?;
    let files = out.cost();
    std::fs::create_dir_all(files.logs())?;
    let variants = variants(&app, out, &built, opts)?;
    let meter = Meter::open(opts.nvml_index);
    let device = device_env(opts.nvml_index);
    let _held = opts.hold.then(|| crate::run::hold::hold(&[]));
    let mut report = Report {
        app: app.root.clone(),
        gpu: meter.as_ref().ok().map(|m| m.name.clone()),
        energy_note: meter.as_ref().err().cloned(),
        seed: opts.seed,
        rounds_done: 0,
        rounds_asked: opts.rounds,
        interrupted: false,
        rows: vec![],
    };
    let mut samples = Vec::new();
    let mut jsonl = std::fs::File::create(files.runs())?;
    for round in 0..opts.warmup + opts.rounds {
        for v in order(variants.len(), opts.seed, round) {
            let v = &variants[v];
            let log = files.logs().join(format!("{}.log", v.name));
            let Some(s) = measure(&app, v, round, &log, &device, meter.as_ref().ok())? else {
                report.interrupted = true;
                break;
            };
            if round < opts.warmup {
                continue;
            }
            writeln!(jsonl, "{}", serde_json::to_string(&s)?)?;
            samples.push(s);
            report.rows = rows(&variants, &samples);
            write_report(&files, &report)?;
        }
        if report.interrupted {
            break;
        }
        if round >= opts.warmup {
            report.rounds_done = round + 1 - opts.warmup;
        }
    }
    // A round cut short by ctrl-c would weigh its variants unevenly: only whole rounds count.
    samples.retain(|s| s.round < opts.warmup + report.rounds_done);
    report.rows = rows(&variants, &samples);
    write_report(&files, &report)?;
    Ok((report, files.runs()))
}

/// A reduction as the middle variant: its name, kept fences (with the model's when `model`),
/// scope, and the loop fences placed after the loop alone, as the reduction (and `wmfix apply
/// --model`, for the model's) placed them. Its fence ids hold only for the same sources.
fn reduced(
    app: &App,
    out: &OutDir,
    saved: ReducedRecord,
    model: bool,
) -> Result<(&'static str, Ids, FenceScope, Ids)> {
    let now = crate::reduce::patch::harden(app, out.root(), &Ids::new(), saved.scope)?;
    if now.sources != saved.sources {
        return Err(fail(
            exit_code::BAD_INPUT,
            "the sources changed since the reduction: its fence ids no longer apply; run `wmfix reduce` again or give --fences",
        ));
    }
    let (name, model) = if model {
        ("reduced+model", saved.model.ids())
    } else {
        ("reduced", Ids::new())
    };
    Ok((
        name,
        saved.result.fences.union(&model).copied().collect(),
        saved.scope,
        saved
            .result
            .after_loop_only
            .union(&model)
            .copied()
            .collect(),
    ))
}

/// None (the original build), the middle set, all; a middle set equal to another is dropped.
fn variants(
    app: &App,
    out: &OutDir,
    built: &builder::Built,
    opts: &Options,
) -> Result<Vec<Variant>> {
    let all = FenceId::all(built.fences);
    let (middle_name, middle, middle_scope, after_loop) = match &opts.middle {
        Middle::Given(FenceSet::All) => ("chosen", all.clone(), opts.scope, Ids::new()),
        Middle::Given(set @ FenceSet::Ids(ids)) => {
            set.check_ids("--fences", built.fences)?;
            ("chosen", ids.clone(), opts.scope, Ids::new())
        }
        Middle::ReducedIn(path) => reduced(app, out, ReducedRecord::read(path)?, opts.model)?,
        Middle::Reduced => reduced(app, out, ReducedRecord::load(out)?, opts.model)?,
    };
    let mut list = vec![Variant {
        name: "none".into(),
        fences: Ids::new(),
        tree: built.original.clone(),
    }];
    for (name, fences, scope, after_loop) in [
        (middle_name, middle, middle_scope, after_loop),
        ("all", all, opts.scope, Ids::new()),
    ] {
        if list.iter().any(|v| v.fences == fences) {
            eprintln!("wmfix: the {name} variant has the same fences as another: measured once");
            continue;
        }
        let tree = harden_and_build(app, out, name, &fences, &after_loop, scope)?;
        list.push(Variant {
            name: name.into(),
            fences,
            tree,
        });
    }
    Ok(list)
}

/// Builds the original sources with plain fences at `fences` in `out/cost/<name>`, unless the
/// same sources were built there already.
fn harden_and_build(
    app: &App,
    out: &OutDir,
    name: &str,
    fences: &Ids,
    after_loop: &Ids,
    scope: FenceScope,
) -> Result<PathBuf> {
    let files =
        crate::reduce::patch::harden_placed(app, out.root(), fences, after_loop, scope)?.files;
    let tree = out.cost().variant(name);
    let mut digest = crate::digest::Fnv::default();
    digest.add(std::fs::read_to_string(out.build_stamp())?.as_bytes());
    for f in &files {
        digest.add(f.rel.as_os_str().as_encoded_bytes());
        digest.add(&f.bytes());
    }
    let stamp = out.cost().variant_stamp(name);
    if std::fs::read_to_string(&stamp).is_ok_and(|s| s == digest.hex()) {
        return Ok(tree);
    }
    out.remove(&tree)?;
    let input = crate::rewrite::walk::collect(std::slice::from_ref(&app.root), out.root())?;
    crate::rewrite::walk::copy_files(&input, &tree).context("copying the sources")?;
    for f in &files {
        std::fs::write(tree.join(&f.rel), f.bytes())?;
    }
    let step = builder::spinner(&format!("building the {name} variant"));
    builder::run_build(app, &tree, &out.cost().build_log(name))?;
    step.finish_and_clear();
    std::fs::write(&stamp, digest.hex())?;
    Ok(tree)
}

/// The order of the variants in round `round`: a seeded shuffle.
fn order(n: usize, seed: u64, round: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (0..n).collect();
    crate::rng::shuffle(&mut v, seed, round as u64);
    v
}

/// One run of `v`; None if ctrl-c stopped it.
fn measure(
    app: &App,
    v: &Variant,
    round: usize,
    log: &Path,
    device: &[(String, String)],
    meter: Option<&Meter>,
) -> Result<Option<Sample>> {
    let before = meter.and_then(Meter::read_mj);
    let Some((outcome, _, duration)) = trial::run_once(app, &v.tree, device, log)? else {
        return Ok(None);
    };
    let after = meter.and_then(Meter::read_mj);
    let energy_j = match (before, after) {
        (Some(b), Some(a)) => Some(a.saturating_sub(b) as f64 / 1000.0),
        _ => None,
    };
    let text = std::fs::read_to_string(log).unwrap_or_default();
    if outcome.is_error() {
        // Kept for a look; the next run of this variant writes elsewhere.
        let _ = std::fs::copy(log, log.with_extension(format!("round-{round}.log")));
    }
    Ok(Some(Sample {
        variant: v.name.clone(),
        round,
        outcome,
        wall_s: duration.as_secs_f64(),
        energy_j,
        reported_ms: reported_ms(&text),
    }))
}

/// The runs go to the GPU whose energy is read: NVML counts in PCI order, CUDA by default
/// fastest first. A device the user chose (CUDA_VISIBLE_DEVICES) is left as it is.
fn device_env(nvml_index: u32) -> Vec<(String, String)> {
    if std::env::var_os("CUDA_VISIBLE_DEVICES").is_some() {
        return vec![];
    }
    vec![
        ("CUDA_DEVICE_ORDER".into(), "PCI_BUS_ID".into()),
        ("CUDA_VISIBLE_DEVICES".into(), nvml_index.to_string()),
    ]
}

/// The last `wmfix-time-ms: X` line of a run's output: the program's own timing of its GPU
/// work (cudaEvent time around its kernels, say), free of process and context start-up.
pub fn reported_ms(output: &str) -> Option<f64> {
    output
        .lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix("wmfix-time-ms:")?.trim().parse().ok())
}

fn rows(variants: &[Variant], samples: &[Sample]) -> Vec<Row> {
    let mut rows: Vec<Row> = variants
        .iter()
        .map(|v| {
            let mine: Vec<&Sample> = samples.iter().filter(|s| s.variant == v.name).collect();
            // The runs that have the value: one crashed run without a timing line, or one
            // failed NVML read, must not blank a column.
            let all = |f: fn(&Sample) -> Option<f64>| -> Option<Spread> {
                let xs: Vec<f64> = mine.iter().filter_map(|s| f(s)).collect();
                stats::spread(&xs)
            };
            Row {
                variant: v.name.clone(),
                fences: v.fences.len(),
                runs: mine.len(),
                errors: mine.iter().filter(|s| s.outcome.is_error()).count(),
                wall_s: all(|s| Some(s.wall_s)),
                energy_j: all(|s| s.energy_j),
                reported_ms: all(|s| s.reported_ms),
                wall_ratio: None,
                energy_ratio: None,
                reported_ratio: None,
            }
        })
        .collect();
    let base = rows.first().cloned();
    if let Some(b) = base {
        let r = |x: &Option<Spread>, y: &Option<Spread>| stats::ratio(x.as_ref()?, y.as_ref()?);
        for row in &mut rows {
            row.wall_ratio = r(&row.wall_s, &b.wall_s);
            row.energy_ratio = r(&row.energy_j, &b.energy_j);
            row.reported_ratio = r(&row.reported_ms, &b.reported_ms);
        }
    }
    rows
}

fn write_report(files: &CostFiles, report: &Report) -> Result<()> {
    let path = files.report();
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_string_pretty(report)?)?;
    std::fs::rename(tmp, path)?;
    Ok(())
}

/// The printed table: mean ± 95% half-width, and the ratio to the program as written.
pub fn table(report: &Report) -> String {
    let cell = |s: &Option<Spread>, digits: usize| {
        s.map_or("-".to_string(), |s| {
            format!("{:.*} ± {:.*}", digits, s.mean, digits, s.ci95)
        })
    };
    let ratio =
        |r: &Option<(f64, f64)>| r.map_or("-".to_string(), |(r, h)| format!("{r:.3} ± {h:.3}"));
    let mut t = format!(
        "{:<8} {:>6} {:>5} {:>6}  {:>18} {:>15}  {:>18} {:>15}  {:>18} {:>15}\n",
        "variant",
        "fences",
        "runs",
        "errors",
        "wall s",
        "x none",
        "energy J",
        "x none",
        "reported ms",
        "x none"
    );
    for r in &report.rows {
        t += &format!(
            "{:<8} {:>6} {:>5} {:>6}  {:>18} {:>15}  {:>18} {:>15}  {:>18} {:>15}\n",
            r.variant,
            r.fences,
            r.runs,
            r.errors,
            cell(&r.wall_s, 4),
            ratio(&r.wall_ratio),
            cell(&r.energy_j, 3),
            ratio(&r.energy_ratio),
            cell(&r.reported_ms, 3),
            ratio(&r.reported_ratio),
        );
    }
    match (&report.gpu, &report.energy_note) {
        (Some(g), _) => t += &format!("GPU (NVML): {g}\n"),
        (None, Some(n)) => t += &format!("energy not measured: {n}\n"),
        _ => {}
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_round_is_a_permutation_and_the_orders_vary() {
        let orders: Vec<Vec<usize>> = (0..20).map(|r| order(3, 7, r)).collect();
        for o in &orders {
            let mut s = o.clone();
            s.sort();
            assert_eq!(s, [0, 1, 2]);
        }
        let distinct: std::collections::BTreeSet<_> = orders.iter().collect();
        assert!(distinct.len() >= 4, "{orders:?}");
        assert_eq!(order(3, 7, 5), order(3, 7, 5));
    }

    #[test]
    fn the_last_timing_line_counts() {
        assert_eq!(
            reported_ms("x\nwmfix-time-ms: 1.5\nwmfix-time-ms:  2.25 \ndone\n"),
            Some(2.25)
        );
        assert_eq!(reported_ms("wmfix-time-ms: soon\n"), None);
        assert_eq!(reported_ms(""), None);
    }
}

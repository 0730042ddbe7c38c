//! `wmfix test`: build, check the original program passes, then run the instrumented program
//! many times under each testing environment and report error rates (Sorensen & Donaldson, PLDI 2016, Sec. 4).

use crate::app::builder;
use crate::app::config::App;
use crate::exit_code::{self, fail};
use crate::fences::scope::FenceScope;
use crate::fences::set::FenceSet;
use crate::out_dir::{OutDir, TestFiles};
use crate::run::batch::{self, Batch, Budget};
use crate::run::coverage::{self, Coverage};
use crate::run::environment::TestEnv;
use crate::run::profile::ProfileUsed;
use crate::run::trial::{self, Outcome, RunRecord};
use crate::run::warm_check;
use crate::stats;
use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub struct Options {
    pub dir: PathBuf,
    pub out: PathBuf,
    pub envs: Vec<TestEnv>,
    pub runs: Option<usize>,
    pub minutes: Option<f64>,
    pub seed: u64,
    pub jobs: usize,
    /// GPUs to spread the runs over (see `batch::Batch::gpus`).
    pub gpus: Vec<String>,
    /// Hold a CUDA context open while the runs go (`hold`).
    pub hold: bool,
    /// Runs served by an MPS server of wmfix's own (`run::mps`).
    pub mps: bool,
    /// Runs served by warm processes (`run::warm`).
    pub warm: bool,
    /// A command each run goes through, in place of wmfix.toml's (`--launcher`).
    pub launcher: Option<String>,
    pub fences: FenceSet,
    pub scope: FenceScope,
    /// Continue the runs recorded in `out/test/` (same settings), instead of starting afresh.
    pub resume: bool,
    /// Steps a run in place of wmfix.toml's (`--steps`).
    pub steps: Option<u32>,
    /// Each run records which fence sites ran on global memory (`--coverage`).
    pub coverage: bool,
}

pub use crate::run::counts::Counts;

/// One environment in `summary.json`: its counts and the time its runs took.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Row {
    #[serde(flatten)]
    pub counts: Counts,
    pub seconds: f64,
    /// The fence sites its runs executed, and which on global memory: the union of the runs
    /// that left coverage (`run::coverage`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coverage: Option<Coverage>,
}

#[derive(Serialize, Deserialize)]
pub struct Summary {
    pub app: PathBuf,
    pub fences: FenceSet,
    pub seed: u64,
    pub jobs: usize,
    /// What a resumed test must match: the environments and runs asked for, the build.
    #[serde(default)]
    pub plan: Plan,
    pub rows: Vec<Row>,
    pub interrupted: bool,
    /// Runs taken over from an interrupted test by `--resume`.
    #[serde(default)]
    pub resumed_runs: usize,
    /// The chip profile the runs used (`run::profile`), also in `plan`.
    #[serde(default)]
    pub profile: Option<ProfileUsed>,
    /// The sanity check: the original passed natively, or else the program with every fence.
    #[serde(default)]
    pub sanity: crate::run::sanity::Sanity,
    /// Steps a run (1 in tests made before wmfix counted them).
    #[serde(default = "crate::app::config::default_steps")]
    pub steps: u32,
    /// `--warm`: the check of warm runs against cold ones, and whether the runs stayed warm.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warm_check: Option<warm_check::Agreement>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Plan {
    pub envs: Vec<String>,
    /// Runs per environment; None for a time budget (which cannot be resumed).
    pub runs: Option<usize>,
    /// Digest of the build stamp: the same sources, config, fence scope and wmfix.
    pub build: String,
    /// The chip profile the runs get.
    #[serde(default)]
    pub profile: Option<ProfileUsed>,
    /// Steps a run (absent: 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<u32>,
    /// The runs record their coverage (`--coverage`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub coverage: bool,
}

/// Runs the test; returns its summary and the folder of its records.
pub fn test_app(opts: &Options) -> Result<(Summary, PathBuf)> {
    crate::interrupt::install();
    let app = App::load(&opts.dir)?
        .with_steps(opts.steps)?
        .with_launcher(opts.launcher.clone());
    super::needs_gpu(&app, "test")?;
    let inputs = [app.root.clone()];
    let summary = |o: &OutDir| o.test().summary();
    let out = super::open_out(
        &opts.out,
        &inputs,
        opts.resume,
        summary,
        "nothing to resume",
    )?;
    let built = builder::build(&app, &out, opts.scope)?;
    opts.fences.check_ids("--fences", built.fences)?;
    eprintln!(
        "wmfix: {} ({} fences){}",
        app.root.display(),
        built.fences,
        if built.rebuilt {
            ""
        } else {
            ", build up to date"
        }
    );
    let ready = super::prepare::prepare(
        &app,
        &out,
        &built,
        &super::prepare::Request {
            warm: opts.warm,
            hold: opts.hold,
            mps: opts.mps,
            gpus: &opts.gpus,
            envs: &opts.envs,
            baseline_log: &out.baseline_log(),
            what: "test",
        },
        &mut |_| {},
    )?;
    let (warm, run_env, profile) = (ready.warm, ready.run_env, ready.profile);
    let files = out.test();
    let dir = files.dir();
    let plan = Plan {
        envs: opts.envs.iter().map(|e| e.to_string()).collect(),
        runs: match (opts.runs, opts.minutes) {
            (_, Some(_)) => None,
            (n, None) => Some(n.unwrap_or(100)),
        },
        build: crate::digest::Fnv::of(&std::fs::read(out.build_stamp())?),
        profile: Some(profile.clone()),
        steps: (app.config.steps > 1).then_some(app.config.steps),
        coverage: opts.coverage,
    };
    let previous = if opts.resume {
        previous_runs(&files, opts, &plan)?
    } else {
        fresh_dir(&out)?;
        Previous::default()
    };
    let logs = files.logs();
    let mut jsonl = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(files.runs())?;
    let mut batch = Batch {
        app: &app,
        tree: &built.instrumented,
        jobs: opts.jobs,
        gpus: &opts.gpus,
        logs: &logs,
        env: &run_env,
        warm: None,
    };
    out.remove(&out.warm_check())?;
    let (warm, warm_check) = match opts.envs.first() {
        Some(&env) => warm_check::settle(
            warm,
            &batch,
            &out.warm_check(),
            env,
            opts.seed,
            &FenceSet::All,
        )?,
        None => (warm, None),
    };
    batch.warm = warm.as_ref();
    let mut summary = Summary {
        app: app.root.clone(),
        fences: opts.fences.clone(),
        seed: opts.seed,
        jobs: opts.jobs,
        plan,
        rows: vec![],
        interrupted: false,
        resumed_runs: previous.records.len(),
        profile: Some(profile),
        sanity: ready.sanity,
        steps: app.config.steps,
        warm_check,
    };
    let mut next_id = previous.records.iter().map(|r| r.id + 1).max().unwrap_or(0);
    for (k, env) in opts.envs.iter().enumerate() {
        let seed_of = |i: usize| crate::rng::seed(opts.seed, k as u64, i);
        let done: Vec<&RunRecord> = previous
            .records
            .iter()
            .filter(|r| r.spec.env == *env)
            .collect();
        // The run indices still to do, so a resumed test runs exactly the seeds it would have.
        let todo: Option<Vec<usize>> = summary.plan.runs.map(|n| {
            let seeds: std::collections::HashSet<u64> = done.iter().map(|r| r.spec.seed).collect();
            (0..n).filter(|&i| !seeds.contains(&seed_of(i))).collect()
        });
        let budget = match (&todo, opts.minutes) {
            (Some(t), _) => Budget::Runs(t.len()),
            (None, Some(m)) => Budget::Until(Instant::now() + Duration::from_secs_f64(m * 60.0)),
            (None, None) => unreachable!("a plan without runs has minutes"),
        };
        let bar = progress(env, summary.plan.runs);
        let mut row = Row {
            counts: Counts {
                env: env.to_string(),
                ..Counts::default()
            },
            seconds: previous.seconds.get(k).copied().unwrap_or(0.0),
            coverage: coverage::union(done.iter().filter_map(|r| r.coverage.as_ref())),
        };
        for r in &done {
            row.counts.add(r.outcome);
        }
        bar.inc(row.counts.runs as u64);
        // Runs taken over from an interrupted test took no time now: not in the ETA.
        bar.reset_eta();
        summary.rows.push(row);
        let start = Instant::now();
        let earlier = summary.rows[k].seconds;
        let fences = opts.fences.clone();
        let coverage = opts.coverage;
        let spec = move |j| {
            let i = todo.as_ref().map_or(j, |t| t[j]);
            let mut spec = trial::TrialSpec::new(*env, seed_of(i), &fences);
            spec.coverage = coverage;
            spec
        };
        // Ids follow run indices, which a deadline can leave with gaps: the next environment
        // starts after the largest id given, not after the count of runs.
        let mut id_end = next_id;
        let mut on_record = |rec: RunRecord| {
            id_end = id_end.max(rec.id + 1);
            let row = summary.rows.last_mut().expect("row pushed");
            row.counts.add(rec.outcome);
            if let Some(c) = &rec.coverage {
                row.coverage = coverage::union(row.coverage.iter().chain([c]));
            }
            row.seconds = earlier + start.elapsed().as_secs_f64();
            let _ = writeln!(
                jsonl,
                "{}",
                serde_json::to_string(&rec).expect("record serialises")
            );
            let _ = write_summary(&files, &summary);
            bar.inc(1);
            bar.set_message(status(summary.rows.last().unwrap()));
            true
        };
        let done = batch::run(&batch, budget, next_id, &spec, &mut on_record)?;
        next_id = id_end.max(next_id + done);
        finish(&bar, status(summary.rows.last().unwrap()));
        if crate::interrupt::interrupted() {
            summary.interrupted = true;
            break;
        }
    }
    write_summary(&files, &summary)?;
    if let Some(w) = &warm {
        eprintln!("wmfix: {}", w.describe());
        for line in w.pace() {
            eprintln!("wmfix: warm runs on {line}");
        }
    }
    Ok((summary, dir.to_path_buf()))
}

/// What an interrupted test left: its complete records, and each environment's seconds.
#[derive(Default)]
struct Previous {
    records: Vec<RunRecord>,
    seconds: Vec<f64>,
}

/// Reads `dir` for `--resume`: the settings must match, and `runs.jsonl` is cut back to its
/// complete records (a kill can leave half a line).
fn previous_runs(files: &TestFiles, opts: &Options, plan: &Plan) -> Result<Previous> {
    let path = files.summary();
    let text = std::fs::read_to_string(&path).map_err(|e| {
        fail(
            exit_code::NO_INPUT,
            format!("{}: {e}: nothing to resume", path.display()),
        )
    })?;
    let old: Summary = serde_json::from_str(&text)
        .map_err(|e| fail(exit_code::BAD_INPUT, format!("{}: {e}", path.display())))?;
    if plan.runs.is_none() {
        return Err(fail(
            exit_code::USAGE,
            "--resume needs a number of runs (--runs), not --minutes",
        ));
    }
    if old.plan != *plan || old.seed != opts.seed || old.fences != opts.fences {
        return Err(fail(
            exit_code::BAD_INPUT,
            format!(
                "{} was made with other settings (environments, runs, seed, fences or build); run without --resume to start afresh",
                path.display()
            ),
        ));
    }
    let runs = files.runs();
    let bytes = match std::fs::read(&runs) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => vec![],
        Err(e) => {
            return Err(fail(
                exit_code::NO_INPUT,
                format!("{}: {e}", runs.display()),
            ));
        }
    };
    // Complete records only: a kill can leave half a line, which is cut off in place (the
    // records before it are never rewritten).
    let mut records: Vec<RunRecord> = Vec::new();
    let mut keep = 0;
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        let Some(body) = line.strip_suffix(b"\n") else {
            break;
        };
        let Ok(r) = serde_json::from_slice(body) else {
            break;
        };
        records.push(r);
        keep += line.len();
    }
    if keep < bytes.len() {
        std::fs::OpenOptions::new()
            .write(true)
            .open(&runs)?
            .set_len(keep as u64)?;
    }
    std::fs::create_dir_all(files.logs())?;
    let seconds = old.rows.iter().map(|r| r.seconds).collect();
    Ok(Previous { records, seconds })
}

/// The previous test's records become `test.old/`; a new `test/` starts.
fn fresh_dir(out: &OutDir) -> Result<()> {
    let dir = out.test();
    if dir.dir().exists() {
        out.remove(&out.test_old())?;
        out.rename(dir.dir(), &out.test_old())?;
    }
    std::fs::create_dir_all(dir.logs())?;
    Ok(())
}

fn write_summary(files: &TestFiles, s: &Summary) -> std::io::Result<()> {
    // Written to a temporary name first, so a reader never sees half a file.
    let path = files.summary();
    let tmp = path.with_extension("json.tmp");
    std::fs::write(
        &tmp,
        serde_json::to_string_pretty(s).expect("summary serialises") + "\n",
    )?;
    std::fs::rename(tmp, path)
}

fn progress(env: &TestEnv, runs: Option<usize>) -> ProgressBar {
    let bar = match runs {
        Some(n) => ProgressBar::new(n as u64),
        None => ProgressBar::new_spinner(),
    };
    let template = if runs.is_some() {
        "{prefix:>10} [{bar:30}] {pos}/{len} {msg}, ETA {eta}"
    } else {
        "{prefix:>10} {spinner} {pos} runs in {elapsed} {msg}"
    };
    bar.set_style(
        ProgressStyle::with_template(template)
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar.set_prefix(env.to_string());
    bar.enable_steady_tick(Duration::from_millis(250));
    bar
}

/// Leaves the bar drawn and ends its line, so that what follows (the table, the next
/// environment's bar) starts on a line of its own.
fn finish(bar: &ProgressBar, msg: String) {
    bar.finish_with_message(msg);
    if !bar.is_hidden() {
        eprintln!();
    }
}

fn status(row: &Row) -> String {
    let c = &row.counts;
    let rate = if c.runs > 0 {
        100.0 * c.errors() as f64 / c.runs as f64
    } else {
        0.0
    };
    let per_s = c.runs as f64 / row.seconds.max(1e-9);
    format!("errors {} ({rate:.1}%), {per_s:.1} runs/s", c.errors())
}

/// One line of the result table, a row and what follows from it; `--json` gives these (the
/// row's seconds last).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct TableRow {
    #[serde(flatten)]
    pub counts: Counts,
    pub errors: usize,
    /// Errors over runs, 0 to 1.
    pub error_rate: f64,
    /// The 95% Wilson interval of the error rate.
    pub ci95: (f64, f64),
    /// More than 5% of runs erred (the paper's threshold).
    pub effective: bool,
    pub runs_per_hour: f64,
    pub seconds: f64,
    /// With several steps a run: the rate a step that gives `error_rate` a run, were steps
    /// independent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_error_rate: Option<f64>,
}

/// What `wmfix test --json` prints: the table and where the records are.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct TestJson {
    pub app: PathBuf,
    pub fences: FenceSet,
    pub seed: u64,
    pub jobs: usize,
    pub interrupted: bool,
    pub resumed_runs: usize,
    /// `runs.jsonl`, `summary.json` and the logs of erring runs.
    pub records: PathBuf,
    pub rows: Vec<TableRow>,
    /// The original passed natively, or else the program with every fence.
    pub sanity: crate::run::sanity::Sanity,
    /// Steps a run.
    #[serde(default = "crate::app::config::default_steps")]
    pub steps: u32,
    /// `--warm`: the check of warm runs against cold ones (as in `summary.json`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warm_check: Option<warm_check::Agreement>,
}

impl TableRow {
    fn new(row: &Row, steps: u32) -> TableRow {
        let c = &row.counts;
        let error_rate = if c.runs > 0 {
            c.errors() as f64 / c.runs as f64
        } else {
            0.0
        };
        TableRow {
            counts: c.clone(),
            errors: c.errors(),
            error_rate,
            ci95: stats::wilson95(c.errors(), c.runs),
            effective: stats::effective(c.errors(), c.runs),
            runs_per_hour: 3600.0 * c.runs as f64 / row.seconds.max(1e-9),
            seconds: row.seconds,
            step_error_rate: (steps > 1).then(|| stats::rate_a_step(error_rate, steps)),
        }
    }
}

pub fn table_rows(s: &Summary) -> Vec<TableRow> {
    s.rows.iter().map(|r| TableRow::new(r, s.steps)).collect()
}

/// The result table (Sorensen & Donaldson, PLDI 2016, Tab. 5, for one application).
pub fn table(s: &Summary) -> String {
    let mut out = format!(
        "{:<11} {:>6} {:>6} {:>6} {:>7} {:>6} {:>7} {:>17} {:>9} {:>9}\n",
        "env",
        "runs",
        "pass",
        "fail",
        "timeout",
        "crash",
        "errors",
        "95% CI",
        "effective",
        "runs/h"
    );
    let rows = table_rows(s);
    for r in &rows {
        out += &format!(
            "{:<11} {:>6} {:>6} {:>6} {:>7} {:>6} {:>6.1}% {:>17} {:>9} {:>9.0}\n",
            r.counts.env,
            r.counts.runs,
            r.counts.pass,
            r.counts.fail,
            r.counts.timeout,
            r.counts.crash,
            100.0 * r.error_rate,
            format!("[{:.1}%, {:.1}%]", 100.0 * r.ci95.0, 100.0 * r.ci95.1),
            if r.effective { "yes" } else { "no" },
            r.runs_per_hour
        );
    }
    if s.steps > 1 {
        let each: Vec<String> = rows
            .iter()
            .filter_map(|r| {
                Some(format!(
                    "{} {:.2}%",
                    r.counts.env,
                    100.0 * r.step_error_rate?
                ))
            })
            .collect();
        out += &format!(
            "runs of {} steps; errors a step, were steps independent: {}\n",
            s.steps,
            each.join(", ")
        );
    }
    for r in &s.rows {
        if let Some(c) = &r.coverage {
            out += &c.line(&r.counts.env);
        }
    }
    out
}

/// What `wmfix test --replay ID --json` prints: the run as recorded and as run again.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ReplayJson {
    pub recorded: RunRecord,
    pub outcome: Outcome,
    /// How the replayed run ended, in words ("exit code 1", "timed out").
    pub exit: String,
    /// What it printed.
    pub output: String,
}

/// A recorded run, run again.
pub struct Replayed {
    pub record: RunRecord,
    pub outcome: Outcome,
    pub exit: crate::app::child::Exit,
    /// What it printed.
    pub output: String,
}

/// `wmfix test --replay ID`: one recorded run again, same seed, environment and fences.
pub fn replay(dir: &Path, out: &Path, id: usize, scope: FenceScope) -> Result<Replayed> {
    let app = App::load(dir)?;
    super::needs_gpu(&app, "test")?;
    let out = super::open_earlier(
        out,
        std::slice::from_ref(&app.root),
        |o| o.test().runs(),
        "run `wmfix test` first",
    )?;
    let runs = out.test().runs();
    let text = std::fs::read_to_string(&runs).map_err(|e| {
        fail(
            exit_code::NO_INPUT,
            format!("{}: {e} (run `wmfix test` first)", runs.display()),
        )
    })?;
    let rec: RunRecord = text
        .lines()
        .filter_map(|l| serde_json::from_str::<RunRecord>(l).ok())
        .find(|r| r.id == id)
        .ok_or_else(|| {
            fail(
                exit_code::BAD_INPUT,
                format!("no run {id} in {}", runs.display()),
            )
        })?;
    // The steps the test's runs had (`--steps` may have overridden wmfix.toml's).
    let steps = std::fs::read_to_string(out.test().summary())
        .ok()
        .and_then(|t| serde_json::from_str::<Summary>(&t).ok())
        .map(|s| s.steps);
    let app = app.with_steps(steps)?;
    crate::interrupt::install();
    let built = builder::build(&app, &out, scope)?;
    let log = out.test().replay_log(id);
    let mut env = rec.spec.env_vars();
    if let Some(g) = &rec.gpu {
        env.push(("CUDA_VISIBLE_DEVICES".to_string(), g.clone()));
    }
    let gpus: Vec<String> = rec.gpu.iter().cloned().collect();
    env.extend(crate::run::profile::for_runs(out.root(), &gpus)?.env());
    let Some((outcome, exit, _)) = trial::run_once(&app, &built.instrumented, &env, &log)? else {
        return Err(crate::interrupt::stopped("during the replay"));
    };
    Ok(Replayed {
        record: rec,
        outcome,
        exit,
        output: std::fs::read_to_string(&log).unwrap_or_default(),
    })
}

// ---- the command line ----

use super::{AppArgs, RunArgs, values};
use crate::cmd::values::Count;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    app: AppArgs,
    /// Testing environments: `all` (the paper's eight), or a comma-separated list of no-str-,
    /// no-str+, sys-str-, sys-str+, rand-str-, rand-str+, cache-str-, cache-str+, aim-str-,
    /// aim-str+ (sys-str aimed at the application's own addresses).
    #[arg(long, default_value = "sys-str+")]
    env: values::EnvList,
    /// Runs per environment, at least 1 (default 100 unless --minutes is given).
    #[arg(long, conflicts_with = "minutes")]
    runs: Option<Count>,
    /// Minutes per environment (a positive number), instead of a number of runs.
    #[arg(long)]
    minutes: Option<values::Minutes>,
    /// Base seed; each run gets its own seed derived from it.
    #[arg(long, default_value_t = 1, value_parser = crate::cmd::values::whole_u64)]
    seed: u64,
    #[command(flatten)]
    runs_at_once: RunArgs,
    /// Fences enabled in the instrumented program: `none` (the program as written), `all`, or
    /// ids like `0,3,7-9` (ids the program does not have are refused).
    #[arg(long, default_value = "none")]
    fences: FenceSet,
    /// Re-run one recorded run (its id in wmfix-out/test/runs.jsonl) with the same seed,
    /// environment and fences.
    #[arg(long, value_name = "RUN", value_parser = crate::cmd::values::whole_usize)]
    replay: Option<usize>,
    /// Continue the test recorded in wmfix-out/test/ (after ctrl-c, kill -9 or a crash) with
    /// the same settings: only the runs not yet recorded are run, with the seeds they would
    /// have had.
    #[arg(long, conflicts_with_all = ["replay", "minutes"])]
    resume: bool,
    /// Print one JSON document on stdout (the table's rows, where the records are); the
    /// table and messages go to stderr.
    #[arg(long)]
    json: bool,
    /// Steps a run, in place of wmfix.toml's `steps` (its `run` must say `{steps}`).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=i64::from(crate::app::config::MAX_STEPS)))]
    steps: Option<u32>,
    /// Record in each run which fence sites ran on global memory (or memory of unknown space:
    /// the runtime fences only those).
    #[arg(long)]
    coverage: bool,
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let fences = args.fences;
    if let Some(id) = args.replay {
        let r = replay(&args.app.dir, &args.app.out(), id, args.app.fence)?;
        let rec = &r.record;
        let human = format!(
            "{}wmfix: run {id} ({}, seed {}, fences {}): recorded: {}; replayed: {}\n",
            r.output,
            rec.spec.env,
            rec.spec.seed,
            rec.spec.fences,
            trial::describe(rec.outcome, rec.exit()),
            trial::describe(r.outcome, r.exit)
        );
        let doc = ReplayJson {
            recorded: rec.clone(),
            outcome: r.outcome,
            exit: r.exit.to_string(),
            output: r.output.clone(),
        };
        super::report(args.json, &doc, &human);
        return Ok(if r.outcome.is_error() {
            exit_code::ERRORS_SEEN
        } else {
            exit_code::OK
        });
    }
    let opts = crate::cmd::test::Options {
        envs: args.env.0,
        out: args.app.out(),
        dir: args.app.dir,
        runs: args.runs.map(Count::get),
        minutes: args.minutes.map(|m| m.0),
        seed: args.seed,
        jobs: args.runs_at_once.jobs.get(),
        gpus: args.runs_at_once.gpus()?,
        hold: !args.runs_at_once.no_hold,
        mps: args.runs_at_once.mps,
        warm: args.runs_at_once.warm,
        launcher: args.runs_at_once.launcher.clone(),
        fences,
        scope: args.app.fence,
        resume: args.resume,
        steps: args.steps,
        coverage: args.coverage,
    };
    let (summary, records) = test_app(&opts)?;
    let sanity = summary
        .sanity
        .describe("test")
        .map(|s| format!("sanity: {s}\n"))
        .unwrap_or_default();
    let keep = crate::app::config::App::load(&summary.app)?
        .config
        .keep_block_order;
    let human = format!(
        "{}{sanity}{}wmfix: fences {}; records in {}\n",
        table(&summary),
        block_order_note(&summary.rows, keep),
        summary.fences,
        records.display()
    );
    let doc = TestJson {
        app: summary.app.clone(),
        fences: summary.fences.clone(),
        seed: summary.seed,
        jobs: summary.jobs,
        interrupted: summary.interrupted,
        resumed_runs: summary.resumed_runs,
        records,
        rows: table_rows(&summary),
        sanity: summary.sanity.clone(),
        steps: summary.steps,
        warm_check: summary.warm_check.clone(),
    };
    super::report(args.json, &doc, &human);
    if summary.interrupted {
        return Ok(crate::interrupt::code(true));
    }
    let errors: usize = summary.rows.iter().map(|r| r.counts.errors()).sum();
    Ok(if errors > 0 {
        exit_code::ERRORS_SEEN
    } else {
        exit_code::OK
    })
}

#[cfg(test)]
#[path = "test_tests.rs"]
mod tests;

/// A hint when runs time out in `+` environments, whose random block ids hang a program that
/// waits for blocks of lower `blockIdx` (CUB's single-pass scans and radix sorts).
fn block_order_note(rows: &[Row], keep: bool) -> String {
    let hung: Vec<String> = rows
        .iter()
        .filter(|r| r.counts.env.ends_with('+') && r.counts.timeout > 0)
        .map(|r| {
            format!(
                "{} of {} {} runs",
                r.counts.timeout, r.counts.runs, r.counts.env
            )
        })
        .collect();
    if keep || hung.is_empty() {
        return String::new();
    }
    format!(
        "note: {} timed out. A program that waits for blocks of lower blockIdx (CUB's scans and \
         sorts) hangs when `+` environments randomise block ids: if the `-` ones do not time \
         out, set `keep_block_order = true` in wmfix.toml.\n",
        hung.join(", ")
    )
}

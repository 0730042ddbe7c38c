//! `wmfix reduce`: empirical fence insertion on the real program, journaled so it resumes,
//! ending in `fences.patch` and `reduce.json` under `out/reduce/`.

use crate::app::builder;
use crate::app::config::App;
use crate::exit_code::{self, fail};
use crate::fences::id::FenceId;
use crate::fences::record::FenceList;
use crate::fences::scope::FenceScope;
use crate::fences::set::FenceSet;
use crate::out_dir::OutDir;
use crate::reduce::algorithm::{self, Progress, Reduced, Settings};
use crate::reduce::by_race::{self, RaceRuns, RaceStart};
use crate::reduce::journal::Journaled;
use crate::reduce::oracle::Program;
use crate::reduce::patch;
use crate::reduce::record::{Dropped, KeptFence, Laps, Report};
use crate::reduce::summary::{hms, summary};
use crate::reduce::why;
use crate::run::environment::TestEnv;
use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub struct Options {
    pub dir: PathBuf,
    pub out: PathBuf,
    pub env: TestEnv,
    pub settings: Settings,
    pub jobs: usize,
    pub gpus: Vec<String>,
    /// Hold a CUDA context open while the runs go (`hold`).
    pub hold: bool,
    /// Runs served by an MPS server of wmfix's own (`run::mps`).
    pub mps: bool,
    /// Runs served by warm processes (`run::warm`).
    pub warm: bool,
    /// A command each run goes through, in place of wmfix.toml's (`--launcher`).
    pub launcher: Option<String>,
    pub seed: u64,
    pub resume: bool,
    /// A journal kept from an earlier run of this reduction (another machine's, say), taken
    /// into the output folder and continued.
    pub resume_from: Option<PathBuf>,
    pub scope: FenceScope,
    /// Steps a run in place of wmfix.toml's (`--steps`); `settings.rare_rate` is a rate a step.
    pub steps: Option<u32>,
    /// `settings.iterations` is the default I of one-step runs (no `--iterations`): with
    /// several steps a run it becomes the runs that hold as many steps.
    pub default_iterations: bool,
    /// `--oracle race`: the first set from detection runs (`reduce::by_race`).
    pub race: Option<RaceRuns>,
}

pub fn reduce_app(opts: &Options) -> Result<Report> {
    crate::interrupt::install();
    let started = Instant::now();
    let app = App::load(&opts.dir)?
        .with_steps(opts.steps)?
        .with_launcher(opts.launcher.clone());
    super::needs_gpu(&app, "reduce")?;
    let steps = app.config.steps;
    // The algorithm counts runs: --rare-rate, a rate a step, becomes the rate of a run.
    let mut settings = opts.settings.clone();
    settings.rare_rate = settings
        .rare_rate
        .map(|r| crate::stats::rate_a_run(r, steps));
    if opts.default_iterations {
        // I (the check with every fence, the stability check's least runs) counts steps.
        settings.iterations = settings.iterations.div_ceil(steps as usize);
    }
    let inputs = [app.root.clone()];
    let journal = |o: &OutDir| o.reduce().journal();
    let out = match &opts.resume_from {
        Some(kept) => adopt_journal(&opts.out, &inputs, kept)?,
        None => super::open_out(
            &opts.out,
            &inputs,
            opts.resume,
            journal,
            "nothing to resume",
        )?,
    };
    let mut laps = Laps::start();
    let built = builder::build(&app, &out, opts.scope)?;
    laps.lap("build");
    let files = out.reduce();
    std::fs::create_dir_all(files.logs())?;
    let resume = opts.resume || opts.resume_from.is_some();
    // The detection variant builds on the CPU while the checks of the program use the GPU.
    let (ready, race_build) = std::thread::scope(|s| {
        let race_build = opts
            .race
            .is_some()
            .then(|| s.spawn(|| by_race::build(&app, &out, resume)));
        let request = super::prepare::Request {
            warm: opts.warm,
            hold: opts.hold,
            mps: opts.mps,
            gpus: &opts.gpus,
            envs: &[opts.env],
            baseline_log: &files.baseline_log(),
            what: "reduction",
        };
        let ready = super::prepare::prepare(&app, &out, &built, &request, &mut |p| laps.lap(p));
        (ready, race_build.map(|b| b.join()))
    });
    let ready = ready?;
    let (warm, run_env) = (ready.warm, ready.run_env);
    if let Some(b) = race_build {
        b.unwrap_or_else(|p| std::panic::resume_unwind(p))?;
    }
    let records = FenceList::load(&out.fences_json())?.fences;
    let all = FenceId::all(records.len());
    let structure = structure(&records);
    let race = race_start(&app, &out, &built.original, opts, &all, &structure, resume)?;
    laps.lap("race detection");
    // The race oracle's start set, where it passes, runs the warm check for less than every
    // fence.
    let passing = match &race {
        Some(r) if !r.fences.is_empty() => FenceSet::Ids(r.fences.clone()),
        _ => FenceSet::All,
    };
    let (warm, warm_check) = check_warm(
        warm,
        &app,
        &out,
        &built.instrumented,
        &run_env,
        opts,
        &passing,
    )?;
    laps.lap("warm check");
    let stamp = std::fs::read_to_string(out.build_stamp())?;
    let mut header = serde_json::json!({
        // The budget may change between sessions: not part of what must match.
        "wmfix_reduce": 1, "split": settings.split, "iterations": settings.iterations, "checks": settings.checks,
        "stability": settings.stability, "cache": settings.cache, "env": opts.env, "seed": opts.seed,
        "fences": all.len(), "build": stamp.trim(), "profile": ready.profile, "steps": steps,
    });
    if let Some(r) = &race {
        header["oracle"] = "race".into();
        header["race_start"] = serde_json::to_value(&r.fences)?;
        if let Some(model) = opts.race.and_then(RaceRuns::model_in_journal) {
            header["race_model"] = model.into();
        }
    }
    let header = serde_json::to_string(&header)?;
    let mut program = Program {
        app: &app,
        tree: built.instrumented.clone(),
        logs: files.logs(),
        env: opts.env,
        jobs: opts.jobs,
        gpus: opts.gpus.clone(),
        seed: opts.seed,
        run_env,
        every_fence: all.difference(&structure.unreachable).copied().collect(),
        warm: warm.as_ref(),
    };
    let mut journal = Journaled::open(&mut program, &files.journal(), &header, resume)?;
    let bar = progress_bar();
    let budget = settings.budget_seconds;
    let mut last: Option<Progress> = None;
    let mut show = |p: &Progress| {
        last = Some(p.clone());
        bar.set_message(format!(
            "{}: {} fences, I={}, {} spent, {} left",
            phase_name(p.phase),
            p.fences,
            p.iterations,
            hms(p.seconds),
            hms((budget - p.seconds).max(0.0))
        ));
    };
    let start = race.as_ref().map(|r| algorithm::Start {
        fences: r.fences.clone(),
        proven: r.proven(),
    });
    let result = algorithm::reduce_from(
        &mut journal,
        &all,
        &structure,
        settings.clone(),
        start,
        &mut show,
    );
    bar.finish_and_clear();
    laps.lap("runs");
    if let Some(w) = &warm {
        eprintln!("wmfix: {}", w.describe());
        for line in w.pace() {
            eprintln!("wmfix: warm runs on {line}");
        }
    }
    let replayed = journal.replayed;
    // Interrupted, the best set so far is still written, marked as such.
    let interrupted = result.is_err() && crate::interrupt::interrupted();
    let result = match (result, &last) {
        (Err(_), Some(p)) if interrupted => interrupted_result(p),
        (r, _) => r.map_err(|e| match e.downcast_ref::<algorithm::ReduceError>() {
            Some(r) => fail(exit_code::ERRORS_SEEN, r.to_string()),
            None => e,
        })?,
    };
    let hardening = patch::harden_placed(
        &app,
        out.root(),
        &result.fences,
        &result.after_loop_only,
        opts.scope,
    )?;
    let patch_path = files.patch();
    let mut patch_text = Vec::new();
    if !result.complete {
        patch_text.extend(
            format!(
                "wmfix reduce: INCOMPLETE, not checked for stability: {}\n\n",
                result.note
            )
            .bytes(),
        );
    }
    let model = model_completion(&app, &records, &result.fences);
    let mut kept: Vec<KeptFence> = result
        .fences
        .iter()
        .map(|id| KeptFence::placed(&records[id.0], result.after_loop_only.contains(id)))
        .collect();
    why::prove(&mut kept, &result, race.as_ref(), &model, &records);
    patch_text.extend(why::patch_head(&kept).bytes());
    patch_text.extend(patch::unified_diff(&hardening.files));
    std::fs::write(&patch_path, patch_text)?;
    write_model_patch(
        &app,
        out.root(),
        &files.model_patch(),
        &hardening.files,
        &result,
        &model,
        opts.scope,
    )?;
    let report = Report {
        app: app.root.clone(),
        env: opts.env,
        seed: opts.seed,
        settings,
        steps,
        scope: opts.scope,
        initial_fences: all.len(),
        kept,
        disagreement: why::disagreement(&out, &result, race.as_ref()),
        unreachable: structure
            .unreachable
            .iter()
            .map(|id| Dropped::unreachable(&records[id.0]))
            .collect(),
        off_global: result
            .off_global
            .iter()
            .map(|id| Dropped::off_global(&records[id.0]))
            .collect(),
        result,
        replayed_checks: replayed,
        wall_seconds: started.elapsed().as_secs_f64(),
        phases: laps.finish("patch"),
        patch: patch_path,
        sources: hardening.sources,
        library_fences: hardening.library,
        unplaced_fences: hardening.unplaced,
        interrupted,
        profile: Some(ready.profile),
        sanity: ready.sanity,
        model,
        race,
        warm_check,
    };
    report.save(&out)?;
    Ok(report)
}

/// `--warm`: the pool the checks get after the check of warm runs against cold ones (none when
/// they disagree), and that check (`run::warm_check`).
fn check_warm(
    warm: Option<crate::run::warm::Pool>,
    app: &App,
    out: &OutDir,
    tree: &Path,
    run_env: &[(String, String)],
    opts: &Options,
    passing: &FenceSet,
) -> Result<(
    Option<crate::run::warm::Pool>,
    Option<crate::run::warm_check::Agreement>,
)> {
    let logs = out.warm_check();
    let batch = crate::run::batch::Batch {
        app,
        tree,
        jobs: opts.jobs,
        gpus: &opts.gpus,
        logs: &logs,
        env: run_env,
        warm: None,
    };
    out.remove(&logs)?;
    crate::run::warm_check::settle(warm, &batch, &logs, opts.env, opts.seed, passing)
}

/// `--oracle race`: the detection runs' start set, said on stderr.
fn race_start(
    app: &App,
    out: &OutDir,
    original: &Path,
    opts: &Options,
    all: &crate::fences::id::Ids,
    structure: &algorithm::Structure,
    resume: bool,
) -> Result<Option<RaceStart>> {
    let Some(how) = opts.race else {
        return Ok(None);
    };
    let reachable = all.difference(&structure.unreachable).copied().collect();
    let detect = how.detect_options(opts.scope.into());
    let found = by_race::start(app, out, original, how, &detect, &reachable, resume)?;
    eprintln!("wmfix: {}", why::race_line(&found));
    Ok(Some(found))
}

/// The fences the PTX memory model requires beside `kept` (reduce/model.rs).
fn model_completion(
    app: &App,
    records: &[crate::fences::record::FenceRecord],
    kept: &crate::fences::id::Ids,
) -> crate::reduce::model::Completed {
    let sources: std::collections::BTreeMap<PathBuf, String> = records
        .iter()
        .filter_map(|r| {
            let text = std::fs::read_to_string(app.root.join(&r.file)).ok()?;
            Some((r.file.clone(), text))
        })
        .collect();
    let program = crate::reduce::model::Program {
        records,
        sources: &sources,
    };
    crate::reduce::model::complete(&program, kept)
}

/// `--resume-from KEPT`: the output folder (made if new) takes the kept journal, so that a
/// reduction cut short on one machine goes on on a fresh one. A folder with a journal of its
/// own that differs is refused: that one is continued with `--resume`.
fn adopt_journal(out: &Path, inputs: &[PathBuf], kept: &Path) -> Result<OutDir> {
    let text = std::fs::read_to_string(kept).map_err(|e| {
        fail(
            exit_code::NO_INPUT,
            format!("nothing to resume: {}: {e}", kept.display()),
        )
    })?;
    let o = OutDir::open(out, inputs)?;
    let own = o.reduce().journal();
    match std::fs::read_to_string(&own) {
        Ok(t) if t != text => Err(fail(
            exit_code::USAGE,
            format!(
                "{} holds a journal of its own: continue it with --resume, or give --out a new folder",
                own.display()
            ),
        )),
        Ok(_) => Ok(o),
        Err(_) => {
            std::fs::create_dir_all(o.reduce().dir())?;
            std::fs::write(&own, text)?;
            Ok(o)
        }
    }
}

/// `fences-model.patch`: from the sources with the kept fences to those with the model's too.
fn write_model_patch(
    app: &App,
    out: &std::path::Path,
    path: &std::path::Path,
    hardened: &[patch::Hardened],
    result: &Reduced,
    model: &crate::reduce::model::Completed,
    scope: FenceScope,
) -> Result<()> {
    let mut text = b"wmfix reduce: fences required by the PTX memory model, not observed on this GPU; apply after fences.patch (or `wmfix apply --model`)\n\n".to_vec();
    if !model.fences.is_empty() {
        let both: crate::fences::id::Ids = result.fences.union(&model.ids()).copied().collect();
        // An acquire is needed once the spin ends: the model's fences go after the loop only,
        // as do the kept loop fences the reduction placed there.
        let after_loop = model
            .ids()
            .union(&result.after_loop_only)
            .copied()
            .collect();
        let completed = patch::harden_placed(app, out, &both, &after_loop, scope)?;
        let from_kept: Vec<patch::Hardened> = completed
            .files
            .into_iter()
            .map(|c| {
                let original = hardened
                    .iter()
                    .find(|h| h.rel == c.rel)
                    .map_or(c.original.clone(), |h| h.hardened.clone());
                patch::Hardened { original, ..c }
            })
            .collect();
        // Bytes, each file in its own encoding (a Latin-1 file's context must match its bytes).
        text.extend(patch::unified_diff(&from_kept));
    }
    std::fs::write(path, text)?;
    Ok(())
}

/// What `fences.json` says beyond the ids: the fences of each kernel and device function (by
/// file and function name), the loop-condition fences, the unreachable ones and those in library
/// headers.
fn structure(records: &[crate::fences::record::FenceRecord]) -> algorithm::Structure {
    let mut by: std::collections::BTreeMap<(PathBuf, &str), crate::fences::id::Ids> =
        Default::default();
    for r in records {
        by.entry((r.file.clone(), r.function.as_str()))
            .or_default()
            .insert(r.id);
    }
    let ids = |keep: fn(&crate::fences::record::FenceRecord) -> bool| {
        records.iter().filter(|r| keep(r)).map(|r| r.id).collect()
    };
    algorithm::Structure {
        groups: by.into_values().collect(),
        loop_fences: ids(|r| r.placements.iter().any(|p| p.loop_body)),
        unreachable: ids(|r| r.unreachable),
        library: ids(|r| r.library),
    }
}

/// What an interrupted reduction reports: the set it held before the request cut short.
fn interrupted_result(p: &Progress) -> Reduced {
    Reduced {
        fences: p.held.clone(),
        complete: false,
        // Before the check with every fence and the unfenced runs ended, nothing was decided.
        after_loop_only: Default::default(),
        added_back: Default::default(),
        off_global: p.off_global.clone(),
        every_fence_checked: p.every_fence_checked,
        undecided: matches!(
            p.phase,
            algorithm::Phase::Sanity | algorithm::Phase::Calibrate
        ),
        check_miss_probability: None,
        iterations: p.iterations,
        checks: p.checks,
        cached_checks: p.cached_checks,
        runs: p.runs,
        seconds: p.seconds,
        unfenced: None,
        assumed_rate: None,
        stability_runs: 0,
        miss_probability: None,
        stability_rate: None,
        proven: Default::default(),
        erred_without: Default::default(),
        note: "interrupted: these fences passed their last check only; `wmfix reduce --resume` continues the reduction".into(),
    }
}

fn phase_name(p: algorithm::Phase) -> &'static str {
    use algorithm::Phase::*;
    match p {
        Sanity => "checking all fences",
        Calibrate => "measuring the unfenced error rate",
        Binary => "binary reduction",
        Linear => "linear reduction",
        Stability => "stability check",
        Placement => "loop fences after the loop alone",
        AddBack => "finding the rarely needed fence",
    }
}

fn progress_bar() -> ProgressBar {
    let bar = ProgressBar::new_spinner();
    bar.set_style(ProgressStyle::with_template("{spinner} reduce {msg}").expect("valid template"));
    bar.enable_steady_tick(Duration::from_millis(250));
    bar
}

// ---- the command line ----

use super::{AppArgs, RunArgs, values};
use crate::cmd::values::Count;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    app: AppArgs,
    /// Time budget in hours (a positive number); the best result so far is reported when it
    /// runs out.
    #[arg(long, default_value = "24")]
    hours: values::Hours,
    /// Testing environment for the checks.
    #[arg(long, default_value = "sys-str+")]
    env: values::Env,
    /// How many runs a check gets: `adaptive` sizes them from the measured error rates so a
    /// check misses a needed fence with probability at most 1 - --confidence; `paper` is
    /// --iterations runs (doubled, with --stable-minutes, when the stability check fails).
    #[arg(long, value_enum, default_value = "adaptive")]
    checks: CheckSchedule,
    /// Runs per check (I, at least 1) of the paper's schedule (given alone, it selects that
    /// schedule), of the check with every fence, and the least of the stability check
    /// [default: 32; with N steps a run, 32/N rounded up: as many steps].
    #[arg(long)]
    iterations: Option<Count>,
    /// Stability check of the paper: this many minutes without error, and a restart from
    /// every fence with doubled checks when it fails. Without it, the statistical criterion of
    /// --confidence is used, and when that fails the needed fence is searched for among the
    /// dropped ones (add-back).
    #[arg(long)]
    stable_minutes: Option<values::Minutes>,
    /// Confidence that a missing needed fence would have shown in the stability check
    /// (between 0 and 1).
    #[arg(long, default_value = "0.99")]
    confidence: values::Probability,
    /// The statistical stability check also catches, with --confidence, a set that errs in
    /// this share of runs, however often the program without fences errs (459 runs at 0.01
    /// and 0.99): a set lacking one needed fence may err rarely. With several steps a run, a
    /// share of steps (46 ten-step runs at 0.01), as if steps erred independently
    /// [default: 0.01; with --oracle race 0.05 (90 runs): the detector, not the stress runs,
    /// finds the fences there, and the check confirms them].
    #[arg(long)]
    rare_rate: Option<values::Probability>,
    /// Steps a run, in place of wmfix.toml's `steps` (its `run` must say `{steps}`).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=i64::from(crate::app::config::MAX_STEPS)))]
    steps: Option<u32>,
    /// How binary reduction splits the fences.
    #[arg(long, value_enum, default_value_t = crate::reduce::algorithm::Split::Structure)]
    split: crate::reduce::algorithm::Split,
    /// Do not reuse the answers of earlier checks.
    #[arg(long)]
    no_cache: bool,
    #[command(flatten)]
    runs_at_once: RunArgs,
    /// Base seed of the runs.
    #[arg(long, default_value_t = 1, value_parser = crate::cmd::values::whole_u64)]
    seed: u64,
    /// Continue the reduction recorded in wmfix-out/reduce/journal.jsonl.
    #[arg(long)]
    resume: bool,
    /// Continue the reduction recorded in FILE, a journal kept from an earlier output folder of
    /// the same path (on another machine, say): it is copied into the output folder, which must
    /// hold no other journal.
    #[arg(long, value_name = "FILE", conflicts_with = "resume")]
    resume_from: Option<PathBuf>,
    /// What decides the first reduced set: `stress` reduces from every fence by stress runs
    /// (the paper's method); `race` takes the least set that orders every race a fence can
    /// order in detection runs (`wmfix race`), with the fences store buffering needs, then
    /// confirms it with the stress stability check, which stands for the check with every
    /// fence (that check and add-back only if it fails).
    #[arg(long, value_enum, default_value = "stress")]
    oracle: OracleKind,
    /// `--oracle race`: detection runs (each its own seed).
    #[arg(long, default_value = "1")]
    race_runs: Count,
    /// `--oracle race`: trace records a detection run may hold (40 bytes each, device memory)
    /// [default: as many as `--race-trace-memory` allows].
    #[arg(long, value_parser = crate::cmd::values::whole_u64)]
    race_events: Option<u64>,
    /// `--oracle race`: the share of the device's free memory a detection run's trace takes,
    /// unless `--race-events` is given.
    #[arg(long, default_value = "0.25")]
    race_trace_memory: crate::cmd::values::TraceShare,
    /// `--oracle race`: follow PTX strictly, as `race --strict` does (a reader's barrier after
    /// its strong read does not complete the acquire: the reader side needs a fence).
    #[arg(long)]
    strict: bool,
    /// `--oracle race`: the memory model races are found under, as `race --model` takes it.
    #[arg(long, value_enum, default_value = "ptx")]
    model: crate::race::detect::Model,
    /// Print the report (what reduce.json holds) as one JSON document on stdout; the summary
    /// goes to stderr.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    use crate::reduce::algorithm::{Settings, Stability};
    let stability = match args.stable_minutes {
        Some(m) => Stability::Minutes(m.0),
        None => Stability::Statistical {
            confidence: args.confidence.0,
        },
    };
    let checks = match (args.checks, args.iterations) {
        (CheckSchedule::Paper, _) | (_, Some(_)) => crate::reduce::checks::Checks::Fixed,
        (CheckSchedule::Adaptive, None) => crate::reduce::checks::Checks::Adaptive {
            confidence: args.confidence.0,
        },
    };
    let opts = crate::cmd::reduce::Options {
        env: args.env.0,
        settings: Settings {
            split: args.split,
            iterations: args.iterations.map_or(32, Count::get),
            checks,
            stability,
            rare_rate: Some(args.rare_rate.map_or(
                match args.oracle {
                    OracleKind::Stress => 0.01,
                    OracleKind::Race => 0.05,
                },
                |r| r.0,
            )),
            cache: !args.no_cache,
            budget_seconds: args.hours.0 * 3600.0,
        },
        out: args.app.out(),
        dir: args.app.dir,
        jobs: args.runs_at_once.jobs.get(),
        gpus: args.runs_at_once.gpus()?,
        hold: !args.runs_at_once.no_hold,
        mps: args.runs_at_once.mps,
        warm: args.runs_at_once.warm,
        launcher: args.runs_at_once.launcher.clone(),
        seed: args.seed,
        resume: args.resume,
        resume_from: args.resume_from,
        scope: args.app.fence,
        steps: args.steps,
        default_iterations: args.iterations.is_none(),
        race: matches!(args.oracle, OracleKind::Race).then_some(RaceRuns {
            runs: args.race_runs.get(),
            trace: crate::race::runs::TraceSize::of(args.race_events, args.race_trace_memory.0),
            seed: args.seed,
            strict: args.strict,
            model: args.model,
        }),
    };
    let report = reduce_app(&opts)?;
    super::report(args.json, &report, &summary(&report, !args.json));
    Ok(match crate::interrupt::code(report.interrupted) {
        exit_code::OK if report.result.undecided => exit_code::UNDECIDED,
        code => code,
    })
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum OracleKind {
    Stress,
    Race,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum CheckSchedule {
    Adaptive,
    Paper,
}

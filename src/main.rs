use clap::{Parser, Subcommand};
use std::path::PathBuf;
use wmfix::exit_code;
use wmfix::insert::{self, OnParseError};
use wmfix::instrument::FenceScope;

/// Exposes weak-memory bugs in CUDA applications and hardens them with the fewest fences.
#[derive(Parser)]
#[command(version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Write an instrumented copy of CUDA sources: a numbered fence after every global memory
    /// access in device code, remapped thread ids, stress dispatch at kernel entry, and launch
    /// sites that ask the runtime for the grid. The sources themselves are never modified.
    Insert(InsertArgs),
    /// Write a commented wmfix.toml template into the current folder.
    Init,
    /// Instrument and build the application of DIR/wmfix.toml, and build the original for the
    /// baseline, into the output directory. Nothing is rebuilt when nothing changed.
    Build(AppArgs),
    /// Run the instrumented application many times under testing environments and report
    /// error rates. Exit status 2 when any run erred.
    Test(TestArgs),
    /// Empirical fence insertion: find the fences the application needs under stress, and
    /// write them as a patch (wmfix-out/reduce/fences.patch) for review.
    Reduce(ReduceArgs),
    /// Apply the last reduction's patch to the application's sources (only on request).
    Apply(ApplyArgs),
    /// Derive a chip's stress profile (critical patch size, access sequence, spread) from
    /// MP/LB/SB litmus counts (paper 000, Sec. 3). Running the micro-benchmarks on a GPU is not
    /// implemented yet: --analyse reads raw counts measured elsewhere and writes profile.toml,
    /// analysis.json and SVG plots.
    Tune(TuneArgs),
}

#[derive(clap::Args)]
struct TuneArgs {
    /// Raw counts (JSON) to analyse. Required for now: running the micro-benchmarks on a GPU is
    /// not implemented yet.
    #[arg(long, value_name = "FILE")]
    analyse: PathBuf,
    /// Output directory: profile.toml, analysis.json, patches.svg, spread.svg.
    #[arg(long, short, default_value = "wmfix-out/tune")]
    out: PathBuf,
    /// Noise threshold for patch finding, instead of the file's.
    #[arg(long)]
    epsilon: Option<u64>,
}

#[derive(clap::Args)]
struct ReduceArgs {
    #[command(flatten)]
    app: AppArgs,
    /// Time budget in hours; the best result so far is reported when it runs out.
    #[arg(long, default_value_t = 24.0)]
    hours: f64,
    /// Testing environment for the checks.
    #[arg(long, default_value = "sys-str+")]
    env: String,
    /// Runs per check (I); doubled when the stability check fails.
    #[arg(long, default_value_t = 32)]
    iterations: usize,
    /// Stability check of the paper: this many minutes without error. Without it, the
    /// statistical criterion of --confidence is used.
    #[arg(long)]
    stable_minutes: Option<f64>,
    /// Confidence that a missing needed fence would have shown in the stability check.
    #[arg(long, default_value_t = 0.99)]
    confidence: f64,
    /// How binary reduction splits the fences.
    #[arg(long, value_enum, default_value_t = wmfix::reduce::Split::Halves)]
    split: wmfix::reduce::Split,
    /// Do not reuse the answers of earlier checks.
    #[arg(long)]
    no_cache: bool,
    /// Runs at a time. The default, 4, doubled runs per hour on an H200 (cbe-dot: 10,561 with
    /// one job, 20,537 with four, 19,608 with eight) with the same error rate.
    #[arg(long, short, default_value_t = 4)]
    jobs: usize,
    /// Base seed of the runs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Continue the reduction recorded in wmfix-out/reduce/journal.jsonl.
    #[arg(long)]
    resume: bool,
}

#[derive(clap::Args)]
struct ApplyArgs {
    /// The application's folder, holding wmfix.toml.
    #[arg(default_value = ".")]
    dir: PathBuf,
    /// Output directory of the reduction.
    #[arg(long, short, default_value = "wmfix-out")]
    out: PathBuf,
}

#[derive(clap::Args)]
struct AppArgs {
    /// The application's folder, holding wmfix.toml.
    #[arg(default_value = ".")]
    dir: PathBuf,
    /// Output directory.
    #[arg(long, short, default_value = "wmfix-out")]
    out: PathBuf,
    /// Scope of the inserted fences.
    #[arg(long, value_enum, default_value_t = FenceScope::Device)]
    fence: FenceScope,
}

#[derive(clap::Args)]
struct TestArgs {
    #[command(flatten)]
    app: AppArgs,
    /// Testing environments: `all`, or a comma-separated list of no-str-, no-str+, sys-str-,
    /// sys-str+, rand-str-, rand-str+, cache-str-, cache-str+.
    #[arg(long, default_value = "sys-str+")]
    env: String,
    /// Runs per environment (default 100 unless --minutes is given).
    #[arg(long, conflicts_with = "minutes")]
    runs: Option<usize>,
    /// Minutes per environment, instead of a number of runs.
    #[arg(long)]
    minutes: Option<f64>,
    /// Base seed; each run gets its own seed derived from it.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Runs at a time. The default, 4, doubled runs per hour on an H200 (cbe-dot: 10,561 with
    /// one job, 20,537 with four, 19,608 with eight) with the same error rate.
    #[arg(long, short, default_value_t = 4)]
    jobs: usize,
    /// Fences enabled in the instrumented program: `none` (the program as written), `all`, or
    /// ids like `0,3,7-9`.
    #[arg(long, default_value = "none")]
    fences: String,
    /// Re-run one recorded run (its id in wmfix-out/test/runs.jsonl) with the same seed,
    /// environment and fences.
    #[arg(long, value_name = "RUN")]
    replay: Option<usize>,
}

#[derive(clap::Args)]
struct InsertArgs {
    /// Files and folders to instrument (`.cu`, `.cuh`, and headers holding device code).
    #[arg(required_unless_present = "dump_tree")]
    paths: Vec<PathBuf>,
    /// Output directory: `tree/` (the instrumented mirror), `runtime/`, `fences.json`.
    #[arg(long, short, default_value = "wmfix-out")]
    out: PathBuf,
    /// Scope of the inserted fences.
    #[arg(long, value_enum, default_value_t = FenceScope::Device)]
    fence: FenceScope,
    /// What to do with a file that does not parse cleanly.
    #[arg(long, value_enum, default_value_t = OnParseError::Warn)]
    on_parse_error: OnParseError,
    /// Print the parse tree of FILE and exit (for debugging queries).
    #[arg(long, value_name = "FILE", conflicts_with = "paths")]
    dump_tree: Option<PathBuf>,
    /// Print how many bytes of CUDA source were instrumented, and how fast.
    #[arg(long)]
    stats: bool,
}

fn main() {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                exit_code::USAGE
            } else {
                exit_code::OK
            };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    let result = match cli.command {
        Command::Insert(args) => run_insert(args),
        Command::Init => run_init(),
        Command::Build(args) => run_build(args),
        Command::Test(args) => run_test(args),
        Command::Reduce(args) => run_reduce(args),
        Command::Apply(args) => run_apply(args),
        Command::Tune(args) => run_tune(args),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("wmfix: error: {e:#}");
            std::process::exit(exit_code::code_of(&e));
        }
    }
}

fn usage(message: String) -> anyhow::Error {
    exit_code::fail(exit_code::USAGE, message)
}

fn run_reduce(args: ReduceArgs) -> anyhow::Result<i32> {
    use wmfix::reduce::{Settings, Stability};
    if !(args.confidence > 0.0 && args.confidence < 1.0) {
        return Err(usage(format!(
            "--confidence must be between 0 and 1, not {}",
            args.confidence
        )));
    }
    let stability = match args.stable_minutes {
        Some(m) => Stability::Minutes(m),
        None => Stability::Statistical {
            confidence: args.confidence,
        },
    };
    let opts = wmfix::reducing::Options {
        env: wmfix::environment::TestEnv::parse(&args.env).map_err(usage)?,
        settings: Settings {
            split: args.split,
            iterations: args.iterations.max(1),
            stability,
            cache: !args.no_cache,
            budget_seconds: args.hours * 3600.0,
        },
        dir: args.app.dir,
        out: args.app.out,
        jobs: args.jobs.max(1),
        seed: args.seed,
        resume: args.resume,
        scope: args.app.fence,
    };
    let report = wmfix::reducing::run(&opts)?;
    print!("{}", wmfix::reducing::summary(&report));
    Ok(exit_code::OK)
}

fn run_tune(args: TuneArgs) -> anyhow::Result<i32> {
    let done = wmfix::tune_analysis::run(&wmfix::tune_analysis::Options {
        raw: args.analyse,
        out: args.out,
        epsilon: args.epsilon,
    })?;
    print!("{}", done.report);
    println!(
        "wmfix: profile in {}; analysis and plots beside it",
        done.written[0].display()
    );
    Ok(exit_code::OK)
}

fn run_apply(args: ApplyArgs) -> anyhow::Result<i32> {
    let app = wmfix::config::App::load(&args.dir)?;
    let out = args.out.canonicalize().map_err(|e| {
        exit_code::fail(exit_code::NO_INPUT, format!("{}: {e}", args.out.display()))
    })?;
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(wmfix::reducing::reduce_dir(&out).join("reduce.json")).map_err(
            |e| {
                exit_code::fail(
                    exit_code::NO_INPUT,
                    format!("no reduction to apply ({e}); run `wmfix reduce` first"),
                )
            },
        )?,
    )?;
    let kept: wmfix::oracle::Fences = report["result"]["fences"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_u64())
                .map(|v| v as usize)
                .collect()
        })
        .unwrap_or_default();
    let scope: FenceScope = serde_json::from_value(report["scope"].clone())?;
    let recorded: wmfix::patch::SourceDigests = serde_json::from_value(report["sources"].clone())?;
    let (files, now) = wmfix::patch::harden(&app, &out, &kept, scope)?;
    let n = wmfix::patch::apply(&app, &files, &now, &recorded)?;
    println!(
        "wmfix: added {} fences to {n} files in {}",
        kept.len(),
        app.root.display()
    );
    Ok(exit_code::OK)
}

fn run_init() -> anyhow::Result<i32> {
    let path = std::path::Path::new(wmfix::config::FILE_NAME);
    if path.exists() {
        return Err(exit_code::fail(
            exit_code::CONFIG,
            "wmfix.toml already exists; not overwritten",
        ));
    }
    std::fs::write(path, wmfix::config::TEMPLATE)?;
    println!("wmfix: wrote wmfix.toml; edit its build and run commands");
    Ok(exit_code::OK)
}

fn run_build(args: AppArgs) -> anyhow::Result<i32> {
    let app = wmfix::config::App::load(&args.dir)?;
    let built = wmfix::builder::build(&app, &args.out, args.fence)?;
    println!(
        "wmfix: {} with {} fences in {}, original in {}{}",
        app.root.display(),
        built.fences,
        built.instrumented.display(),
        built.original.display(),
        if built.rebuilt { "" } else { " (up to date)" }
    );
    Ok(exit_code::OK)
}

fn run_test(args: TestArgs) -> anyhow::Result<i32> {
    let fences = wmfix::fence_set::FenceSet::parse(&args.fences).map_err(usage)?;
    if let Some(id) = args.replay {
        let (rec, outcome, log) =
            wmfix::testing::replay(&args.app.dir, &args.app.out, id, args.app.fence)?;
        print!("{log}");
        println!(
            "wmfix: run {id} ({}, seed {}, fences {}): recorded {:?}, replayed {:?}",
            rec.spec.env, rec.spec.seed, rec.spec.fences, rec.outcome, outcome
        );
        return Ok(if outcome.is_error() {
            exit_code::ERRORS_SEEN
        } else {
            exit_code::OK
        });
    }
    let opts = wmfix::testing::Options {
        envs: wmfix::environment::TestEnv::parse_list(&args.env).map_err(usage)?,
        dir: args.app.dir,
        out: args.app.out,
        runs: args.runs,
        minutes: args.minutes,
        seed: args.seed,
        jobs: args.jobs.max(1),
        fences,
        scope: args.app.fence,
    };
    let summary = wmfix::testing::run(&opts)?;
    print!("{}", wmfix::testing::table(&summary));
    println!(
        "wmfix: fences {}; records in {}",
        summary.fences,
        wmfix::testing::test_dir(&opts.out).display()
    );
    if summary.interrupted {
        return Ok(exit_code::INTERRUPTED);
    }
    let errors: usize = summary.rows.iter().map(|r| r.errors()).sum();
    Ok(if errors > 0 {
        exit_code::ERRORS_SEEN
    } else {
        exit_code::OK
    })
}

fn run_insert(args: InsertArgs) -> anyhow::Result<i32> {
    if let Some(file) = args.dump_tree {
        let text = std::fs::read_to_string(&file).map_err(|e| {
            exit_code::fail(exit_code::NO_INPUT, format!("{}: {e}", file.display()))
        })?;
        print!("{}", wmfix::dump::dump_tree(&text));
        return Ok(exit_code::OK);
    }
    let opts = insert::Options {
        paths: args.paths,
        out: args.out,
        fence: args.fence,
        on_parse_error: args.on_parse_error,
        only: None,
    };
    let s = insert::run(&opts)?;
    for w in &s.warnings {
        eprintln!("{w}");
    }
    println!(
        "wmfix: {} fences in {} of {} files; instrumented tree in {}, fence list in {}",
        s.fences,
        s.instrumented,
        s.files,
        s.out.tree().display(),
        s.out.fences_json().display()
    );
    if args.stats {
        let secs = s.cuda_time.as_secs_f64();
        println!(
            "wmfix: instrumented {} bytes of CUDA source in {:.3} ms: {:.1} MB/s (and {:.0} ms to compile the queries, once per process)",
            s.cuda_bytes,
            secs * 1e3,
            s.cuda_bytes as f64 / 1e6 / secs.max(1e-9),
            s.query_time.as_secs_f64() * 1e3
        );
    }
    Ok(exit_code::OK)
}

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
    /// What the fences cost: build the program as written, with the reduced fences and with
    /// every fence (plain fences, no wmfix runtime), run them in interleaved rounds and report
    /// wall time, GPU energy (NVML) and the program's own `wmfix-time-ms:` timing.
    Cost(CostArgs),
    /// Derive a chip's stress profile (critical patch size, access sequence, spread) from
    /// MP/LB/SB litmus micro-benchmarks on the GPU (paper 000, Sec. 3): writes raw.json,
    /// profile.toml, <gpu>.toml, analysis.json and SVG plots. --analyse re-runs the analysis
    /// on saved raw counts, without a GPU.
    Tune(TuneArgs),
    /// Run one litmus test (MP, LB or SB) on the GPU and print its outcome histogram, weak
    /// behaviours and instances per second.
    Litmus(LitmusArgs),
}

#[derive(clap::Args)]
struct EngineArgs {
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    device: usize,
    /// Test instances per launch (a power of two, at least 256).
    #[arg(long, default_value_t = 1 << 16)]
    instances: u32,
    /// Words between neighbouring instances' first locations (at least the largest distance + 1).
    #[arg(long, default_value_t = 256)]
    stride: u32,
    /// Stressing blocks per launch, drawn uniformly from MIN..=MAX.
    #[arg(long, value_name = "MIN..MAX", default_value = "64..512")]
    stress_blocks: String,
    /// Bound on a stressing thread's loop (it stops earlier once the test is done).
    #[arg(long, default_value_t = 1 << 14)]
    stress_iters: u32,
    /// The thread-synchronisation incantation: an instance's threads meet before the test.
    #[arg(long)]
    sync: bool,
    /// Seed of the per-launch random choices.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

impl EngineArgs {
    fn settings(&self) -> anyhow::Result<wmfix::litmus::engine::Settings> {
        let bad = || {
            usage(format!(
                "--stress-blocks wants MIN..MAX, not {:?}",
                self.stress_blocks
            ))
        };
        let (lo, hi) = self.stress_blocks.split_once("..").ok_or_else(bad)?;
        Ok(wmfix::litmus::engine::Settings {
            instances: self.instances,
            stride: self.stride,
            stress_blocks: (
                lo.parse().map_err(|_| bad())?,
                hi.parse().map_err(|_| bad())?,
            ),
            max_iters: self.stress_iters,
            sync: self.sync,
            seed: self.seed,
        })
    }
}

#[derive(clap::Args)]
struct LitmusArgs {
    /// mp, lb or sb.
    test: String,
    /// Words between the two locations; with --distances, the first of a range.
    #[arg(long, default_value_t = 64)]
    distance: u32,
    /// How many consecutive distances, starting at --distance, each instance getting one.
    #[arg(long, default_value_t = 1)]
    distances: u32,
    /// Stress: `default` (the built-in Hopper profile), `none`, or a profile TOML file.
    #[arg(long, default_value = "default")]
    stress: String,
    /// Launches, each of --instances test instances.
    #[arg(long, default_value_t = 100)]
    iterations: u64,
    #[command(flatten)]
    engine: EngineArgs,
    /// Where the compiled kernels are cached.
    #[arg(long, default_value = "wmfix-out/cache")]
    cache: PathBuf,
}

#[derive(clap::Args)]
struct TuneArgs {
    /// Analyse these raw counts (JSON) instead of measuring: no GPU needed.
    #[arg(long, value_name = "FILE")]
    analyse: Option<PathBuf>,
    /// Output directory: raw.json, profile.toml, <gpu>.toml, analysis.json, patches.svg,
    /// spread.svg.
    #[arg(long, short, default_value = "wmfix-out/tune")]
    out: PathBuf,
    /// Noise threshold for patch finding (with --analyse: instead of the file's).
    #[arg(long)]
    epsilon: Option<u64>,
    /// Smaller sizes (D = L = 128, N = 3, M = 16), to try the machinery.
    #[arg(long)]
    quick: bool,
    /// D: distances 0 <= d < D (paper: 256).
    #[arg(long)]
    distances: Option<usize>,
    /// L: stressed locations 0 <= l < L (paper: 256).
    #[arg(long)]
    locations: Option<usize>,
    /// C: executions of each configuration, rounded up to whole launches (paper: 1000).
    #[arg(long)]
    executions: Option<u64>,
    /// N: longest access sequence (paper: 5).
    #[arg(long)]
    max_sequence: Option<usize>,
    /// M: largest spread (paper: 64).
    #[arg(long)]
    max_spread: Option<usize>,
    /// Skip patch finding and use this critical patch size.
    #[arg(long)]
    patch_size: Option<usize>,
    #[command(flatten)]
    engine: EngineArgs,
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
    #[command(flatten)]
    runs_at_once: RunArgs,
    /// Base seed of the runs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Continue the reduction recorded in wmfix-out/reduce/journal.jsonl.
    #[arg(long)]
    resume: bool,
}

#[derive(clap::Args)]
struct CostArgs {
    #[command(flatten)]
    app: AppArgs,
    /// The middle variant: `reduced` (the last `wmfix reduce` in the output directory), or
    /// fence ids like `0,3,7-9`.
    #[arg(long, default_value = "reduced")]
    fences: String,
    /// Timed rounds; each runs every variant once, in a random order.
    #[arg(long, default_value_t = 30)]
    rounds: usize,
    /// Untimed rounds before them.
    #[arg(long, default_value_t = 1)]
    warmup: usize,
    /// NVML index of the GPU whose energy counter is read (PCI order).
    #[arg(long, default_value_t = 0)]
    nvml_index: u32,
    /// Do not hold a CUDA context open in wmfix while the runs go.
    #[arg(long)]
    no_hold: bool,
    /// Seed of the round orders.
    #[arg(long, default_value_t = 1)]
    seed: u64,
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

/// How `test` and `reduce` run the program.
#[derive(clap::Args)]
struct RunArgs {
    /// Runs at a time. The default, 4, doubled runs per hour on an H200 (cbe-dot: 10,561 with
    /// one job, 20,537 with four, 19,608 with eight) with the same error rate.
    #[arg(long, short, default_value_t = 4)]
    jobs: usize,
    /// Spread the runs over these GPUs (`all`, or ordinals like `0,1`): worker w runs with
    /// CUDA_VISIBLE_DEVICES set to the (w mod n)-th. Raise --jobs with the number of GPUs.
    #[arg(long)]
    gpus: Option<String>,
    /// Do not hold a CUDA context open in wmfix while the runs go. Holding one makes each
    /// run's own context faster: a context held by another process cut a cbe-dot run on an
    /// H200 from 0.45 s to 0.31 s.
    #[arg(long)]
    no_hold: bool,
}

impl RunArgs {
    fn gpus(&self) -> anyhow::Result<Vec<String>> {
        match &self.gpus {
            Some(g) => wmfix::batch::parse_gpus(g),
            None => Ok(vec![]),
        }
    }
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
    #[command(flatten)]
    runs_at_once: RunArgs,
    /// Fences enabled in the instrumented program: `none` (the program as written), `all`, or
    /// ids like `0,3,7-9`.
    #[arg(long, default_value = "none")]
    fences: String,
    /// Re-run one recorded run (its id in wmfix-out/test/runs.jsonl) with the same seed,
    /// environment and fences.
    #[arg(long, value_name = "RUN")]
    replay: Option<usize>,
    /// Continue the test recorded in wmfix-out/test/ (after ctrl-c, kill -9 or a crash) with
    /// the same settings: only the runs not yet recorded are run, with the seeds they would
    /// have had.
    #[arg(long, conflicts_with_all = ["replay", "minutes"])]
    resume: bool,
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
        Command::Cost(args) => run_cost(args),
        Command::Tune(args) => run_tune(args),
        Command::Litmus(args) => run_litmus(args),
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
        jobs: args.runs_at_once.jobs.max(1),
        gpus: args.runs_at_once.gpus()?,
        hold: !args.runs_at_once.no_hold,
        seed: args.seed,
        resume: args.resume,
        scope: args.app.fence,
    };
    let report = wmfix::reducing::run(&opts)?;
    print!("{}", wmfix::reducing::summary(&report));
    Ok(exit_code::OK)
}

fn run_tune(args: TuneArgs) -> anyhow::Result<i32> {
    let done = match args.analyse {
        Some(raw) => {
            let done = wmfix::tune::analyse::run(&wmfix::tune::analyse::Options {
                raw,
                out: args.out,
                epsilon: args.epsilon,
            })?;
            print!("{}", done.report);
            done
        }
        None => {
            let mut sizes = if args.quick {
                wmfix::tune::measure::Sizes::quick()
            } else {
                wmfix::tune::measure::Sizes::paper()
            };
            sizes.distances = args.distances.unwrap_or(sizes.distances);
            sizes.locations = args.locations.unwrap_or(sizes.locations);
            sizes.executions = args.executions.unwrap_or(sizes.executions);
            sizes.max_sequence_length = args.max_sequence.unwrap_or(sizes.max_sequence_length);
            sizes.max_spread = args.max_spread.unwrap_or(sizes.max_spread);
            sizes.epsilon = args.epsilon.unwrap_or(sizes.epsilon);
            let tuned = wmfix::tune::measure::run(&wmfix::tune::measure::Options {
                out: args.out,
                device: args.engine.device,
                sizes,
                settings: args.engine.settings()?,
                patch_size: args.patch_size,
                command: std::env::args().collect::<Vec<_>>().join(" "),
            })?;
            print!("{}", tuned.analysis.report);
            print!("{}", wmfix::tune::measure::summary(&tuned));
            tuned.analysis
        }
    };
    println!(
        "wmfix: profile in {}; analysis and plots beside it",
        done.written[0].display()
    );
    Ok(exit_code::OK)
}

fn run_litmus(args: LitmusArgs) -> anyhow::Result<i32> {
    use wmfix::litmus::engine::{self as litmus, Job, Locations, ProfileStress};
    use wmfix::litmus::vocabulary::{Sequence, Test};
    let test = match args.test.to_ascii_lowercase().as_str() {
        "mp" => Test::Mp,
        "lb" => Test::Lb,
        "sb" => Test::Sb,
        other => return Err(usage(format!("unknown test {other:?}: mp, lb or sb"))),
    };
    let (sequence, locations) = match args.stress.as_str() {
        "none" => (Sequence::parse("ld").expect("valid"), Locations::None),
        spec => {
            let (text, origin) = if spec == "default" {
                (
                    litmus::DEFAULT_PROFILE.to_string(),
                    "built-in profile".to_string(),
                )
            } else {
                let text = std::fs::read_to_string(spec)
                    .map_err(|e| exit_code::fail(exit_code::NO_INPUT, format!("{spec}: {e}")))?;
                (text, spec.to_string())
            };
            let p = ProfileStress::parse(&text, &origin)?;
            (p.sequence()?, p.locations())
        }
    };
    let settings = args.engine.settings()?;
    let per_launch = settings.instances as u64;
    let ctx = litmus::open(args.engine.device)?;
    let gpu = litmus::device_info(&ctx)?;
    let cubin = litmus::compile(&args.cache, gpu.arch)?;
    let mut engine = litmus::Engine::new(ctx, &cubin, settings)?;
    let job = Job {
        test,
        d0: args.distance,
        ndist: args.distances.max(1),
        executions: args.iterations * per_launch / args.distances.max(1) as u64,
        sequence,
        locations,
    };
    // One launch first, untimed: module loading and first-touch costs stay out of the rate.
    engine.run(&Job {
        executions: 1,
        ..job.clone()
    })?;
    let counts = engine.run(&job)?;
    println!("GPU: {} (sm_{}), driver {}", gpu.name, gpu.arch, gpu.driver);
    print!("{}", litmus::report(test, &job, &counts));
    Ok(exit_code::OK)
}

fn run_cost(args: CostArgs) -> anyhow::Result<i32> {
    use wmfix::cost::Middle;
    let middle = match args.fences.as_str() {
        "reduced" => Middle::Reduced,
        s => Middle::Given(wmfix::fence_set::FenceSet::parse(s).map_err(usage)?),
    };
    if args.rounds == 0 {
        return Err(usage("--rounds must be at least 1".into()));
    }
    let opts = wmfix::cost::Options {
        dir: args.app.dir,
        out: args.app.out,
        middle,
        rounds: args.rounds,
        warmup: args.warmup,
        seed: args.seed,
        hold: !args.no_hold,
        nvml_index: args.nvml_index,
        scope: args.app.fence,
    };
    let report = wmfix::cost::run(&opts)?;
    print!("{}", wmfix::cost::table(&report));
    println!(
        "wmfix: {} of {} rounds; runs in {}",
        report.rounds_done,
        report.rounds_asked,
        wmfix::cost::cost_dir(&opts.out)
            .join("runs.jsonl")
            .display()
    );
    Ok(if report.interrupted {
        exit_code::INTERRUPTED
    } else {
        exit_code::OK
    })
}

fn run_apply(args: ApplyArgs) -> anyhow::Result<i32> {
    let app = wmfix::config::App::load(&args.dir)?;
    let out = args.out.canonicalize().map_err(|e| {
        exit_code::fail(exit_code::NO_INPUT, format!("{}: {e}", args.out.display()))
    })?;
    let saved = wmfix::reducing::load_result(&out)?;
    let (files, now) = wmfix::patch::harden(&app, &out, &saved.kept, saved.scope)?;
    let n = wmfix::patch::apply(&app, &files, &now, &saved.sources)?;
    println!(
        "wmfix: added {} fences to {n} files in {}",
        saved.kept.len(),
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
        jobs: args.runs_at_once.jobs.max(1),
        gpus: args.runs_at_once.gpus()?,
        hold: !args.runs_at_once.no_hold,
        fences,
        scope: args.app.fence,
        resume: args.resume,
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

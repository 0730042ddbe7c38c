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
    /// Runs at a time.
    #[arg(long, short, default_value_t = 1)]
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
            "wmfix: instrumented {} bytes of CUDA source in {:.3} ms: {:.1} MB/s",
            s.cuda_bytes,
            secs * 1e3,
            s.cuda_bytes as f64 / 1e6 / secs.max(1e-9)
        );
    }
    Ok(exit_code::OK)
}

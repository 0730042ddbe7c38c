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
    };
    if let Err(e) = result {
        eprintln!("wmfix: error: {e:#}");
        std::process::exit(exit_code::code_of(&e));
    }
}

fn run_insert(args: InsertArgs) -> anyhow::Result<()> {
    if let Some(file) = args.dump_tree {
        let text = std::fs::read_to_string(&file).map_err(|e| {
            exit_code::fail(exit_code::NO_INPUT, format!("{}: {e}", file.display()))
        })?;
        print!("{}", wmfix::dump::dump_tree(&text));
        return Ok(());
    }
    let opts = insert::Options {
        paths: args.paths,
        out: args.out,
        fence: args.fence,
        on_parse_error: args.on_parse_error,
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
    Ok(())
}

use clap::{Parser, Subcommand};
use wmfix::cmd;
use wmfix::exit_code;

/// Exposes weak-memory bugs in CUDA applications and hardens them with the fewest fences.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Write an instrumented copy of CUDA sources (the sources are never modified).
    ///
    /// A numbered fence after every global memory access in device code, remapped thread ids,
    /// stress dispatch at kernel entry, and launch sites that ask the runtime for the grid.
    #[command(
        override_usage = "wmfix insert [OPTIONS] <PATHS>...\n       wmfix insert --dump-tree <FILE>"
    )]
    Insert(cmd::insert::Args),
    /// Write a commented wmfix.toml template into the current folder.
    Init,
    /// Build the instrumented application and the original.
    ///
    /// The application of DIR/wmfix.toml, instrumented, and the original for the baseline, into
    /// the output directory. Nothing is rebuilt when nothing changed.
    Build(cmd::build::Args),
    /// Run the application many times under stress and report error rates (exit 2 on errors).
    ///
    /// The instrumented application under the testing environments; exit status 2 when any run
    /// erred.
    Test(cmd::test::Args),
    /// Find the fences the application needs, as a patch to review.
    ///
    /// Empirical fence insertion under stress (or from a race detection run, `--oracle race`);
    /// the patch is wmfix-out/reduce/fences.patch.
    Reduce(cmd::reduce::Args),
    /// Find data races (PTX or scoped-HRF model) in one run, with the fences that order them.
    ///
    /// Whether or not this GPU reorders. Exit status 2 when a race is found.
    Race(cmd::race::Args),
    /// Apply the last reduction's patch to the application's sources (only on request).
    Apply(cmd::apply::Args),
    /// Measure what the fences cost: time and GPU energy of no, reduced and all fences.
    ///
    /// Builds the program as written, with the reduced fences and with every fence (plain
    /// fences, no wmfix runtime), runs them in interleaved rounds and reports wall time, GPU
    /// energy (NVML) and the program's own `wmfix-time-ms:` timing.
    Cost(cmd::cost::Args),
    /// Derive this GPU's stress profile from MP/LB/SB litmus tests.
    ///
    /// The critical patch size, access sequence and spread (Sorensen & Donaldson, PLDI 2016,
    /// Sec. 3): writes raw.json, profile.toml, <gpu>.toml, analysis.json and SVG plots.
    /// --analyse re-runs the analysis on saved raw counts, without a GPU.
    Tune(cmd::tune::Args),
    /// Write one HTML page of an output folder: tests, reduction, kept fences, cost.
    ///
    /// Self-contained (inline CSS and SVG charts, nothing fetched), written into the output
    /// folder as report.html; --from reads the step folders of scripts/gpu/evidence.sh instead.
    Report(cmd::report::Args),
    /// Run one litmus test (MP, LB or SB) on the GPU.
    ///
    /// Prints its outcome histogram, weak behaviours and instances per second.
    Litmus(cmd::litmus::Args),
}

/// Parsing and planning make millions of small objects (tree nodes, matches, edits), which
/// mimalloc serves faster than the C library's malloc. Built without transparent huge pages
/// (`no_thp`): faulting those in, compacted on demand, cost more than they saved.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// tree-sitter's C code allocates through the same allocator. Before any tree-sitter call.
fn use_mimalloc_in_tree_sitter() {
    use libmimalloc_sys as mi;
    // SAFETY: one allocator family, set before tree-sitter makes any object, and only once.
    unsafe {
        tree_sitter::set_allocator(Some(tree_sitter::Allocator {
            malloc: mi::mi_malloc,
            calloc: mi::mi_calloc,
            realloc: mi::mi_realloc,
            free: mi::mi_free,
        }));
    }
}

fn main() {
    use_mimalloc_in_tree_sitter();
    // Negative numbers reach the value parsers, which say what range an option takes.
    let command = <Cli as clap::CommandFactory>::command()
        .allow_negative_numbers(true)
        .mut_subcommands(|s| s.allow_negative_numbers(true));
    let command = cmd::help::screen_sized(command);
    let parsed = command
        .try_get_matches_from(cmd::help::args())
        .and_then(|m| <Cli as clap::FromArgMatches>::from_arg_matches(&m));
    let cli = match parsed {
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
        Command::Insert(args) => cmd::insert::run(args),
        Command::Init => cmd::init::run(),
        Command::Build(args) => cmd::build::run(args),
        Command::Test(args) => cmd::test::run(args),
        Command::Reduce(args) => cmd::reduce::run(args),
        Command::Race(args) => cmd::race::run(args),
        Command::Apply(args) => cmd::apply::run(args),
        Command::Cost(args) => cmd::cost::run(args),
        Command::Tune(args) => cmd::tune::run(args),
        Command::Report(args) => cmd::report::run(args),
        Command::Litmus(args) => cmd::litmus::run(args),
    };
    // Steps of runs that srun launched and a time-out or ctrl-c stopped may still be running.
    wmfix::app::claim::release();
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("wmfix: error: {e:#}");
            std::process::exit(exit_code::code_of(&e));
        }
    }
}

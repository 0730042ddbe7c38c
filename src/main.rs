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
    /// Write an instrumented copy of CUDA sources: a numbered fence after every global memory
    /// access in device code, remapped thread ids, stress dispatch at kernel entry, and launch
    /// sites that ask the runtime for the grid. The sources themselves are never modified.
    Insert(cmd::insert::Args),
    /// Write a commented wmfix.toml template into the current folder.
    Init,
    /// Instrument and build the application of DIR/wmfix.toml, and build the original for the
    /// baseline, into the output directory. Nothing is rebuilt when nothing changed.
    Build(cmd::AppArgs),
    /// Run the instrumented application many times under testing environments and report
    /// error rates. Exit status 2 when any run erred.
    Test(cmd::test::Args),
    /// Empirical fence insertion: find the fences the application needs under stress, and
    /// write them as a patch (wmfix-out/reduce/fences.patch) for review.
    Reduce(cmd::reduce::Args),
    /// Find data races under the PTX memory model in one run, whether or not this GPU reorders,
    /// and name the fences that would order them. Exit status 2 when a race is found.
    Race(cmd::race::Args),
    /// Apply the last reduction's patch to the application's sources (only on request).
    Apply(cmd::apply::Args),
    /// What the fences cost: build the program as written, with the reduced fences and with
    /// every fence (plain fences, no wmfix runtime), run them in interleaved rounds and report
    /// wall time, GPU energy (NVML) and the program's own `wmfix-time-ms:` timing.
    Cost(cmd::cost::Args),
    /// Derive a chip's stress profile (critical patch size, access sequence, spread) from
    /// MP/LB/SB litmus micro-benchmarks on the GPU (Sorensen & Donaldson, PLDI 2016, Sec. 3):
    /// writes raw.json, profile.toml, <gpu>.toml, analysis.json and SVG plots. --analyse re-runs
    /// the analysis on saved raw counts, without a GPU.
    Tune(cmd::tune::Args),
    /// Run one litmus test (MP, LB or SB) on the GPU and print its outcome histogram, weak
    /// behaviours and instances per second.
    Litmus(cmd::litmus::Args),
}

fn main() {
    // Negative numbers reach the value parsers, which say what range an option takes.
    let command = <Cli as clap::CommandFactory>::command()
        .allow_negative_numbers(true)
        .mut_subcommands(|s| s.allow_negative_numbers(true));
    let command = cmd::help::screen_sized(command);
    let parsed = command
        .try_get_matches()
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
        Command::Litmus(args) => cmd::litmus::run(args),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("wmfix: error: {e:#}");
            std::process::exit(exit_code::code_of(&e));
        }
    }
}

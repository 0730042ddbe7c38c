//! `wmfix tune`: a chip profile from litmus micro-benchmarks, or from saved counts.

use super::EngineArgs;
use crate::exit_code;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Analyse these raw counts (JSON) instead of measuring: no GPU needed.
    #[arg(long, value_name = "FILE")]
    analyse: Option<PathBuf>,
    /// Output directory: raw.json, profile.toml, <gpu>.toml, analysis.json, patches.svg,
    /// spread.svg.
    #[arg(long, short, default_value = "wmfix-out/tune")]
    out: PathBuf,
    /// Noise threshold for patch finding (with --analyse: instead of the file's).
    #[arg(long, value_parser = crate::cmd::values::whole_u64)]
    epsilon: Option<u64>,
    /// Smaller sizes (D = L = 128, N = 3, M = 16), to try the machinery.
    #[arg(long)]
    quick: bool,
    /// D: distances 0 <= d < D (paper: 256).
    #[arg(long, value_parser = crate::cmd::values::whole_usize)]
    distances: Option<usize>,
    /// L: stressed locations 0 <= l < L (paper: 256).
    #[arg(long, value_parser = crate::cmd::values::whole_usize)]
    locations: Option<usize>,
    /// C: executions of each configuration, rounded up to whole launches (paper: 1000).
    #[arg(long, value_parser = crate::cmd::values::whole_u64)]
    executions: Option<u64>,
    /// N: longest access sequence (paper: 5).
    #[arg(long, value_parser = crate::cmd::values::whole_usize)]
    max_sequence: Option<usize>,
    /// M: largest spread (paper: 64).
    #[arg(long, value_parser = crate::cmd::values::whole_usize)]
    max_spread: Option<usize>,
    /// Skip patch finding and use this critical patch size.
    #[arg(long, value_parser = crate::cmd::values::whole_usize)]
    patch_size: Option<usize>,
    /// Stressing blocks per launch, drawn uniformly from MIN..=MAX (the runtime's stress is
    /// heavy too: a share of every launch).
    #[arg(long, value_name = "MIN..MAX", default_value = "64..512", value_parser = super::stress_blocks)]
    stress_blocks: (u32, u32),
    #[command(flatten)]
    engine: EngineArgs,
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let done = match args.analyse {
        Some(raw) => {
            let _out = crate::out_dir::OutDir::open(&args.out, &[])?;
            let done = crate::tune::analyse::run(&crate::tune::analyse::Options {
                raw,
                out: args.out,
                epsilon: args.epsilon,
            })?;
            print!("{}", done.report);
            done
        }
        None => {
            let mut sizes = if args.quick {
                crate::tune::measure::Sizes::quick()
            } else {
                crate::tune::measure::Sizes::paper()
            };
            sizes.distances = args.distances.unwrap_or(sizes.distances);
            sizes.locations = args.locations.unwrap_or(sizes.locations);
            sizes.executions = args.executions.unwrap_or(sizes.executions);
            sizes.max_sequence_length = args.max_sequence.unwrap_or(sizes.max_sequence_length);
            sizes.max_spread = args.max_spread.unwrap_or(sizes.max_spread);
            sizes.epsilon = args.epsilon.unwrap_or(sizes.epsilon);
            let tuned = crate::tune::measure::run(&crate::tune::measure::Options {
                out: args.out,
                device: args.engine.device,
                sizes,
                settings: args.engine.settings(args.stress_blocks),
                patch_size: args.patch_size,
                command: std::env::args().collect::<Vec<_>>().join(" "),
            })?;
            print!("{}", tuned.analysis.report);
            print!("{}", crate::tune::measure::summary(&tuned));
            tuned.analysis
        }
    };
    println!(
        "wmfix: profile in {}; analysis and plots beside it",
        done.profile.display()
    );
    Ok(exit_code::OK)
}

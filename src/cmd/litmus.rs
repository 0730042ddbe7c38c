//! `wmfix litmus`: one litmus test on the GPU, its histogram and rates.

use super::{EngineArgs, usage};
use crate::exit_code;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
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

pub fn run(args: Args) -> anyhow::Result<i32> {
    use crate::litmus::engine::{self as litmus, Job, Locations, ProfileStress};
    use crate::litmus::vocabulary::{Sequence, Test};
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

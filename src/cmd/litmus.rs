//! `wmfix litmus`: one litmus test on the GPU, its histogram and rates.

use super::EngineArgs;
use crate::exit_code;
use crate::litmus::vocabulary::Test;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// The litmus test.
    #[arg(value_enum, ignore_case = true)]
    test: Test,
    /// Words between the two locations; with --distances, the first of a range.
    #[arg(long, default_value_t = 64, value_parser = crate::cmd::values::whole_u32)]
    distance: u32,
    /// How many consecutive distances, starting at --distance, each instance getting one.
    #[arg(long, default_value_t = 1, value_parser = crate::cmd::values::whole_u32)]
    distances: u32,
    /// Stress: `default` (the built-in Hopper profile), `none`, or a profile TOML file.
    #[arg(long, default_value = "default")]
    stress: Stress,
    /// Stressing blocks per launch, drawn uniformly from MIN..=MAX. The default is the
    /// fastest to show weak outcomes in the ablation on an H200 (results/2026-11-24-nvidia-h200/
    /// litmus-ablation: MP 5.3e7 weak/s with 1..8, 1.7e6 with 64..512).
    #[arg(long, value_name = "MIN..MAX", default_value = "1..8", value_parser = super::stress_blocks)]
    stress_blocks: (u32, u32),
    /// Launches, each of --instances test instances.
    #[arg(long, default_value_t = 100, value_parser = crate::cmd::values::whole_u64)]
    iterations: u64,
    #[command(flatten)]
    engine: EngineArgs,
    /// Where the compiled kernels are cached.
    #[arg(long, default_value = "wmfix-out/cache")]
    cache: PathBuf,
    /// Print one JSON object (GPU, settings, outcomes, rates and how they are counted)
    /// instead of the histogram.
    #[arg(long)]
    json: bool,
}

/// `--stress`: the built-in profile, none, or a profile file.
#[derive(Clone, Debug)]
pub enum Stress {
    Default,
    None,
    Profile(PathBuf),
}

impl std::str::FromStr for Stress {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Stress, Self::Err> {
        Ok(match s {
            "default" => Stress::Default,
            "none" => Stress::None,
            path => Stress::Profile(path.into()),
        })
    }
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    use crate::litmus::engine::{self as litmus, Job, Locations};
    use crate::litmus::vocabulary::Sequence;
    let test = args.test;
    let profile = |text: &str, origin: &str| -> anyhow::Result<(Sequence, Locations)> {
        let p = crate::litmus::profile::Stress::parse(text, origin)?;
        Ok((p.sequence.clone(), litmus::locations(&p)))
    };
    let (sequence, locations) = match &args.stress {
        Stress::None => (Sequence::parse("ld").expect("valid"), Locations::None),
        Stress::Default => profile(litmus::DEFAULT_PROFILE, "built-in profile")?,
        Stress::Profile(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| {
                exit_code::fail(exit_code::NO_INPUT, format!("{}: {e}", path.display()))
            })?;
            profile(&text, &path.display().to_string())?
        }
    };
    let settings = args.engine.settings(args.stress_blocks);
    litmus::check_settings(&settings)?;
    litmus::check_distances(&settings, args.distance, args.distances)?;
    let ctx = litmus::open(args.engine.device)?;
    let gpu = litmus::device_info(&ctx)?;
    let _cache = crate::out_dir::OutDir::open(&args.cache, &[])?;
    let cubin = litmus::compile(&args.cache, gpu.arch)?;
    let mut engine = litmus::Engine::new(ctx, &cubin, settings)?;
    let per_launch = engine.settings().instances as u64;
    let job = Job {
        test,
        d0: args.distance,
        ndist: args.distances,
        executions: args.iterations * per_launch / args.distances as u64,
        sequence,
        locations,
    };
    // One launch first, untimed: module loading and first-touch costs stay out of the rate.
    engine.run(&Job {
        executions: 1,
        ..job.clone()
    })?;
    let counts = engine.run(&job)?;
    if args.json {
        let measured = crate::litmus::report::Measured {
            test,
            job: &job,
            counts: &counts,
            settings: engine.settings(),
            gpu: &gpu,
            stress: match &args.stress {
                Stress::Default => "default".into(),
                Stress::None => "none".into(),
                Stress::Profile(p) => p.display().to_string(),
            },
            command: std::env::args().collect::<Vec<_>>().join(" "),
            date: crate::tune::measure::utc_now(),
        };
        println!("{}", crate::litmus::report::json(&measured));
    } else {
        println!("GPU: {} (sm_{}), driver {}", gpu.name, gpu.arch, gpu.driver);
        print!("{}", crate::litmus::report::report(test, &job, &counts));
    }
    Ok(exit_code::OK)
}

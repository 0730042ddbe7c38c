//! `wmfix cost`: run time and energy of no, reduced and all fences.

use super::AppArgs;
use crate::cmd::values::Count;
use crate::cost::measure::Middle;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    app: AppArgs,
    /// The middle variant: `reduced` (the last `wmfix reduce` in the output directory), a
    /// reduction's `reduce.json` from elsewhere (a path ending in `.json`; its sources must be
    /// these), or fence ids like `0,3,7-9` (ids the program does not have are refused).
    #[arg(long, default_value = "reduced")]
    fences: Middle,
    /// With a reduction as the middle variant: add the fences the PTX memory model requires
    /// beside the kept ones, placed as `wmfix apply --model` places them.
    #[arg(long)]
    model: bool,
    /// Timed rounds (at least 1); each runs every variant once, in a random order.
    #[arg(long, default_value = "30")]
    rounds: Count,
    /// Untimed rounds before them.
    #[arg(long, default_value_t = 1, value_parser = crate::cmd::values::whole_usize)]
    warmup: usize,
    /// NVML index of the GPU whose energy counter is read (PCI order).
    #[arg(long, default_value_t = 0, value_parser = crate::cmd::values::whole_u32)]
    nvml_index: u32,
    /// Do not hold a CUDA context open in wmfix while the runs go.
    #[arg(long)]
    no_hold: bool,
    /// Seed of the round orders.
    #[arg(long, default_value_t = 1, value_parser = crate::cmd::values::whole_u64)]
    seed: u64,
    /// Print the report (what cost.json holds) as one JSON document on stdout; the table goes
    /// to stderr.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let opts = crate::cost::measure::Options {
        out: args.app.out(),
        dir: args.app.dir,
        middle: args.fences,
        rounds: args.rounds.get(),
        warmup: args.warmup,
        seed: args.seed,
        hold: !args.no_hold,
        nvml_index: args.nvml_index,
        scope: args.app.fence,
        model: args.model,
    };
    if args.model && matches!(opts.middle, Middle::Given(_)) {
        return Err(crate::exit_code::fail(
            crate::exit_code::USAGE,
            "--model adds a reduction's model completion: give --fences reduced or a reduce.json",
        ));
    }
    let app = crate::app::config::App::load(&opts.dir)?;
    crate::reduce::patch::refuse_preprocessed(&app)?;
    super::needs_gpu(&app, "cost")?;
    let inputs = [app.root.clone()];
    // The reduced variant needs an earlier reduction: known before anything is written.
    let out = super::open_out(
        &opts.out,
        &inputs,
        matches!(opts.middle, Middle::Reduced),
        |o| o.reduce().report(),
        "no reduction; run `wmfix reduce` first",
    )?;
    let (report, runs) = crate::cost::measure::run(&opts, &out)?;
    let human = format!(
        "{}wmfix: {} of {} rounds; runs in {}\n",
        crate::cost::measure::table(&report),
        report.rounds_done,
        report.rounds_asked,
        runs.display()
    );
    super::report(args.json, &report, &human);
    Ok(crate::interrupt::code(report.interrupted))
}

//! `wmfix build`: the instrumented and the original program, built when something changed, then
//! both run natively to check that the instrumented one, fences off and no stress, ends as the
//! original does (`run::differential`).

use super::AppArgs;
use crate::exit_code::{self, fail};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    app: AppArgs,
    /// Build only: do not run the original and the instrumented program (fences off, no
    /// stress) to check that they end alike.
    #[arg(long)]
    no_check: bool,
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let app = crate::app::config::App::load(&args.app.dir)?;
    let out = crate::out_dir::OutDir::open(&args.app.out(), std::slice::from_ref(&app.root))?;
    let built = crate::app::builder::build(&app, &out, args.app.fence)?;
    println!(
        "wmfix: {} with {} fences in {}, original in {}{}",
        app.root.display(),
        built.fences,
        built.instrumented.display(),
        built.original.display(),
        if built.rebuilt { "" } else { " (up to date)" }
    );
    if args.no_check {
        println!(
            "wmfix: check not run (--no-check): whether the instrumented program ends as the original does"
        );
        return Ok(exit_code::OK);
    }
    if let Err(e) = super::needs_gpu(&app, "build") {
        println!(
            "wmfix: check not run: whether the instrumented program ends as the original does needs the program run ({e})"
        );
        return Ok(exit_code::OK);
    }
    let log = out.differential_log();
    let Some(d) =
        crate::run::differential::check(&app, &built.original, &built.instrumented, &log)?
    else {
        return Err(crate::interrupt::stopped(
            "during the check after the build",
        ));
    };
    if d.differs {
        return Err(fail(
            exit_code::DIFFERS,
            format!("{}; output in {}", d.describe(), log.display()),
        ));
    }
    println!("wmfix: {}", d.describe());
    Ok(exit_code::OK)
}

//! `wmfix build`: the instrumented and the original program, built when something changed.

use super::AppArgs;
use crate::exit_code;

pub fn run(args: AppArgs) -> anyhow::Result<i32> {
    let app = crate::app::config::App::load(&args.dir)?;
    let out = crate::out_dir::OutDir::open(&args.out(), std::slice::from_ref(&app.root))?;
    let built = crate::app::builder::build(&app, &out, args.fence)?;
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

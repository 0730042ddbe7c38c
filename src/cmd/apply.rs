//! `wmfix apply`: write the last reduction's fences into the sources, on request.

use crate::exit_code;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// The application's folder, holding wmfix.toml.
    #[arg(default_value = ".")]
    dir: PathBuf,
    /// Output directory of the reduction [default: DIR/wmfix-out].
    #[arg(long, short)]
    out: Option<PathBuf>,
    /// Apply a reduction that did not finish (interrupted, its budget spent before the
    /// stability check, or undecided): its fences are not known to be the fewest needed.
    #[arg(long)]
    incomplete: bool,
    /// Also the fences the PTX memory model requires beside the kept ones (reduce.json's
    /// `model`, `fences-model.patch`).
    #[arg(long)]
    model: bool,
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let app = crate::app::config::App::load(&args.dir)?;
    let out = super::open_earlier(
        &super::default_out(&args.dir, args.out.as_deref()),
        std::slice::from_ref(&app.root),
        |o| o.reduce().report(),
        "run `wmfix reduce` first",
    )?;
    let saved = crate::reduce::record::Report::load(&out)?;
    if !saved.result.complete && !args.incomplete {
        return Err(exit_code::fail(
            exit_code::BAD_INPUT,
            format!(
                "the reduction in {} is incomplete ({}); `wmfix reduce --resume` continues it, or `wmfix apply --incomplete` applies its fences as they are",
                out.root().display(),
                saved.result.note
            ),
        ));
    }
    let mut kept = saved.result.fences.clone();
    let model = if args.model {
        saved.model.ids()
    } else {
        Default::default()
    };
    kept.extend(&model);
    let kept = &kept;
    // Loop fences the reduction placed after the loop alone, and the model's acquires.
    let after_loop: crate::fences::id::Ids = model
        .union(&saved.result.after_loop_only)
        .copied()
        .collect();
    let done =
        crate::reduce::patch::harden_placed(&app, out.root(), kept, &after_loop, saved.scope)?;
    let n = crate::reduce::patch::apply(&app, &done.files, &done.sources, &saved.sources)?;
    println!(
        "wmfix: added {} fences to {n} files in {}",
        kept.len() - done.library.len() - done.unplaced.len(),
        app.root.display()
    );
    for f in &done.library {
        println!("wmfix: not added, in a library header (a finding for that library): {f}");
    }
    for f in &done.unplaced {
        println!("wmfix: not added, as the instrumented build did not add it either: {f}");
    }
    Ok(exit_code::OK)
}

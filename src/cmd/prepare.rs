//! What `test` and `reduce` settle before their runs, in this order: warm processes (checked
//! later, against cold runs), a context held open, the unmodified program's check (C-Vise's
//! lesson), the chip profile, wmfix's MPS server and the probe of the stress environment.

use crate::app::builder::Built;
use crate::app::config::App;
use crate::out_dir::OutDir;
use crate::run::environment::TestEnv;
use anyhow::Result;
use std::path::Path;

/// What the command asked for.
pub struct Request<'a> {
    pub warm: bool,
    pub hold: bool,
    pub mps: bool,
    pub gpus: &'a [String],
    /// The environments the runs use (the probe takes the first that stresses).
    pub envs: &'a [TestEnv],
    /// Where the unmodified program's run logs.
    pub baseline_log: &'a Path,
    /// The command's work in words, for the sanity check's line ("test", "reduction").
    pub what: &'a str,
}

/// Kept for the runs: the held context and the MPS server live as long as this does.
pub struct Prepared {
    pub warm: Option<crate::run::warm::Pool>,
    pub sanity: crate::run::sanity::Sanity,
    pub profile: crate::run::profile::ProfileUsed,
    pub run_env: Vec<(String, String)>,
    _held: Option<crate::run::hold::Held>,
    _mps: Option<crate::run::mps::Mps>,
}

/// `lap` is called after the sanity check and after the probe (`reduce` times its phases).
pub fn prepare(
    app: &App,
    out: &OutDir,
    built: &Built,
    r: &Request,
    lap: &mut dyn FnMut(&str),
) -> Result<Prepared> {
    // Before any run: --warm where the program cannot run warm is a usage error.
    let warm = crate::run::warm::pool(r.warm, app, &out.warm())?;
    let held = r.hold.then(|| crate::run::hold::hold(r.gpus));
    let sanity =
        crate::run::sanity::check(app, &built.original, &built.instrumented, r.baseline_log)?;
    if let Some(s) = sanity.describe(r.what) {
        eprintln!("wmfix: {s}");
    }
    lap("sanity check");
    let profile = crate::run::profile::for_runs(out.root(), r.gpus)?;
    eprintln!("wmfix: {}", profile.describe());
    let mps = r
        .mps
        .then(|| crate::run::mps::Mps::start(&out.mps()))
        .transpose()?;
    let run_env: Vec<(String, String)> = profile
        .env()
        .into_iter()
        .chain(mps.iter().flat_map(|m| m.env()))
        .collect();
    crate::run::probe::before_runs(
        app,
        &built.instrumented,
        r.envs,
        &run_env,
        r.gpus,
        &out.probe_log(),
    )?;
    lap("probe");
    Ok(Prepared {
        warm,
        sanity,
        profile,
        run_env,
        _held: held,
        _mps: mps,
    })
}

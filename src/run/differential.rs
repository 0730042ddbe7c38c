//! Whatever the runtime adds (id remapping, traces, stress blocks), the instrumented program with
//! its fences off and no stress must end as the original does on the same input: the check
//! `wmfix build` runs, naming the difference where there is one. A program whose outcome varies
//! natively (a race that already shows) is run a few times each way: only outcomes the original
//! never had count as a difference.

use crate::app::config::App;
use crate::fences::set::FenceSet;
use crate::run::environment::TestEnv;
use crate::run::trial::{self, TrialSpec};
use serde::Serialize;
use std::path::Path;

/// Runs of each program at most; the check stops at the first pair that ends alike.
pub const TRIES: usize = 3;

/// How the two programs ended, as `describe` words ("passed", "crashed: killed by signal 8
/// (SIGFPE)").
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Differential {
    pub original: Vec<String>,
    pub instrumented: Vec<String>,
    /// Runs of the instrumented program that ended as no run of the original did.
    pub differs: bool,
}

impl Differential {
    /// The line `build` prints.
    pub fn describe(&self) -> String {
        if self.differs {
            format!(
                "the instrumented program (fences off, no stress) does not end as the original does: the original {}, the instrumented program {}; wmfix's instrumentation changed this program, so no result of wmfix on it can be trusted",
                self.original.join(", "),
                self.instrumented.join(", ")
            )
        } else {
            format!(
                "the instrumented program (fences off, no stress) ends as the original does ({})",
                self.instrumented.last().map_or("", String::as_str)
            )
        }
    }
}

/// The original and the instrumented program run natively, in turn, until a pair ends alike or
/// `TRIES` pairs have run. None where ctrl-c stopped a run.
pub fn check(
    app: &App,
    original: &Path,
    instrumented: &Path,
    log: &Path,
) -> std::io::Result<Option<Differential>> {
    let native = TestEnv::parse("no-str-").expect("a known environment");
    let off = TrialSpec::new(native, 1, &FenceSet::Ids(Default::default())).env_vars();
    let mut d = Differential::default();
    for _ in 0..TRIES {
        let Some((o, exit, _)) = trial::run_once(app, original, &[], log)? else {
            return Ok(None);
        };
        d.original.push(trial::describe(o, exit));
        let Some((i, exit, _)) = trial::run_once(app, instrumented, &off, log)? else {
            return Ok(None);
        };
        d.instrumented.push(trial::describe(i, exit));
        // Alike when the instrumented program ended as some run of the original did.
        d.differs = !d.instrumented.iter().any(|w| d.original.contains(w));
        if !d.differs {
            break;
        }
    }
    Ok(Some(d))
}

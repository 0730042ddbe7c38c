//! The sanity check before `wmfix test` and `wmfix reduce` run anything under stress. The
//! original should pass natively; when it does not, the program a user needs hardened may be
//! just one whose bug already shows without stress (cbe-ht; ct-octree run ten builds at a time),
//! so the meaningful check is that the program with every fence passes natively (no stress,
//! `WMFIX_FENCES=all`) in 3 of 3 runs. Only when that fails too is the program refused (exit 3):
//! fences cannot fix it, so no error could be blamed on weak memory.

use crate::app::config::App;
use crate::exit_code::{self, fail};
use crate::fences::set::FenceSet;
use crate::run::environment::TestEnv;
use crate::run::trial::{self, Outcome, TrialSpec};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Native runs of the program with every fence.
const FENCED_TRIES: usize = 3;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "passed")]
pub enum Sanity {
    /// The original passed natively.
    #[default]
    Original,
    /// The original failed natively (`why`); the program with every fence passed 3 of 3.
    AllFences { why: String },
}

impl Sanity {
    /// What a report says; `what` went on: "reduction", "test".
    pub fn describe(&self, what: &str) -> Option<String> {
        match self {
            Sanity::Original => None,
            Sanity::AllFences { why } => Some(format!(
                "the original fails natively ({why}); the program with every fence passed {FENCED_TRIES} of {FENCED_TRIES} native runs, so the {what} went on from it"
            )),
        }
    }
}

pub fn check(
    app: &App,
    original: &Path,
    instrumented: &Path,
    log: &Path,
) -> anyhow::Result<Sanity> {
    let why = match trial::baseline(app, original, log) {
        Ok(()) => return Ok(Sanity::Original),
        Err(e) if exit_code::code_of(&e) == exit_code::BASELINE_FAILED => e.to_string(),
        Err(e) => return Err(e),
    };
    let why = why.lines().next().unwrap_or_default().to_string();
    let native = TestEnv::parse("no-str-").expect("a known environment");
    let mut failed = vec![];
    for seed in 0..FENCED_TRIES {
        let spec = TrialSpec::new(native, seed as u64, &FenceSet::All);
        match trial::run_once(app, instrumented, &spec.env_vars(), log)? {
            Some((Outcome::Pass, _, _)) => {}
            Some((outcome, exit, _)) => failed.push(trial::describe(outcome, exit)),
            None => return Err(crate::interrupt::stopped("during the sanity check")),
        }
    }
    if failed.is_empty() {
        return Ok(Sanity::AllFences { why: short(&why) });
    }
    failed.dedup();
    Err(fail(
        exit_code::BASELINE_FAILED,
        format!(
            "{why}\nthe program with every fence fails natively too ({} of {FENCED_TRIES} runs: {}): fences cannot fix it; output in {}",
            failed.len(),
            failed.join("; "),
            log.display()
        ),
    ))
}

/// The baseline's reasons: `... runs (REASONS), so no error ...`.
fn short(why: &str) -> String {
    let start = why.find("runs (").map_or(0, |i| i + "runs (".len());
    let end = why
        .rfind("), so")
        .filter(|e| *e >= start)
        .unwrap_or(why.len());
    why[start..end].to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_reasons_keep_their_own_parentheses() {
        let why = "the original program fails its post-condition in 3 of 3 runs (failed its post-condition (exit code 1)), so no error could be blamed on weak memory; last output in x:";
        assert_eq!(super::short(why), "failed its post-condition (exit code 1)");
    }
}

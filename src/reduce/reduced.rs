//! What a reduction found (`Reduced`), and the evidence beside its fences: the first set and
//! the fences no run may remove (`Start`), the checks that erred without a kept fence (`Erred`).

use crate::fences::id::{FenceId, Ids};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A reduction's first set, given (the race detector's), and the fences of it that stay
/// whatever the runs show (those ordering an observed race).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Start {
    pub fences: Ids,
    pub proven: Ids,
}

/// A check that erred without one kept fence: a removal of it alone, or the stability check
/// that add-back traced to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Erred {
    pub errors: usize,
    pub runs: usize,
    #[serde(default)]
    pub add_back: bool,
}

impl std::fmt::Display for Erred {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        let pct = 100.0 * self.errors as f64 / self.runs.max(1) as f64;
        let what = if self.add_back {
            "add-back: the stability check without it erred"
        } else {
            "stress: erred without it"
        };
        write!(
            f,
            "{what} in {} of {} runs ({pct:.1}%)",
            self.errors, self.runs
        )
    }
}

#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct Reduced {
    pub fences: Ids,
    /// True only when a stability check passed (or the program never erred without fences in
    /// a full calibration); else `fences` passed their last check at most.
    pub complete: bool,
    /// The budget ended before the check with every fence or the calibration: nothing was
    /// decided and every fence is kept.
    #[serde(default)]
    pub undecided: bool,
    /// Kept fences of a loop condition whose placement at the top of the body is off: the
    /// check (and the stability check) passed with the one after the loop alone.
    #[serde(default)]
    pub after_loop_only: Ids,
    /// Kept fences that add-back found needed after a failed stability check: their absence
    /// errs rarely, so a few test runs would not show it.
    #[serde(default)]
    pub added_back: Ids,
    /// Fences dropped after the check with every fence: its runs never executed them on global
    /// memory (`run::coverage`), so they order nothing across blocks.
    #[serde(default, skip_serializing_if = "Ids::is_empty")]
    pub off_global: Ids,
    /// Runs per check at the end.
    pub iterations: usize,
    pub checks: usize,
    pub cached_checks: usize,
    pub runs: usize,
    pub seconds: f64,
    /// Errors and runs of the program without fences (statistical stability or adaptive checks).
    pub unfenced: Option<(usize, usize)>,
    /// The rate assumed for a set lacking a needed fence (`checks` says how it is chosen).
    pub assumed_rate: Option<f64>,
    /// Probability that one check of `iterations` runs misses an error at `assumed_rate`.
    #[serde(default)]
    pub check_miss_probability: Option<f64>,
    /// Runs of the final stability check.
    pub stability_runs: usize,
    /// Probability that an error at `stability_rate` would have gone unseen in those runs.
    pub miss_probability: Option<f64>,
    /// The rate the stability check was sized for: `assumed_rate`, or `rare_rate` where lower.
    #[serde(default)]
    pub stability_rate: Option<f64>,
    /// Whether the program was checked with every fence on. Not when a given start set passed
    /// its stability check: a passing set stands for every fence's sanity check, which only a
    /// failed one (add-back, a restart) needs.
    #[serde(default = "yes")]
    pub every_fence_checked: bool,
    /// Fences kept whatever the runs showed: each orders a race the detector saw (`--oracle
    /// race`), which stress may be unable to show.
    #[serde(default, skip_serializing_if = "Ids::is_empty")]
    pub proven: Ids,
    /// Kept fences whose removal a check saw err, with that check's errors and runs.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub erred_without: BTreeMap<FenceId, Erred>,
    pub note: String,
}

fn yes() -> bool {
    true
}

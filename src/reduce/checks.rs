//! How many runs a check gets. The paper's schedule is a fixed I, doubled when the stability
//! check fails. The adaptive one sizes each check from the rate at which a set that lacks a
//! needed fence errs, so that such a set is caught with the requested confidence: the 95% lower
//! bound of the unfenced rate, lowered to the pooled rate of the removals the checks rejected
//! where that is clearly lower (a set lacking one needed fence may err less often than one
//! lacking all), halved each time the stability check catches what the checks missed.
//! The pooled rate is the point estimate, not its lower bound: a rejected check stops at its
//! first error, so each adds about one error, and the lower bound of a few errors is a tenth of
//! the rate (ct-octree on an H100: 457 runs a check, no reduction in 540 s). What the result
//! promises comes from the stability check, sized for the lower of this rate and `rare_rate`.

use crate::stats;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Checks {
    /// The paper's: `iterations` runs per check, doubled when the paper's stability check
    /// (`--stable-minutes`) fails.
    Fixed,
    /// Runs per check from the measured error rates, so that a check misses a set lacking a
    /// needed fence with probability at most `1 - confidence`.
    Adaptive { confidence: f64 },
}

impl Default for Checks {
    /// Reductions recorded before checks were adaptive had the paper's schedule.
    fn default() -> Checks {
        Checks::Fixed
    }
}

/// Rejected removals needed before their pooled rate is trusted to lower the assumed rate.
const POOL_AFTER: usize = 3;

/// What the reduction has learnt of error rates.
#[derive(Clone, Debug, Default)]
pub struct Rates {
    /// Errors and runs of the program without fences.
    pub unfenced: Option<(usize, usize)>,
    /// Checks that erred, and their errors and runs in total.
    pub rejected: (usize, usize, usize),
    /// How often the stability check failed.
    pub stability_failures: u32,
}

impl Rates {
    /// The rate assumed for a set that lacks a needed fence; None before any error was seen.
    pub fn assumed(&self, checks: Checks) -> Option<f64> {
        let (e, n) = self.unfenced.filter(|(e, _)| *e > 0)?;
        let unfenced = stats::wilson95(e, n).0;
        match checks {
            Checks::Fixed => Some(unfenced),
            Checks::Adaptive { .. } => {
                let (count, e, n) = self.rejected;
                // Lowered only on evidence that rejected removals err less often than the
                // unfenced program (their interval lies below its lower bound).
                let hi = stats::wilson95(e, n).1;
                let pooled = if count >= POOL_AFTER && hi < unfenced {
                    e as f64 / n as f64
                } else {
                    1.0
                };
                let halved = 0.5f64.powi(self.stability_failures as i32);
                Some(unfenced.min(pooled) * halved)
            }
        }
    }

    pub fn reject(&mut self, errors: usize, runs: usize) {
        let (c, e, n) = self.rejected;
        self.rejected = (c + 1, e + errors, n + runs);
    }
}

/// Runs without error needed to be `confidence` sure that a bug erring at rate `p` would show.
pub fn runs_for(confidence: f64, p: f64) -> usize {
    if p >= 1.0 {
        return 1;
    }
    if p <= 0.0 {
        return usize::MAX;
    }
    ((1.0 - confidence).ln() / (1.0 - p).ln()).ceil().max(1.0) as usize
}

/// The probability that `runs` clean runs miss an error of rate `p`.
pub fn miss(p: f64, runs: usize) -> f64 {
    (1.0 - p).powf(runs as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_follow_the_rate() {
        assert_eq!(runs_for(0.99, 0.05), 90);
        assert_eq!(runs_for(0.99, 1.0), 1);
        assert!(miss(0.05, 90) <= 0.01);
    }

    #[test]
    fn rejected_removals_lower_the_assumed_rate_once_there_are_enough() {
        let adaptive = Checks::Adaptive { confidence: 0.99 };
        let mut r = Rates {
            unfenced: Some((20, 20)),
            ..Rates::default()
        };
        let high = r.assumed(adaptive).unwrap();
        assert!(high > 0.8, "{high}");
        r.reject(1, 40);
        r.reject(1, 30);
        assert_eq!(r.assumed(adaptive), Some(high), "two are not enough");
        r.reject(1, 50);
        let low = r.assumed(adaptive).unwrap();
        assert_eq!(low, 3.0 / 120.0, "the pooled point estimate");
        assert_eq!(
            r.assumed(Checks::Fixed),
            Some(high),
            "the paper's ignores them"
        );
        r.stability_failures = 1;
        assert_eq!(r.assumed(adaptive), Some(low / 2.0));
    }

    #[test]
    fn checks_that_stop_at_their_first_error_size_the_next_for_their_rate() {
        // Three removals rejected at their first error, each after 20 runs: a rate near 5%,
        // 90 runs a check (the lower bound of 3 in 60 would ask for 268).
        let adaptive = Checks::Adaptive { confidence: 0.99 };
        let mut r = Rates {
            unfenced: Some((100, 100)),
            ..Rates::default()
        };
        for _ in 0..3 {
            r.reject(1, 20);
        }
        let p = r.assumed(adaptive).unwrap();
        assert_eq!(runs_for(0.99, p), 90, "{p}");
    }
}

//! The oracle the fence reducer asks: "run the program with these fences enabled; did it err?"
//! Behind a trait, so the reduction is tested against a simulated application on a CPU and run
//! against the real one on a GPU.

use crate::app::config::App;
use crate::fences::id::{FenceId, Ids};
use crate::fences::set::FenceSet;
use crate::run::batch::{self, Batch, Budget};
use crate::run::coverage::{self, Coverage};
use crate::run::environment::TestEnv;
use crate::run::trial::{Outcome, TrialSpec};
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::{Duration, Instant};
/// How long one request may run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// At most this many runs...
    pub max_runs: Option<usize>,
    /// ...or this many seconds...
    pub max_seconds: Option<f64>,
    /// ...stopping once this many runs have erred.
    pub stop_after_errors: usize,
    /// The index of the first run (each run's seed depends on it): not 0 only for the rest of
    /// a request that was cut short, continued after a resume (`journal`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub first_run: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Request {
    /// Whether `t` answers the whole request, rather than what a budget or an interruption
    /// let it run.
    pub fn finished_by(&self, t: &Tally) -> bool {
        t.errors >= self.stop_after_errors
            || self.max_runs.is_some_and(|n| t.runs >= n)
            || self.max_seconds.is_some_and(|s| t.seconds >= s)
    }

    /// What is left of the request once `t` was run of it: the runs after t's, with their seeds.
    pub fn rest_after(&self, t: &Tally) -> Request {
        Request {
            max_runs: self.max_runs.map(|n| n.saturating_sub(t.runs)),
            max_seconds: self.max_seconds.map(|s| (s - t.seconds).max(0.0)),
            stop_after_errors: self.stop_after_errors.saturating_sub(t.errors),
            first_run: self.first_run + t.runs,
        }
    }

    /// All of `runs` runs, whatever errs: the check with every fence.
    pub fn runs(runs: usize) -> Request {
        Request {
            max_runs: Some(runs),
            max_seconds: None,
            stop_after_errors: usize::MAX,
            first_run: 0,
        }
    }

    /// The paper's CheckApplication: `runs` runs, stopping at the first error.
    pub fn check(runs: usize) -> Request {
        Request {
            max_runs: Some(runs),
            max_seconds: None,
            stop_after_errors: 1,
            first_run: 0,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Tally {
    pub runs: usize,
    pub errors: usize,
    /// Errors that were time-outs (counted in `errors` too): a run slower than the study's
    /// `timeout_s`, which no fence removes. Absent in journals written before it was counted.
    #[serde(default)]
    pub timeouts: usize,
    pub seconds: f64,
    /// The fence sites the runs executed, and which on global memory (`run::coverage`): the
    /// union of the runs that left coverage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coverage: Option<Coverage>,
}

impl Tally {
    /// This tally followed by `more` (the rest of the same request).
    pub fn then(self, more: Tally) -> Tally {
        Tally {
            runs: self.runs + more.runs,
            errors: self.errors + more.errors,
            timeouts: self.timeouts + more.timeouts,
            seconds: self.seconds + more.seconds,
            coverage: coverage::union(self.coverage.iter().chain(&more.coverage)),
        }
    }
}

pub trait Oracle {
    /// Runs the program with `enabled` fences as `request` says, the placement at the top of
    /// the loop body of each fence of `body_off` off (`WMFIX_FENCES_IN_LOOP`): only its
    /// placement after the loop stays. `nonce` names the request so that its seeds are the
    /// same if it is ever asked again (after a resume). `seconds_left` of the reduction's
    /// budget cap the request, and are not part of it: a resumed reduction asks the same
    /// requests with a different budget left.
    fn run_placed(
        &mut self,
        enabled: &Ids,
        body_off: &Ids,
        request: Request,
        nonce: u64,
        seconds_left: f64,
    ) -> Result<Tally>;
}

/// The real application: the instrumented build, run under one testing environment.
pub struct Program<'a> {
    pub app: &'a App,
    pub tree: PathBuf,
    pub logs: PathBuf,
    pub env: TestEnv,
    pub jobs: usize,
    pub gpus: Vec<String>,
    pub seed: u64,
    /// Variables every run gets (the chip profile: `run::profile`).
    pub run_env: Vec<(String, String)>,
    /// Every fence a launched kernel reaches: runs with all of them on record their coverage
    /// (the check with every fence, which `Reducer` drops fences after).
    pub every_fence: Ids,
    /// Warm processes for the runs (`--warm`), kept across checks.
    pub warm: Option<&'a crate::run::warm::Pool>,
}

impl Oracle for Program<'_> {
    fn run_placed(
        &mut self,
        enabled: &Ids,
        body_off: &Ids,
        request: Request,
        nonce: u64,
        seconds_left: f64,
    ) -> Result<Tally> {
        let batch = Batch {
            app: self.app,
            tree: &self.tree,
            jobs: self.jobs,
            gpus: &self.gpus,
            logs: &self.logs,
            env: &self.run_env,
            warm: self.warm,
        };
        let seconds = request
            .max_seconds
            .map_or(seconds_left, |s| s.min(seconds_left));
        let budget = Budget::Until(Instant::now() + Duration::from_secs_f64(seconds.max(0.0)));
        let budget = match request.max_runs {
            Some(n) => budget.and_runs(n),
            None => budget,
        };
        let fences = FenceSet::Ids(enabled.clone());
        // The in-body placements that stay on: every enabled fence's but those of `body_off`.
        let in_loop = (!body_off.is_empty())
            .then(|| FenceSet::Ids(enabled.difference(body_off).copied().collect()));
        let (env, seed, first) = (self.env, self.seed, request.first_run);
        let coverage = body_off.is_empty() && enabled.is_superset(&self.every_fence);
        let spec = move |i| {
            let mut spec = TrialSpec::new(env, crate::rng::seed(seed, nonce, first + i), &fences);
            spec.fences_in_loop = in_loop.clone();
            spec.coverage = coverage;
            spec
        };
        let start = Instant::now();
        let mut in_order = InOrder::new(request.stop_after_errors);
        let mut on_record = |rec: crate::run::trial::RunRecord| {
            if !rec.outcome.is_error()
                && let Some(log) = &rec.log
            {
                let _ = std::fs::remove_file(self.logs.join(log));
            }
            in_order.add(rec.id - request.first_run, rec.outcome, rec.coverage);
            !in_order.decided()
        };
        batch::run(&batch, budget, request.first_run, &spec, &mut on_record)?;
        let mut tally = in_order.tally;
        tally.seconds = start.elapsed().as_secs_f64();
        // Interrupted, the runs so far are still the answer's start: the journal keeps them
        // (and a resume runs the rest) before the interruption is raised.
        Ok(tally)
    }
}

/// A request's runs judged in the order of their indices, whatever order they end in: its
/// answer is the runs up to its `stop_after_errors`-th error by index (or the unbroken start of
/// those that ended), as one run at a time would give. So a reduction's checks do not depend on
/// how many runs went at a time, and a resumed request (`Request::rest_after`) goes on from the
/// first run not counted.
struct InOrder {
    stop_after_errors: usize,
    /// The runs counted: those of indices 0..tally.runs.
    tally: Tally,
    /// Runs that ended before an earlier one, by index.
    waiting: std::collections::BTreeMap<usize, (Outcome, Option<Coverage>)>,
}

impl InOrder {
    fn new(stop_after_errors: usize) -> InOrder {
        InOrder {
            stop_after_errors,
            tally: Tally::default(),
            waiting: Default::default(),
        }
    }

    /// Run `i` (from the request's first) ended with `outcome`.
    fn add(&mut self, i: usize, outcome: Outcome, coverage: Option<Coverage>) {
        if self.decided() || i < self.tally.runs {
            return;
        }
        self.waiting.insert(i, (outcome, coverage));
        while !self.decided() {
            let Some((outcome, coverage)) = self.waiting.remove(&self.tally.runs) else {
                break;
            };
            let t = &mut self.tally;
            t.runs += 1;
            if let Some(c) = &coverage {
                t.coverage = coverage::union(t.coverage.iter().chain([c]));
            }
            if outcome.is_error() {
                t.errors += 1;
                t.timeouts += usize::from(outcome == Outcome::Timeout);
            }
        }
    }

    /// Whether the runs counted answer the request: they hold its errors.
    fn decided(&self) -> bool {
        self.tally.errors >= self.stop_after_errors
    }
}

/// A simulated application: it errs with probability `p` per run unless every fence of
/// `required` is enabled, with probability `q` more for each fence `(id, q)` of `rare` that is
/// off (independent bugs, as a fence whose absence errs in 1% of runs beside one that errs in
/// all), and times out with probability `timeout_p` whatever its fences (a run slower than its
/// timeout, counted once). Each run "takes" `run_seconds`. Deterministic in (seed, nonce).
pub struct Simulated {
    pub required: Ids,
    pub p: f64,
    pub rare: Vec<(FenceId, f64)>,
    pub timeout_p: f64,
    pub run_seconds: f64,
    pub seed: u64,
    /// Every run so far, for tests that count them.
    pub runs: usize,
}

impl Oracle for Simulated {
    fn run_placed(
        &mut self,
        enabled: &Ids,
        body_off: &Ids,
        request: Request,
        nonce: u64,
        seconds_left: f64,
    ) -> Result<Tally> {
        anyhow::ensure!(
            body_off.is_empty(),
            "a simulated application has no placements to switch"
        );
        // The chance that a bug shows: each missing fence's independently.
        let mut p = if self.required.is_subset(enabled) {
            0.0
        } else {
            self.p
        };
        for (id, q) in &self.rare {
            if !enabled.contains(id) {
                p += (1.0 - p) * q;
            }
        }
        let mut t = Tally::default();
        loop {
            let more_runs = request.max_runs.is_none_or(|n| t.runs < n);
            let more_time = t.seconds
                < request
                    .max_seconds
                    .map_or(seconds_left, |s| s.min(seconds_left));
            if !more_runs || !more_time || t.errors >= request.stop_after_errors {
                return Ok(t);
            }
            let u = crate::rng::unit(self.seed, nonce, request.first_run + t.runs);
            t.runs += 1;
            self.runs += 1;
            t.seconds += self.run_seconds;
            if u < self.timeout_p {
                t.errors += 1;
                t.timeouts += 1;
            } else if u < p {
                t.errors += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_counted_in_the_order_of_their_indices_whatever_order_they_end_in() {
        // Two errors stop the request: runs 1 and 4 err by index, but 4 and 6 end first.
        let ended = [
            (4, Outcome::Fail),
            (6, Outcome::Fail),
            (0, Outcome::Pass),
            (2, Outcome::Pass),
            (1, Outcome::Timeout),
            (5, Outcome::Pass),
        ];
        let mut in_order = InOrder::new(2);
        for (k, (i, outcome)) in ended.into_iter().enumerate() {
            assert!(!in_order.decided(), "decided before run {i} (record {k})");
            in_order.add(i, outcome, None);
        }
        assert!(!in_order.decided(), "run 3 has not ended");
        in_order.add(3, Outcome::Pass, None);
        assert!(in_order.decided());
        let t = in_order.tally;
        assert_eq!((t.runs, t.errors, t.timeouts), (5, 2, 1));
    }

    #[test]
    fn without_its_errors_a_request_counts_the_unbroken_start_of_its_runs() {
        let mut in_order = InOrder::new(usize::MAX);
        for i in [0, 1, 3, 4] {
            in_order.add(i, Outcome::Fail, None);
        }
        let t = in_order.tally;
        assert_eq!((t.runs, t.errors), (2, 2));
        assert_eq!(Request::check(10).rest_after(&t).first_run, 2);
    }
}

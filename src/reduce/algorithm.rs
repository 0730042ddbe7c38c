//! Empirical fence insertion (paper 000, Alg. 1): from all fences, binary then linear reduction
//! with `I` runs per check, a stability check, and a restart with `2I` when that fails. Options
//! add a cache of checked sets, ddmin-style splitting, and a statistical stability criterion.

use crate::fences::id::{FenceId, Ids};
use crate::reduce::oracle::{Oracle, Request, Tally};
use crate::stats;
use anyhow::Result;
use serde::Serialize;
use std::collections::HashMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Split {
    /// The paper's: drop the first half, else the second half, while one succeeds.
    Halves,
    /// Delta debugging: drop one of n chunks; refine n up to single fences.
    Ddmin,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, serde::Deserialize)]
pub enum Stability {
    /// The paper's: no error in this many minutes of runs.
    Minutes(f64),
    /// No error in as many runs as give `confidence` that an error at the unfenced program's
    /// (lower-bound) rate would have shown.
    Statistical { confidence: f64 },
}

#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct Settings {
    pub split: Split,
    pub iterations: usize,
    pub stability: Stability,
    pub cache: bool,
    /// Stop with the best result so far after this many seconds of runs.
    pub budget_seconds: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    Sanity,
    Calibrate,
    Binary,
    Linear,
    Stability,
}

/// What the live progress line shows, and what an interrupted reduction reports: given before
/// each request, so it holds what was known before the request that a ctrl-c cuts short.
#[derive(Clone, Debug)]
pub struct Progress {
    pub phase: Phase,
    pub fences: usize,
    pub iterations: usize,
    pub seconds: f64,
    /// The best set so far: the last that passed its check (all fences before any did).
    pub held: Ids,
    pub checks: usize,
    pub cached_checks: usize,
    pub runs: usize,
}

#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct Reduced {
    pub fences: Ids,
    /// False when the budget ran out: `fences` then passed its last check but not a stability check.
    pub complete: bool,
    pub iterations: usize,
    pub checks: usize,
    pub cached_checks: usize,
    pub runs: usize,
    pub seconds: f64,
    /// Errors and runs of the program without fences (statistical stability only).
    pub unfenced: Option<(usize, usize)>,
    /// The rate assumed for a missing needed fence: the 95% lower bound of the unfenced rate.
    pub assumed_rate: Option<f64>,
    /// Runs of the final stability check.
    pub stability_runs: usize,
    /// Probability that an error at `assumed_rate` would have gone unseen in those runs.
    pub miss_probability: Option<f64>,
    pub note: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ReduceError {
    #[error(
        "the program still fails with every fence enabled ({errors} of {runs} runs): its errors are not ones fences can fix"
    )]
    UnstableWithAllFences { errors: usize, runs: usize },
}

/// The unfenced program's (errors, runs), and the rate assumed for a missing needed fence.
type Calibration = (Option<(usize, usize)>, Option<f64>);

struct Reducer<'a> {
    oracle: &'a mut dyn Oracle,
    settings: Settings,
    progress: &'a mut dyn FnMut(&Progress),
    /// Per checked set: the most runs seen without error, or None once it erred.
    cache: HashMap<Ids, Option<usize>>,
    failing: Vec<Ids>,
    nonce: u64,
    checks: usize,
    cached_checks: usize,
    runs: usize,
    seconds: f64,
    phase: Phase,
    out_of_budget: bool,
    /// The set binary and linear reduction hold now.
    held: Ids,
}

pub fn reduce(
    oracle: &mut dyn Oracle,
    all: &Ids,
    settings: Settings,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Reduced> {
    let mut r = Reducer {
        oracle,
        settings,
        progress,
        cache: HashMap::new(),
        failing: vec![],
        nonce: 0,
        checks: 0,
        cached_checks: 0,
        runs: 0,
        seconds: 0.0,
        phase: Phase::Sanity,
        out_of_budget: false,
        held: all.clone(),
    };
    r.run(all)
}

impl Reducer<'_> {
    fn run(&mut self, all: &Ids) -> Result<Reduced> {
        let mut i = self.settings.iterations.max(1);
        // The paper starts from an empirically stable set: check that first.
        let sanity = self.ask(
            all,
            Request {
                max_runs: Some(i),
                max_seconds: None,
                stop_after_errors: usize::MAX,
            },
            i,
        )?;
        if sanity.errors > 0 {
            return Err(ReduceError::UnstableWithAllFences {
                errors: sanity.errors,
                runs: sanity.runs,
            }
            .into());
        }
        let (unfenced, assumed_rate) = match self.settings.stability {
            Stability::Statistical { .. } => self.calibrate(i)?,
            Stability::Minutes(_) => (None, None),
        };
        if let (Some((0, runs)), _) = (unfenced, assumed_rate) {
            let note =
                format!("no error in {runs} runs without fences: no fence is empirically needed");
            return Ok(self.result(Ids::new(), true, i, unfenced, None, 0, note));
        }
        let best = loop {
            let fb = self.binary(all.clone(), i)?;
            let fl = self.linear(fb, i)?;
            if self.out_of_budget {
                break fl;
            }
            let (stable, runs) = self.stable(&fl, i, assumed_rate)?;
            if stable {
                let miss = assumed_rate.map(|p| (1.0 - p).powi(runs as i32));
                return Ok(self
                    .result(fl, true, i, unfenced, assumed_rate, runs, String::new())
                    .with_miss(miss));
            }
            if self.out_of_budget {
                break fl;
            }
            i *= 2;
        };
        let note = "budget spent before a stable result: these fences passed their last check only"
            .to_string();
        Ok(self.result(best, false, i, unfenced, assumed_rate, 0, note))
    }

    #[allow(clippy::too_many_arguments)]
    fn result(
        &self,
        fences: Ids,
        complete: bool,
        i: usize,
        unfenced: Option<(usize, usize)>,
        assumed_rate: Option<f64>,
        stability_runs: usize,
        note: String,
    ) -> Reduced {
        Reduced {
            fences,
            complete,
            iterations: i,
            checks: self.checks,
            cached_checks: self.cached_checks,
            runs: self.runs,
            seconds: self.seconds,
            unfenced,
            assumed_rate,
            stability_runs,
            miss_probability: None,
            note,
        }
    }

    /// The unfenced error rate, sampled until 20 errors or 10 checks' worth of runs.
    fn calibrate(&mut self, i: usize) -> Result<Calibration> {
        self.phase = Phase::Calibrate;
        let req = Request {
            max_runs: Some((10 * i).max(100)),
            max_seconds: None,
            stop_after_errors: 20,
        };
        let t = self.ask(&Ids::new(), req, 0)?;
        let rate = (t.errors > 0).then(|| stats::wilson95(t.errors, t.runs).0);
        Ok((Some((t.errors, t.runs)), rate))
    }

    fn stable(&mut self, f: &Ids, i: usize, assumed_rate: Option<f64>) -> Result<(bool, usize)> {
        self.phase = Phase::Stability;
        let req = match (self.settings.stability, assumed_rate) {
            (Stability::Minutes(m), _) => Request {
                max_runs: None,
                max_seconds: Some(m * 60.0),
                stop_after_errors: 1,
            },
            (Stability::Statistical { confidence }, Some(p)) => {
                Request::check(runs_for(confidence, p).max(i))
            }
            (Stability::Statistical { .. }, None) => Request::check(i),
        };
        let t = self.ask(f, req, i)?;
        Ok((t.errors == 0 && !self.out_of_budget, t.runs))
    }

    fn binary(&mut self, mut f: Ids, i: usize) -> Result<Ids> {
        self.phase = Phase::Binary;
        self.held = f.clone();
        match self.settings.split {
            Split::Halves => {
                while f.len() > 1 && !self.out_of_budget {
                    let v: Vec<FenceId> = f.iter().copied().collect();
                    let (h1, h2) = v.split_at(v.len() / 2);
                    if let Some(rest) = self.try_remove(&f, h1, i)? {
                        f = rest;
                    } else if let Some(rest) = self.try_remove(&f, h2, i)? {
                        f = rest;
                    } else {
                        break;
                    }
                }
            }
            Split::Ddmin => {
                let mut n = 2;
                while f.len() >= 2 && !self.out_of_budget {
                    let v: Vec<FenceId> = f.iter().copied().collect();
                    let mut removed = false;
                    for chunk in chunks(&v, n) {
                        if let Some(rest) = self.try_remove(&f, chunk, i)? {
                            f = rest;
                            n = (n - 1).max(2);
                            removed = true;
                            break;
                        }
                    }
                    if !removed {
                        if n >= f.len() {
                            break;
                        }
                        n = (2 * n).min(f.len());
                    }
                }
            }
        }
        Ok(f)
    }

    fn linear(&mut self, mut f: Ids, i: usize) -> Result<Ids> {
        self.phase = Phase::Linear;
        for fence in f.clone() {
            if self.out_of_budget {
                break;
            }
            if let Some(rest) = self.try_remove(&f, &[fence], i)? {
                f = rest;
            }
        }
        Ok(f)
    }

    /// CheckApplication(F \ remove, I): the smaller set if it showed no error.
    fn try_remove(&mut self, f: &Ids, remove: &[FenceId], i: usize) -> Result<Option<Ids>> {
        let rest: Ids = f.iter().copied().filter(|x| !remove.contains(x)).collect();
        let passed = self.check(&rest, i)?;
        if passed {
            self.held = rest.clone();
        }
        Ok(passed.then_some(rest))
    }

    fn check(&mut self, f: &Ids, i: usize) -> Result<bool> {
        if self.settings.cache {
            // A set that erred still errs with fewer fences; one that passed i runs passes.
            if self.failing.iter().any(|g| f.is_subset(g)) {
                self.cached_checks += 1;
                return Ok(false);
            }
            if self
                .cache
                .get(f)
                .is_some_and(|c| c.is_some_and(|runs| runs >= i))
            {
                self.cached_checks += 1;
                return Ok(true);
            }
        }
        let t = self.ask(f, Request::check(i), i)?;
        Ok(t.errors == 0 && !self.out_of_budget)
    }

    /// One oracle request, within the budget; records what it learnt.
    fn ask(&mut self, f: &Ids, req: Request, i: usize) -> Result<Tally> {
        let left = self.settings.budget_seconds - self.seconds;
        if left <= 0.0 {
            self.out_of_budget = true;
            return Ok(Tally {
                runs: 0,
                errors: 0,
                seconds: 0.0,
            });
        }
        (self.progress)(&Progress {
            phase: self.phase,
            fences: f.len(),
            iterations: i,
            seconds: self.seconds,
            held: self.held.clone(),
            checks: self.checks,
            cached_checks: self.cached_checks,
            runs: self.runs,
        });
        self.nonce += 1;
        let t = self.oracle.run(f, req, self.nonce, left)?;
        self.checks += 1;
        self.runs += t.runs;
        self.seconds += t.seconds;
        if self.seconds >= self.settings.budget_seconds {
            // Whatever this request showed, it may have been cut short.
            self.out_of_budget = true;
        }
        if t.errors > 0 {
            self.cache.insert(f.clone(), None);
            self.failing.push(f.clone());
        } else {
            let e = self.cache.entry(f.clone()).or_insert(Some(0));
            *e = e.map(|r| r.max(t.runs));
            if req.max_runs.is_some_and(|n| t.runs < n) {
                // Stopped by the budget, not by completing its runs.
                self.out_of_budget = true;
            }
        }
        Ok(t)
    }
}

impl Reduced {
    fn with_miss(mut self, miss: Option<f64>) -> Reduced {
        self.miss_probability = miss;
        self
    }
}

/// Runs without error needed to be `confidence` sure that a bug erring at rate `p` would show.
pub fn runs_for(confidence: f64, p: f64) -> usize {
    if p >= 1.0 {
        return 1;
    }
    ((1.0 - confidence).ln() / (1.0 - p).ln()).ceil().max(1.0) as usize
}

/// `v` cut into `n` chunks of near-equal length, in order.
fn chunks<T>(v: &[T], n: usize) -> Vec<&[T]> {
    let n = n.clamp(1, v.len().max(1));
    (0..n)
        .map(|k| &v[k * v.len() / n..(k + 1) * v.len() / n])
        .filter(|c| !c.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reduce::oracle::Simulated;

    fn set(v: &[usize]) -> Ids {
        v.iter().copied().map(FenceId).collect()
    }

    fn settings(split: Split, stability: Stability, cache: bool) -> Settings {
        Settings {
            split,
            iterations: 32,
            stability,
            cache,
            budget_seconds: 1e9,
        }
    }

    fn sim(required: &[usize], p: f64, seed: u64) -> Simulated {
        Simulated {
            required: set(required),
            p,
            run_seconds: 0.3,
            seed,
            runs: 0,
        }
    }

    #[test]
    fn finds_the_required_fences_at_the_papers_sizes() {
        let cases: [(usize, &[usize]); 4] = [
            (10, &[3, 4, 8, 9]),
            (33, &[17]),
            (51, &[5, 40]),
            (90, &[0, 31, 32, 89]),
        ];
        for (n, required) in cases {
            for p in [1.0, 0.05] {
                for (split, cache) in [
                    (Split::Halves, false),
                    (Split::Halves, true),
                    (Split::Ddmin, true),
                ] {
                    let stability = Stability::Statistical { confidence: 0.99 };
                    let mut o = sim(required, p, n as u64);
                    let all = FenceId::all(n);
                    let r = reduce(&mut o, &all, settings(split, stability, cache), &mut |_| {})
                        .unwrap();
                    assert_eq!(
                        r.fences,
                        set(required),
                        "n={n} p={p} {split:?} cache={cache}: {r:?}"
                    );
                    assert!(r.complete);
                    assert_eq!(r.runs, o.runs);
                }
            }
        }
    }

    #[test]
    fn all_fences_failing_is_an_error() {
        let mut o = Simulated {
            required: set(&[99]),
            p: 1.0,
            run_seconds: 0.1,
            seed: 1,
            runs: 0,
        };
        let e = reduce(
            &mut o,
            &set(&[0, 1]),
            settings(Split::Halves, Stability::Minutes(1.0), true),
            &mut |_| {},
        );
        assert!(
            e.unwrap_err()
                .to_string()
                .contains("still fails with every fence")
        );
    }

    #[test]
    fn a_program_without_errors_needs_no_fence() {
        let mut o = sim(&[], 0.5, 1);
        let r = reduce(
            &mut o,
            &FenceId::all(5),
            settings(
                Split::Halves,
                Stability::Statistical { confidence: 0.99 },
                true,
            ),
            &mut |_| {},
        )
        .unwrap();
        assert!(r.fences.is_empty());
        assert!(r.note.contains("no fence is empirically needed"));
    }

    #[test]
    fn fixed_minutes_stability_runs_that_long() {
        let mut o = sim(&[2], 1.0, 1);
        let r = reduce(
            &mut o,
            &FenceId::all(4),
            settings(Split::Halves, Stability::Minutes(1.0), false),
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(r.fences, set(&[2]));
        assert!(
            r.stability_runs >= 200,
            "60 s of 0.3 s runs: {}",
            r.stability_runs
        );
    }

    #[test]
    fn the_budget_stops_with_the_best_so_far() {
        let mut o = sim(&[7], 0.05, 3);
        let mut s = settings(
            Split::Halves,
            Stability::Statistical { confidence: 0.99 },
            true,
        );
        s.budget_seconds = 30.0;
        let r = reduce(&mut o, &FenceId::all(20), s, &mut |_| {}).unwrap();
        assert!(!r.complete);
        assert!(r.fences.contains(&FenceId(7)));
        assert!(r.seconds <= 30.0 + 0.3 + 1e-9, "{}", r.seconds);
    }

    #[test]
    fn progress_holds_the_best_set_so_far() {
        let mut o = sim(&[3, 8], 1.0, 2);
        let mut seen: Vec<Progress> = vec![];
        let s = settings(Split::Halves, Stability::Minutes(0.1), true);
        let r = reduce(&mut o, &FenceId::all(12), s, &mut |p| seen.push(p.clone())).unwrap();
        assert_eq!(seen[0].held.len(), 12, "all fences before any check passed");
        // Every set held passed a check, so it keeps the needed fences, and they only shrink
        // within a round; before the stability check the held set is the result.
        assert!(seen.iter().all(|p| p.held.is_superset(&set(&[3, 8]))));
        let last = seen.last().unwrap();
        assert_eq!(last.phase, Phase::Stability);
        assert_eq!(last.held, r.fences);
        assert_eq!(last.checks + 1, r.checks);
    }

    #[test]
    fn statistical_runs_follow_the_rate() {
        assert_eq!(runs_for(0.99, 0.05), 90);
        assert_eq!(runs_for(0.99, 1.0), 1);
        assert_eq!(
            chunks(&[1, 2, 3, 4, 5], 2),
            vec![&[1, 2][..], &[3, 4, 5][..]]
        );
    }

    #[test]
    fn caching_and_ddmin_save_checks() {
        let all = FenceId::all(90);
        let stats = |split, cache| {
            let mut o = sim(&[0, 31, 32, 89], 1.0, 5);
            let r = reduce(
                &mut o,
                &all,
                settings(split, Stability::Statistical { confidence: 0.99 }, cache),
                &mut |_| {},
            )
            .unwrap();
            (r.checks, r.runs)
        };
        let paper = stats(Split::Halves, false);
        let cached = stats(Split::Halves, true);
        let ddmin = stats(Split::Ddmin, true);
        assert!(
            cached.0 <= paper.0 && ddmin.1 < paper.1,
            "paper {paper:?} cached {cached:?} ddmin {ddmin:?}"
        );
    }
}

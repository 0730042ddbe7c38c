//! Empirical fence insertion (Sorensen & Donaldson, PLDI 2016, Alg. 1): from all fences, binary then linear reduction
//! with `I` runs per check, a stability check, and a restart with `2I` when that fails. Options
//! add a cache of checked sets, ddmin and structure-aware splitting (`split`), adaptive check
//! sizes (`checks`), and a statistical stability criterion, after whose failure the needed
//! fences are searched among the dropped ones (add-back) instead of reducing again.
//!
//! Honesty: a result is `complete` only when a stability check (or, for a program that never
//! errs without fences, the full calibration) ran. A budget that ends before the check with
//! every fence or the calibration decides nothing: every fence is kept and `undecided` says so.

use crate::fences::id::{FenceId, Ids};
use crate::reduce::checks::{self, Checks, Rates};
pub use crate::reduce::error::ReduceError;
use crate::reduce::oracle::{Oracle, Request, Tally};
pub use crate::reduce::reduced::{Erred, Reduced, Start};
pub use crate::reduce::split::Split;
use crate::reduce::split::{self as splits, Remover};
use anyhow::Result;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

#[derive(Clone, Copy, Debug, PartialEq, Serialize, serde::Deserialize)]
pub enum Stability {
    /// The paper's: no error in this many minutes of runs.
    Minutes(f64),
    /// No error in as many runs as give `confidence` that an error at the assumed rate of a
    /// set lacking a needed fence would have shown.
    Statistical { confidence: f64 },
}

#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct Settings {
    pub split: Split,
    /// I: runs per check of the paper's schedule, and of the check with every fence.
    pub iterations: usize,
    #[serde(default)]
    pub checks: Checks,
    pub stability: Stability,
    /// The statistical stability check is sized for a set erring at no more than this rate,
    /// even where the unfenced program errs far more often: a set lacking one needed fence may
    /// err rarely (on the H200, ct-octree's and ls-bh-nf's reduced sets erred in 1 of 100 later
    /// runs). None: at the assumed rate alone (reductions recorded before this existed).
    #[serde(default)]
    pub rare_rate: Option<f64>,
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
    /// Loop-condition fences: after the loop alone?
    Placement,
    /// After a failed stability check: which dropped fence is needed?
    AddBack,
}

/// What the live progress line shows, and what an interrupted reduction reports: given before
/// each request, so it holds what was known before the request that a ctrl-c cuts short.
#[derive(Clone, Debug)]
pub struct Progress {
    pub phase: Phase,
    pub fences: usize,
    /// Runs per check now.
    pub iterations: usize,
    pub seconds: f64,
    /// The best set so far: the last that passed its check (all fences before any did).
    pub held: Ids,
    pub checks: usize,
    pub cached_checks: usize,
    pub runs: usize,
    /// Fences dropped after the check with every fence (`Reduced::off_global`).
    pub off_global: Ids,
    /// `Reduced::every_fence_checked`, so far.
    pub every_fence_checked: bool,
}

/// The check with every fence: the fences it leaves to reduce, or the result where the budget
/// ran out during it.
enum EveryFence {
    Passed(Ids),
    OutOfBudget(Box<Reduced>),
}

/// What `insert` found out about the fences beyond their ids (`fences.json`).
#[derive(Clone, Debug, Default)]
pub struct Structure {
    /// The fences of each kernel and device function (structure-aware split).
    pub groups: Vec<Ids>,
    /// Fences whose access is a loop condition (two placements: the top of the body and after
    /// the loop).
    pub loop_fences: Ids,
    /// Fences in functions no launched kernel reaches: never executed, so dropped before the
    /// first run.
    pub unreachable: Ids,
    /// Fences in library headers (preprocessed mode): tried for removal first and added back
    /// last, so that of two fences that order the same accesses the patchable one is kept.
    pub library: Ids,
}

struct Reducer<'a> {
    oracle: &'a mut dyn Oracle,
    settings: Settings,
    progress: &'a mut dyn FnMut(&Progress),
    /// Per checked set: the most runs seen without error, or None once it erred.
    cache: HashMap<Ids, Option<usize>>,
    failing: Vec<(Ids, Erred)>,
    nonce: u64,
    checks: usize,
    cached_checks: usize,
    runs: usize,
    seconds: f64,
    phase: Phase,
    out_of_budget: bool,
    /// The last set a check showed to pass (every fence at first): what a cut-short reduction
    /// reports.
    held: Ids,
    /// The paper's I (fixed checks).
    i: usize,
    rates: Rates,
    structure: Structure,
    /// Fences that add-back found needed (after a failed stability check): not tried again.
    needed: Ids,
    /// Removals rejected in a row since the set they are taken from last changed or was
    /// checked again.
    streak: usize,
    /// The set being reduced erred when checked again: its own pass missed a needed fence, and
    /// add-back looks for it without the stability check.
    base_failed: bool,
    /// Fences the check with every fence never ran on global memory: dropped after it.
    off_global: Ids,
    /// The first reduced set, given (`reduce_from`).
    start: Option<Ids>,
    /// Fences no removal takes out, whatever the runs show (`Start::proven`).
    proven: Ids,
    /// Kept fences' evidence: the check that erred without each (`Reduced::erred_without`).
    erred_without: BTreeMap<FenceId, Erred>,
    /// The last request's errors and runs (a cached failure: those of the set it was taken
    /// from), and the last failed stability check's.
    last_tally: Option<Erred>,
    stability_failure: Option<Erred>,
    /// A start set was given: its loop fences keep both placements (a second stability check
    /// for the placement after the loop alone would double the confirmation's runs).
    given_start: bool,
    every_fence_checked: bool,
}

/// A failure with no count (a request the budget cut short after an error).
const ERRED_NONE: Erred = Erred {
    errors: 0,
    runs: 0,
    add_back: false,
};

/// Rejected removals in a row (that ran) after which the set they come from is checked again.
/// When every removal fails, the set itself may err: its check, sized for the unfenced rate,
/// passed without a fence whose absence errs less often (ct-octree at ten builds on the H100: a
/// 3-run check passed without fence 3, then 50 removals failed, 50 s, before the stability
/// check). Simulated (`cargo bench --bench reduce_strategies`): ls-bh + rare at p = 0.05 30.2 ->
/// 18.5 minutes, ct-octree + rare 14.2 -> 11.2, no application slower beyond noise; 10 gained less.
const RECHECK_AFTER: usize = 6;

/// Reduces `all` without knowing the program's structure.
pub fn reduce(
    oracle: &mut dyn Oracle,
    all: &Ids,
    settings: Settings,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Reduced> {
    reduce_structured(oracle, all, &Structure::default(), settings, progress)
}

/// Reduces `all` but its unreachable fences, splitting by function (`Split::Structure`); each
/// kept loop-condition fence is then tried with its placement after the loop alone.
pub fn reduce_structured(
    oracle: &mut dyn Oracle,
    all: &Ids,
    structure: &Structure,
    settings: Settings,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Reduced> {
    reduce_from(oracle, all, structure, settings, None, progress)
}

/// `reduce_structured`, whose first reduced set is `start` (what another oracle found, the
/// race detector's) instead of binary and linear reduction from every fence: its stability
/// check confirms it, and when that fails add-back searches the other fences, as after any
/// failed stability check.
pub fn reduce_from(
    oracle: &mut dyn Oracle,
    all: &Ids,
    structure: &Structure,
    settings: Settings,
    start: Option<Start>,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Reduced> {
    let i = settings.iterations.max(1);
    let (start, proven) = start.map_or((None, Ids::new()), |s| (Some(s.fences), s.proven));
    let all: Ids = all.difference(&structure.unreachable).copied().collect();
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
        i,
        rates: Rates::default(),
        structure: structure.clone(),
        needed: Ids::new(),
        streak: 0,
        base_failed: false,
        off_global: Ids::new(),
        given_start: start.is_some(),
        every_fence_checked: false,
        start,
        proven,
        erred_without: BTreeMap::new(),
        last_tally: None,
        stability_failure: None,
    };
    r.run(&all)
}

impl Reducer<'_> {
    /// The paper starts from an empirically stable set: every fence, checked first. From a
    /// given start set, only when that set fails its stability check.
    fn every_fence(&mut self, all: &Ids) -> Result<EveryFence> {
        self.phase = Phase::Sanity;
        let i = self.i;
        let sanity = self.ask(all, Request::runs(i), i)?;
        if sanity.errors > 0 {
            return Err(ReduceError::UnstableWithAllFences {
                errors: sanity.errors,
                timeouts: sanity.timeouts,
                runs: sanity.runs,
                unreachable: self.structure.unreachable.len(),
            }
            .into());
        }
        self.every_fence_checked = true;
        if self.out_of_budget {
            let note = format!(
                "budget spent during the check with every fence ({} of {i} runs): nothing decided, every fence kept",
                sanity.runs
            );
            return Ok(EveryFence::OutOfBudget(Box::new(self.undecided(all, note))));
        }
        Ok(EveryFence::Passed(self.drop_off_global(all, &sanity)))
    }

    fn run(&mut self, all: &Ids) -> Result<Reduced> {
        let mut all = all.clone();
        if !self.given_start {
            match self.every_fence(&all)? {
                EveryFence::Passed(rest) => all = rest,
                EveryFence::OutOfBudget(r) => return Ok(*r),
            }
        }
        let calibrate = matches!(self.settings.stability, Stability::Statistical { .. })
            || matches!(self.settings.checks, Checks::Adaptive { .. });
        if calibrate {
            let (errors, runs) = self.calibrate()?;
            if self.out_of_budget {
                let note = format!(
                    "budget spent while running the program without fences ({errors} errors in {runs} runs so far): nothing decided, every fence kept"
                );
                return Ok(self.undecided(&all, note));
            }
            if errors == 0 {
                let note = if self.proven.is_empty() {
                    format!(
                        "no error in {runs} runs without fences: no fence is empirically needed"
                    )
                } else {
                    format!(
                        "no error in {runs} runs without fences: stress does not show the races the detector saw; the fences that order them are kept"
                    )
                };
                return Ok(self.result(self.proven.clone(), true, 0, note));
            }
        }
        let statistical = matches!(self.settings.stability, Stability::Statistical { .. });
        let best = 'reduce: loop {
            let mut fl = match self.start.take() {
                Some(start) => start.intersection(&all).copied().collect(),
                None => {
                    let fb = self.binary(all.clone())?;
                    self.linear(fb)?
                }
            };
            loop {
                if self.out_of_budget {
                    break 'reduce self.held.clone();
                }
                // A set that erred when checked again needs no stability check to fail.
                let (stable, runs) = if std::mem::take(&mut self.base_failed) {
                    (false, 0)
                } else {
                    self.stable(&fl, &Ids::new())?
                };
                if stable {
                    let (after_loop_only, note) = if self.given_start {
                        (Ids::new(), String::new())
                    } else {
                        self.placements(&fl)?
                    };
                    let mut r = self.result(fl, true, runs, note);
                    r.after_loop_only = after_loop_only;
                    r.stability_rate = r.assumed_rate.map(|p| self.stable_rate(p));
                    r.miss_probability = r.stability_rate.map(|p| checks::miss(p, runs));
                    return Ok(r);
                }
                if self.out_of_budget {
                    break 'reduce self.held.clone();
                }
                if !self.every_fence_checked {
                    match self.every_fence(&all)? {
                        EveryFence::Passed(rest) => all = rest,
                        EveryFence::OutOfBudget(_) => break 'reduce self.held.clone(),
                    }
                }
                if !statistical {
                    // The paper's: again from every fence, with 2I runs a check.
                    self.i *= 2;
                    self.rates.stability_failures += 1;
                    self.held = all.clone();
                    continue 'reduce;
                }
                // Fences kept only because a needed one was missing may go now.
                fl = match self.add_back(&fl, &all)? {
                    // Until a removal passes, the set held stays add-back's passing superset.
                    Some(more) => {
                        let fb = self.binary(more)?;
                        self.linear(fb)?
                    }
                    None if self.out_of_budget => break 'reduce self.held.clone(),
                    None => {
                        let note = format!(
                            "the program erred with every fence on in a check of {} runs: errors no fence removes; every fence kept",
                            self.stability_runs()
                        );
                        return Ok(self.result(all.clone(), false, 0, note));
                    }
                };
            }
        };
        let note = "budget spent before a stable result: these fences passed their last check only"
            .to_string();
        Ok(self.result(best, false, 0, note))
    }

    /// After `f` failed its stability check, a fence it dropped is needed, one whose absence
    /// errs rarely: `f` with one more fence, the last of the shortest prefix of the dropped
    /// ones (in id order, library fences last) whose return makes `f` pass a check the size of
    /// the stability check.
    /// A search of a few such checks, where the paper reduces again from every fence with
    /// checks that, sized for the common errors, miss the rare one again. It splits at a
    /// quarter, not the middle: a check that fails ends at its first error (about 1/p runs,
    /// a fifth of a passing one's at the rates add-back meets), so a split that passes a
    /// quarter of the time costs least per bit learnt (simulated: `cargo bench --bench
    /// reduce_strategies`, ct-octree + rare 12.0 -> 8.0 minutes, ls-bh + rare 12.9 -> 11.2). On
    /// the H100 it did not show (one seed each: ls-bh-nf 588 -> 661 s, ct-octree 1,372 -> 1,193 s).
    /// None when nothing was dropped (every fence failed) or the budget ran out first.
    fn add_back(&mut self, f: &Ids, all: &Ids) -> Result<Option<Ids>> {
        self.phase = Phase::AddBack;
        // The application's own first: a library fence comes back only if none of them will do.
        let library = &self.structure.library;
        let (own, lib): (Vec<FenceId>, Vec<FenceId>) =
            all.difference(f).partition(|x| !library.contains(x));
        let dropped: Vec<FenceId> = own.into_iter().chain(lib).collect();
        let with = |k: usize| -> Ids { f.iter().chain(&dropped[..k]).copied().collect() };
        // With none of them `f` failed; with all of them (every fence) it passed the sanity check.
        let (mut lo, mut hi) = (0, dropped.len());
        let mut without = self.stability_failure;
        self.held = all.clone();
        while hi - lo > 1 {
            let mid = lo + ((hi - lo) / 4).max(1); // see above: a quarter
            let trial = with(mid);
            let passed = self.check_with(&trial, self.stability_runs())?;
            if self.out_of_budget {
                return Ok(None);
            }
            if passed {
                hi = mid;
                self.held = trial;
            } else {
                lo = mid;
                without = self.last_tally;
            }
        }
        Ok((hi > 0).then(|| {
            if let Some(t) = without {
                let t = Erred {
                    add_back: true,
                    ..t
                };
                self.erred_without.insert(dropped[hi - 1], t);
            }
            self.needed.insert(dropped[hi - 1]);
            let mut more = f.clone();
            more.insert(dropped[hi - 1]);
            more
        }))
    }

    /// `all` less the fences that the runs of `sanity` (every fence on) never executed on
    /// global memory, as far as their coverage says; those are kept in `off_global`.
    fn drop_off_global(&mut self, all: &Ids, sanity: &Tally) -> Ids {
        let Some(coverage) = &sanity.coverage else {
            return all.clone();
        };
        self.off_global = coverage.never_global(all);
        let rest: Ids = all.difference(&self.off_global).copied().collect();
        self.held = rest.clone();
        rest
    }

    fn undecided(&self, all: &Ids, note: String) -> Reduced {
        let mut r = self.result(all.clone(), false, 0, note);
        r.undecided = true;
        r
    }

    fn result(&self, fences: Ids, complete: bool, stability_runs: usize, note: String) -> Reduced {
        let assumed_rate = self.rates.assumed(self.settings.checks);
        let iterations = self.runs_per_check();
        let erred_without = self
            .erred_without
            .iter()
            .filter(|(f, _)| fences.contains(f))
            .map(|(f, e)| (*f, *e))
            .collect();
        Reduced {
            proven: fences.intersection(&self.proven).copied().collect(),
            erred_without,
            added_back: fences.intersection(&self.needed).copied().collect(),
            off_global: self.off_global.clone(),
            fences,
            complete,
            undecided: false,
            after_loop_only: Ids::new(),
            iterations,
            checks: self.checks,
            cached_checks: self.cached_checks,
            runs: self.runs,
            seconds: self.seconds,
            unfenced: self.rates.unfenced,
            assumed_rate,
            check_miss_probability: assumed_rate.map(|p| checks::miss(p, iterations)),
            stability_runs,
            miss_probability: None,
            stability_rate: None,
            every_fence_checked: self.every_fence_checked,
            note,
        }
    }

    /// Runs per check: the paper's I, or enough to catch the assumed rate.
    fn runs_per_check(&self) -> usize {
        match (
            self.settings.checks,
            self.rates.assumed(self.settings.checks),
        ) {
            (Checks::Adaptive { confidence }, Some(p)) => checks::runs_for(confidence, p),
            _ => self.i,
        }
    }

    /// The unfenced error rate, sampled until 20 errors or 10 checks' worth of runs.
    fn calibrate(&mut self) -> Result<(usize, usize)> {
        self.phase = Phase::Calibrate;
        let req = Request {
            max_runs: Some((10 * self.i).max(100)),
            max_seconds: None,
            stop_after_errors: 20,
            first_run: 0,
        };
        let i = self.i;
        let t = self.ask(&Ids::new(), req, i)?;
        self.rates.unfenced = Some((t.errors, t.runs));
        Ok((t.errors, t.runs))
    }

    /// For each kept loop-condition fence, the check with its placement at the top of the
    /// body off; those that pass stay off, and the whole choice then gets the stability check
    /// the set got. A failed stability check or a spent budget keeps both placements.
    fn placements(&mut self, f: &Ids) -> Result<(Ids, String)> {
        let mut off = Ids::new();
        let loops: Vec<FenceId> = f
            .intersection(&self.structure.loop_fences)
            .copied()
            .collect();
        for id in loops {
            self.phase = Phase::Placement;
            let mut trial = off.clone();
            trial.insert(id);
            let n = self.runs_per_check();
            let t = self.ask_placed(f, &trial, Request::check(n), n)?;
            if self.out_of_budget {
                break;
            }
            if t.errors == 0 {
                off = trial;
            } else {
                self.rates.reject(t.errors, t.runs);
            }
        }
        if off.is_empty() || self.out_of_budget {
            let note = if self.out_of_budget {
                "budget spent while trying loop fences after the loop alone: both placements kept"
            } else {
                ""
            };
            return Ok((Ids::new(), note.to_string()));
        }
        let (stable, _) = self.stable(f, &off)?;
        if stable {
            return Ok((off, String::new()));
        }
        let note = if self.out_of_budget {
            "budget spent in the stability check of the loop fences after the loop alone: both placements kept"
        } else {
            "loop fences after the loop alone failed the stability check: both placements kept"
        };
        Ok((Ids::new(), note.to_string()))
    }

    /// The rate the stability check is sized for, given the assumed rate `p`.
    fn stable_rate(&self, p: f64) -> f64 {
        self.settings.rare_rate.map_or(p, |r| p.min(r))
    }

    /// Runs of the statistical stability check (and of add-back's checks).
    fn stability_runs(&self) -> usize {
        let n = self.runs_per_check();
        match (
            self.settings.stability,
            self.rates.assumed(self.settings.checks),
        ) {
            // At least I runs however high the assumed rate: a set lacking one needed fence
            // may err far less often than the program without fences.
            (Stability::Statistical { confidence }, Some(p)) => {
                checks::runs_for(confidence, self.stable_rate(p))
                    .max(n)
                    .max(self.settings.iterations)
            }
            _ => n,
        }
    }

    fn stable(&mut self, f: &Ids, body_off: &Ids) -> Result<(bool, usize)> {
        self.phase = Phase::Stability;
        let n = self.runs_per_check();
        let req = match self.settings.stability {
            Stability::Minutes(m) => Request {
                max_runs: None,
                max_seconds: Some(m * 60.0),
                stop_after_errors: 1,
                first_run: 0,
            },
            Stability::Statistical { .. } => Request::check(self.stability_runs()),
        };
        let t = self.ask_placed(f, body_off, req, n)?;
        if t.errors > 0 {
            self.stability_failure = self.last_tally;
        }
        Ok((t.errors == 0 && !self.out_of_budget, t.runs))
    }

    fn binary(&mut self, f: Ids) -> Result<Ids> {
        self.phase = Phase::Binary;
        let groups = std::mem::take(&mut self.structure.groups);
        let split = self.settings.split;
        let library = self.structure.library.clone();
        let out = splits::binary(self, f, split, &groups, &library);
        self.structure.groups = groups;
        out
    }

    fn linear(&mut self, mut f: Ids) -> Result<Ids> {
        self.phase = Phase::Linear;
        for fence in splits::library_first(&f, &self.structure.library) {
            if self.out_of_budget || self.base_failed {
                break;
            }
            if let Some(rest) = self.remove(&f, &[fence])? {
                f = rest;
            }
        }
        Ok(f)
    }

    /// CheckApplication(F \ remove, I): the smaller set if it showed no error. Fences that
    /// add-back found needed stay.
    fn remove(&mut self, f: &Ids, remove: &[FenceId]) -> Result<Option<Ids>> {
        let rest: Ids = f
            .iter()
            .copied()
            .filter(|x| !remove.contains(x) || self.needed.contains(x) || self.proven.contains(x))
            .collect();
        if rest.len() == f.len() {
            return Ok(None);
        }
        let cached = self.cached_checks;
        let passed = self.check(&rest)?;
        if let ([fence], false, Some(t)) = (remove, passed, self.last_tally) {
            self.erred_without.insert(*fence, t);
        }
        if passed {
            self.held = rest.clone();
            self.streak = 0;
        } else if self.cached_checks == cached {
            // Only rejections that ran count: a cached one is no new evidence.
            self.streak += 1;
            if self.streak >= RECHECK_AFTER {
                self.recheck(f)?;
            }
        }
        Ok(passed.then_some(rest))
    }

    /// `f` checked again after `RECHECK_AFTER` rejected removals (adaptive checks with the
    /// statistical stability check, whose add-back can find what `f` lacks).
    fn recheck(&mut self, f: &Ids) -> Result<()> {
        self.streak = 0;
        let adaptive = matches!(self.settings.checks, Checks::Adaptive { .. })
            && matches!(self.settings.stability, Stability::Statistical { .. });
        if !adaptive || f.is_empty() {
            return Ok(());
        }
        let n = self.runs_per_check();
        let t = self.ask(f, Request::check(n), n)?;
        if t.errors > 0 && !self.out_of_budget {
            self.rates.reject(t.errors, t.runs);
            self.base_failed = true;
        }
        Ok(())
    }

    fn check(&mut self, f: &Ids) -> Result<bool> {
        self.check_with(f, self.runs_per_check())
    }

    /// CheckApplication(f, n): no error in `n` runs (or in the cache).
    fn check_with(&mut self, f: &Ids, n: usize) -> Result<bool> {
        if self.settings.cache {
            // A set that erred still errs with fewer fences; one that passed n runs passes,
            // except in add-back, whose prefixes meet the same sets again and again: one
            // false pass (1% of such checks) would be taken each time, and add a fence each.
            if let Some((_, t)) = self.failing.iter().find(|(g, _)| f.is_subset(g)) {
                self.last_tally = Some(*t);
                self.cached_checks += 1;
                return Ok(false);
            }
            if self.phase != Phase::AddBack
                && self
                    .cache
                    .get(f)
                    .is_some_and(|c| c.is_some_and(|runs| runs >= n))
            {
                self.cached_checks += 1;
                return Ok(true);
            }
        }
        let t = self.ask(f, Request::check(n), n)?;
        // Add-back's sets err rarely by design: their rate would size every later check for
        // the rare errors that the stability check and add-back catch.
        if t.errors > 0 && self.phase != Phase::AddBack {
            self.rates.reject(t.errors, t.runs);
        }
        Ok(t.errors == 0 && !self.out_of_budget)
    }

    fn ask(&mut self, f: &Ids, req: Request, i: usize) -> Result<Tally> {
        self.ask_placed(f, &Ids::new(), req, i)
    }

    fn show(&mut self, f: &Ids, i: usize) {
        (self.progress)(&Progress {
            phase: self.phase,
            fences: f.len(),
            iterations: i,
            seconds: self.seconds,
            held: self.held.clone(),
            checks: self.checks,
            cached_checks: self.cached_checks,
            runs: self.runs,
            off_global: self.off_global.clone(),
            every_fence_checked: self.every_fence_checked,
        });
    }

    /// One oracle request, within the budget, with the in-body placements of `body_off` off;
    /// records what it learnt (the cache only of requests with every placement).
    fn ask_placed(&mut self, f: &Ids, body_off: &Ids, req: Request, i: usize) -> Result<Tally> {
        let left = self.settings.budget_seconds - self.seconds;
        if left <= 0.0 {
            self.out_of_budget = true;
            return Ok(Tally::default());
        }
        self.show(f, i);
        self.nonce += 1;
        let t = self.oracle.run_placed(f, body_off, req, self.nonce, left)?;
        self.last_tally = Some(Erred {
            errors: t.errors,
            runs: t.runs,
            add_back: false,
        });
        // Cut short by ctrl-c, a request decides nothing, but its runs count (the journal
        // keeps them for a resume). One that ended before ctrl-c came is an answer like any.
        let cut = crate::interrupt::interrupted() && !req.finished_by(&t);
        if !cut || t.runs > 0 {
            self.checks += 1;
            self.runs += t.runs;
            self.seconds += t.seconds;
        }
        if cut {
            self.show(f, i);
            return Err(crate::interrupt::stopped("during a check"));
        }
        if self.seconds >= self.settings.budget_seconds {
            // Whatever this request showed, it may have been cut short.
            self.out_of_budget = true;
        }
        if !body_off.is_empty() {
            if req.max_runs.is_some_and(|n| t.errors == 0 && t.runs < n) {
                self.out_of_budget = true;
            }
        } else if t.errors > 0 {
            self.cache.insert(f.clone(), None);
            self.failing
                .push((f.clone(), self.last_tally.unwrap_or(ERRED_NONE)));
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

impl Remover for Reducer<'_> {
    fn try_remove(&mut self, f: &Ids, remove: &[FenceId]) -> Result<Option<Ids>> {
        self.remove(f, remove)
    }
    /// Also when the set being reduced erred when checked again: nothing more is removed from it.
    fn should_stop(&self) -> bool {
        self.out_of_budget || self.base_failed
    }
}

pub use checks::runs_for;

#[cfg(test)]
#[path = "algorithm_tests.rs"]
mod tests;

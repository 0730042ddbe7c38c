//! Whether warm runs may stand for cold ones (`--warm`). A program written to run once a process
//! (state in module-scope variables, `cudaDeviceReset`, `exit()`, leaks) may err when its `main`
//! is called again in the same process where a fresh process passes. So before any run a
//! decision rests on, the build the command runs is run both ways with fences that pass (every
//! fence; a reduction with the race oracle first tries its start set, much cheaper to run where
//! fences are slow, and checks again with every fence where one of its runs erred), under the
//! command's environment: `WARM_RUNS` warm runs one after another in one process (its 2nd to
//! 8th calls of `main` are seen), and `COLD_RUNS` cold runs of the first of those seeds. Where
//! the warm runs err more often than the cold ones, the command runs cold: a false alarm costs
//! speed, a missed one a wrong answer.
//!
//! After the check, a warm run that errs is taken as the program's error: the program passed
//! its 2nd to 8th calls in one process in the check, so the error is not the one a second call
//! of `main` gives. Whether the run after an error may share its process is checked too
//! (`Recovery`): in one process, `RECOVERY_PAIRS` runs without fences (which a buggy program
//! fails), each followed by a run with the check's fences; where the fenced runs after erring ones err
//! no more often than cold ones, processes serve on after runs that failed their post-condition
//! (`Pool::serve_on_errors`), which spares a buggy program's runs a process each. Where no run
//! without fences erred, or the fenced runs after them erred, an erring run ends its process and
//! the next starts fresh, as a cold one does. A program whose state breaks only after many more
//! calls (a leak filling the GPU) is not ruled out by the check, which stays small so that
//! `--warm` stays cheap; the pool replaces processes whose device memory shrank
//! (`warm::LEAK_SHARE`) or whose context holds a sticky error.

use crate::fences::set::FenceSet;
use crate::run::batch::{self, Batch, Budget};
use crate::run::counts::Counts;
use crate::run::environment::TestEnv;
use crate::run::trial::{RunRecord, TrialSpec};
use crate::run::warm::Pool;
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Warm runs of the check, all in one process.
pub const WARM_RUNS: usize = 8;
/// Cold runs of the check: the first of the warm runs' seeds, a process each.
pub const COLD_RUNS: usize = 4;
/// Pairs of runs of the check after an error: one without fences, then one with the check's.
pub const RECOVERY_PAIRS: usize = 8;
/// The seed stream of the check's runs (`rng::seed`): apart from the command's own runs.
const SEEDS: u64 = u64::MAX;

/// One side of the check: how its runs ended and what a run took.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Side {
    #[serde(flatten)]
    pub counts: Counts,
    /// Mean seconds a run.
    pub seconds_a_run: f64,
}

impl Side {
    /// Runs an hour of one worker at this side's measured seconds a run.
    pub fn runs_an_hour(&self) -> f64 {
        3600.0 / self.seconds_a_run.max(1e-9)
    }
}

/// The check of warm runs against cold ones, as `summary.json` and `reduce.json` record it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Agreement {
    /// The fences of the check's runs: every fence, or a set that passed every run.
    pub fences: FenceSet,
    pub warm: Side,
    pub cold: Side,
    /// The command's runs were warm: the check's warm runs erred no more often than its cold
    /// ones. False: they ran cold.
    pub kept_warm: bool,
    /// Whether a process serves on after an erring run; absent where the runs went cold (and in
    /// records of wmfix before the check had it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery: Option<Recovery>,
}

/// The check's runs after errors, all in one process where it serves on: runs without fences,
/// each followed by one with the check's fences.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Recovery {
    /// The runs without fences.
    pub unfenced: Counts,
    /// Erring runs of the check (without fences, or with the check's after an error) whose
    /// process served the next run.
    pub served_on: u64,
    /// The runs with the check's fences that followed an erring run.
    pub fenced_after_error: Counts,
    /// Processes serve on after runs that failed their post-condition: some erring run was
    /// served on, and the fenced runs after erring ones erred no more often than the cold runs.
    pub serves_on: bool,
}

impl Recovery {
    /// The clause the check's line gets.
    fn clause(&self, fences: &str) -> String {
        let (u, f) = (&self.unfenced, &self.fenced_after_error);
        let seen = format!(
            "{} of {} runs without fences in one process erred, {} erring runs were served on by their process, and {} of the {} runs with {fences} after an erring one erred",
            u.errors(),
            u.runs,
            self.served_on,
            f.errors(),
            f.runs
        );
        if self.serves_on {
            format!("a process serves on after a run that failed ({seen})")
        } else if self.served_on == 0 {
            format!("an erring run ends its process, as serving on after one was not seen ({seen})")
        } else {
            format!(
                "an erring run ends its process, as runs after an error erred where cold ones did not ({seen})"
            )
        }
    }
}

impl Agreement {
    /// "every fence", or "fences 1,3" for a smaller set.
    fn fences_in_words(&self) -> String {
        match &self.fences {
            FenceSet::All => "every fence".to_string(),
            set => format!("fences {set}"),
        }
    }

    /// Some run of the check with its fences erred (warm, cold, or after an error).
    fn erred(&self) -> bool {
        let after = self
            .recovery
            .as_ref()
            .map_or(0, |r| r.fenced_after_error.errors());
        self.warm.counts.errors() + self.cold.counts.errors() + after > 0
    }

    /// The one line the command says about the check.
    pub fn line(&self) -> String {
        let (w, c) = (&self.warm.counts, &self.cold.counts);
        let fences = self.fences_in_words();
        let seen = format!(
            "with {fences} under {}, {} of {} warm runs in one process erred{} and {} of {} cold runs of the same seeds",
            w.env,
            w.errors(),
            w.runs,
            how(w),
            c.errors(),
            c.runs
        );
        if self.kept_warm {
            let after = self
                .recovery
                .as_ref()
                .map_or(String::new(), |r| format!("; {}", r.clause(&fences)));
            return format!(
                "--warm: warm runs agree with cold ones ({seen}; {:.3} s a warm run, {:.3} s a cold one){after}",
                self.warm.seconds_a_run, self.cold.seconds_a_run
            );
        }
        format!(
            "--warm: running cold, as warm runs err where cold ones do not ({seen}): the program does not take its main being called again in one process (module-scope state, cudaDeviceReset, exit, leaks); this costs {:.0} runs/hour a worker cold against {:.0} warm, as measured in the check",
            self.cold.runs_an_hour(),
            self.warm.runs_an_hour()
        )
    }
}

/// " (3 crashed, 1 failed)" for a side with errors.
fn how(c: &Counts) -> String {
    let parts: Vec<String> = [
        (c.crash, "crashed"),
        (c.fail, "failed"),
        (c.timeout, "timed out"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, w)| format!("{n} {w}"))
    .collect();
    if parts.is_empty() {
        return String::new();
    }
    format!(" ({})", parts.join(", "))
}

/// The pool the command's runs get after the check, and the check; without `--warm` (`pool`
/// none), neither. `batch` is the command's (its `warm` unused); the check's erring runs keep
/// their logs in `logs`; `fences`: a set to try before every fence (see the module's comment).
/// Says the check's line on stderr.
pub fn settle(
    pool: Option<Pool>,
    batch: &Batch,
    logs: &Path,
    env: TestEnv,
    seed: u64,
    fences: &FenceSet,
) -> Result<(Option<Pool>, Option<Agreement>)> {
    let Some(pool) = pool else {
        return Ok((None, None));
    };
    let mut agreement = check(&pool, batch, logs, env, seed, fences)?;
    if agreement.fences != FenceSet::All && agreement.erred() {
        eprintln!(
            "wmfix: --warm: a run of the check with {} erred; checking again with every fence",
            agreement.fences_in_words()
        );
        agreement = check(&pool, batch, logs, env, seed, &FenceSet::All)?;
    }
    eprintln!("wmfix: {}", agreement.line());
    // Dropping the pool ends its processes.
    Ok((agreement.kept_warm.then_some(pool), Some(agreement)))
}

fn check(
    pool: &Pool,
    batch: &Batch,
    logs: &Path,
    env: TestEnv,
    seed: u64,
    fences: &FenceSet,
) -> Result<Agreement> {
    // The check's runs go one at a time and with other fences than the command's: they must
    // not choose how many of the command's runs share a GPU.
    pool.measure_pace(false);
    let _measure_after = MeasureAfter(pool);
    let spec = |i: usize| TrialSpec::new(env, crate::rng::seed(seed, SEEDS, i), fences);
    // One worker: the warm runs go to one process, one after another, while they pass.
    let warm_batch = Batch {
        jobs: 1,
        logs,
        warm: Some(pool),
        ..*batch
    };
    let cold_batch = Batch {
        logs,
        warm: None,
        ..*batch
    };
    // The cold runs go beside the warm ones, as the command's runs go several at a time: the
    // check costs its longer side, not both.
    let (warm, cold) = std::thread::scope(|s| {
        let cold = s.spawn(|| side(&cold_batch, COLD_RUNS, WARM_RUNS, &spec));
        let warm = side(&warm_batch, WARM_RUNS, 0, &spec);
        (warm, cold.join())
    });
    let cold = cold.unwrap_or_else(|p| std::panic::resume_unwind(p))?;
    let warm = warm?;
    let (w, c) = (&warm.counts, &cold.counts);
    let kept_warm = w.errors() * c.runs <= c.errors() * w.runs;
    let recovery = match kept_warm {
        true => Some(recovery(pool, &warm_batch, env, seed, c, fences)?),
        false => None,
    };
    Ok(Agreement {
        fences: fences.clone(),
        warm,
        cold,
        kept_warm,
        recovery,
    })
}

/// Measures the pool's pace again when the check ends, however it ends.
struct MeasureAfter<'a>(&'a Pool);

impl Drop for MeasureAfter<'_> {
    fn drop(&mut self) {
        self.0.measure_pace(true);
    }
}

/// The runs after errors (`Recovery`), in the pool's processes with serving on after errors;
/// the pool keeps doing so only where the check says it may.
fn recovery(
    pool: &Pool,
    warm_batch: &Batch,
    env: TestEnv,
    seed: u64,
    cold: &Counts,
    passing: &FenceSet,
) -> Result<Recovery> {
    let fences = |i: usize| match i % 2 {
        0 => FenceSet::none(),
        _ => passing.clone(),
    };
    let runs = 2 * RECOVERY_PAIRS;
    let first_id = WARM_RUNS + COLD_RUNS;
    // Seeds after the warm runs' (whose first ones the cold runs had).
    let spec =
        |i: usize| TrialSpec::new(env, crate::rng::seed(seed, SEEDS, first_id + i), &fences(i));
    pool.serve_on_errors(true);
    let served_before = pool.served_on();
    let mut records: Vec<RunRecord> = Vec::new();
    batch::run(
        warm_batch,
        Budget::Runs(runs),
        first_id,
        &spec,
        &mut |r: RunRecord| {
            records.push(r);
            true
        },
    )?;
    if records.len() < runs {
        pool.serve_on_errors(false);
        return Err(crate::interrupt::stopped(
            "during the check of runs after an error in one warm process",
        ));
    }
    records.sort_by_key(|r| r.id);
    let new_counts = || Counts {
        env: env.to_string(),
        ..Counts::default()
    };
    let (mut unfenced, mut fenced_after_error) = (new_counts(), new_counts());
    let mut erred = false;
    for r in &records {
        if (r.id - first_id).is_multiple_of(2) {
            unfenced.add(r.outcome);
            erred = r.outcome.is_error();
        } else if erred {
            fenced_after_error.add(r.outcome);
        }
    }
    let served_on = pool.served_on() - served_before;
    let f = &fenced_after_error;
    let serves_on = served_on > 0 && f.runs > 0 && f.errors() * cold.runs <= cold.errors() * f.runs;
    pool.serve_on_errors(serves_on);
    if !serves_on {
        pool.end_idle();
    }
    Ok(Recovery {
        unfenced,
        served_on,
        fenced_after_error,
        serves_on,
    })
}

/// `runs` runs of the batch, ids from `first_id`; all of them, or ctrl-c's error.
fn side(
    batch: &Batch,
    runs: usize,
    first_id: usize,
    spec: &(dyn Fn(usize) -> TrialSpec + Sync),
) -> Result<Side> {
    let mut counts = Counts {
        env: spec(0).env.to_string(),
        ..Counts::default()
    };
    let mut seconds = 0.0;
    batch::run(
        batch,
        Budget::Runs(runs),
        first_id,
        spec,
        &mut |r: RunRecord| {
            counts.add(r.outcome);
            seconds += r.duration_s;
            true
        },
    )?;
    if counts.runs < runs {
        return Err(crate::interrupt::stopped(
            "during the check of warm runs against cold ones",
        ));
    }
    Ok(Side {
        counts,
        seconds_a_run: seconds / runs as f64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(env: &str, pass: usize, crash: usize, seconds: f64) -> Side {
        Side {
            counts: Counts {
                env: env.into(),
                runs: pass + crash,
                pass,
                crash,
                ..Counts::default()
            },
            seconds_a_run: seconds,
        }
    }

    #[test]
    fn the_line_says_why_runs_go_cold_and_what_it_costs() {
        let a = Agreement {
            fences: FenceSet::All,
            warm: side("sys-str+", 4, 4, 0.02),
            cold: side("sys-str+", 4, 0, 0.36),
            kept_warm: false,
            recovery: None,
        };
        let line = a.line();
        assert!(line.starts_with("--warm: running cold"), "{line}");
        assert!(
            line.contains("4 of 8 warm runs in one process erred (4 crashed)"),
            "{line}"
        );
        assert!(line.contains("0 of 4 cold runs"), "{line}");
        assert!(
            line.contains("10000 runs/hour a worker cold against 180000 warm"),
            "{line}"
        );
        assert!(!line.contains('\n'));
    }
}

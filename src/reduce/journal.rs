//! The reduction's journal: every oracle request and its answer, appended as it completes.
//! A resumed reduction replays the journal: the algorithm is deterministic given the answers,
//! so it asks the same questions in the same order and gets the recorded answers back until
//! the journal runs out. A request that a budget or ctrl-c cut short is journaled with the runs
//! it made, and a resume runs only the rest of it, with the seeds the uninterrupted request
//! would have used (a stability check of 459 slow runs can span calls); only a kill -9 loses
//! the request in flight.

use crate::fences::id::Ids;
use crate::fences::set::FenceSet;
use crate::reduce::oracle::{Oracle, Request, Tally};
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::io::Write;
use std::path::Path;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub nonce: u64,
    pub fences: FenceSet,
    /// Fences whose placement at the top of a loop body was off (placement phase).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_off: Option<FenceSet>,
    pub request: Request,
    pub tally: Tally,
}

pub struct Journaled<'a> {
    inner: &'a mut dyn Oracle,
    file: std::fs::File,
    replay: VecDeque<Entry>,
    /// Header and entries replayed so far, to rewrite the file if the replay diverges.
    kept: Vec<String>,
    path: std::path::PathBuf,
    pub replayed: usize,
}

impl<'a> Journaled<'a> {
    /// Opens `path` (first line: `header`). With `resume`, an existing journal whose header
    /// matches is replayed; without, any old journal is replaced.
    pub fn open(
        inner: &'a mut dyn Oracle,
        path: &Path,
        header: &str,
        resume: bool,
    ) -> Result<Journaled<'a>> {
        let mut replay = VecDeque::new();
        if resume {
            let text = std::fs::read_to_string(path).map_err(|e| {
                crate::exit_code::fail(
                    crate::exit_code::NO_INPUT,
                    format!("nothing to resume: {}: {e}", path.display()),
                )
            })?;
            let mut lines = text.lines();
            if lines.next() != Some(header) {
                anyhow::bail!(crate::exit_code::Exit {
                    code: crate::exit_code::BAD_INPUT,
                    message: format!(
                        "{} was written with other settings or sources; run without --resume to start again",
                        path.display()
                    ),
                });
            }
            // A line cut short by a kill is the request in flight: dropped.
            replay.extend(lines.filter_map(|l| serde_json::from_str::<Entry>(l).ok()));
            // Rewrite the file without any torn last line.
            let mut f = std::fs::File::create(path)?;
            writeln!(f, "{header}")?;
            for e in &replay {
                writeln!(f, "{}", serde_json::to_string(e)?)?;
            }
        } else {
            std::fs::write(path, format!("{header}\n"))?;
        }
        let file = std::fs::OpenOptions::new().append(true).open(path)?;
        let kept = vec![header.to_string()];
        Ok(Journaled {
            inner,
            file,
            replay,
            kept,
            path: path.to_path_buf(),
            replayed: 0,
        })
    }
}

impl Journaled<'_> {
    /// The file as the header and the entries replayed so far.
    fn rewrite(&mut self) -> Result<()> {
        std::fs::write(&self.path, self.kept.join("\n") + "\n")?;
        self.file = std::fs::OpenOptions::new().append(true).open(&self.path)?;
        Ok(())
    }
}

impl Oracle for Journaled<'_> {
    fn run_placed(
        &mut self,
        enabled: &Ids,
        body_off: &Ids,
        request: Request,
        nonce: u64,
        seconds_left: f64,
    ) -> Result<Tally> {
        let fences = FenceSet::Ids(enabled.clone());
        let off = (!body_off.is_empty()).then(|| FenceSet::Ids(body_off.clone()));
        let mut done = Tally::default();
        if let Some(e) = self.replay.pop_front() {
            let same =
                e.nonce == nonce && e.fences == fences && e.body_off == off && e.request == request;
            if same && request.finished_by(&e.tally) {
                self.replayed += 1;
                self.kept.push(serde_json::to_string(&e)?);
                return Ok(e.tally);
            }
            // The algorithm asked something else, or the same request that a budget or an
            // interruption cut short, whose runs are kept and continued: either way the rest
            // of the journal no longer applies.
            if same {
                self.replayed += 1;
                done = e.tally;
            }
            self.replay.clear();
            self.rewrite()?;
        }
        let rest = request.rest_after(&done);
        let seconds_done = done.seconds;
        let tally = done.then(self.inner.run_placed(
            enabled,
            body_off,
            rest,
            nonce,
            seconds_left - seconds_done,
        )?);
        // A request that ctrl-c stopped before its first run taught nothing: not journaled.
        if tally.runs > 0 || request.finished_by(&tally) {
            let e = Entry {
                nonce,
                fences,
                body_off: off,
                request,
                tally,
            };
            writeln!(self.file, "{}", serde_json::to_string(&e)?)?;
            self.file.sync_data()?;
            return Ok(e.tally);
        }
        Ok(tally)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fences::id::FenceId;
    use crate::reduce::algorithm::{Reduced, Settings, Split, Stability, reduce};
    use crate::reduce::checks::Checks;
    use crate::reduce::oracle::Simulated;

    fn settings(budget_seconds: f64) -> Settings {
        Settings {
            split: Split::Structure,
            iterations: 32,
            checks: Checks::Adaptive { confidence: 0.99 },
            stability: Stability::Statistical { confidence: 0.99 },
            rare_rate: Some(0.01),
            cache: true,
            budget_seconds,
        }
    }

    fn sim() -> Simulated {
        Simulated {
            required: [FenceId(1)].into_iter().collect(),
            p: 0.35,
            rare: vec![],
            timeout_p: 0.0,
            run_seconds: 1.0,
            seed: 3,
            runs: 0,
        }
    }

    /// Reduces 5 fences through a journal at `path`; the reduction and the oracle's runs.
    fn reduce_journaled(path: &Path, budget: f64, resume: bool) -> (Reduced, usize) {
        let mut o = sim();
        let r = {
            let mut j = Journaled::open(&mut o, path, "header", resume).unwrap();
            reduce(&mut j, &FenceId::all(5), settings(budget), &mut |_| {}).unwrap()
        };
        (r, o.runs)
    }

    /// The journal's entries without their seconds (sums of floats in another order).
    fn entries(path: &Path) -> Vec<(u64, usize, usize, Option<usize>)> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .skip(1)
            .map(|l| serde_json::from_str::<Entry>(l).unwrap())
            .map(|e| (e.nonce, e.tally.runs, e.tally.errors, e.request.max_runs))
            .collect()
    }

    #[test]
    fn a_check_cut_short_by_the_budget_is_continued_on_resume_not_repeated() {
        // sdk-red-nf on an H100: runs of about a second, and a final stability check of 459
        // runs that one call's bound cut short. Resumed, the check goes on from its last run.
        let tmp = tempfile::tempdir().unwrap();
        let straight = tmp.path().join("straight.jsonl");
        let (whole, whole_runs) = reduce_journaled(&straight, 1e9, false);
        assert!(whole.complete && whole.stability_runs >= 459, "{whole:?}");
        let cut = tmp.path().join("cut.jsonl");
        let budget = whole.seconds - 200.0; // inside the stability check
        let (first, first_runs) = reduce_journaled(&cut, budget, false);
        assert!(!first.complete, "{first:?}");
        let (resumed, resumed_runs) = reduce_journaled(&cut, 1e9, true);
        assert!(resumed.complete, "{resumed:?}");
        assert_eq!(resumed.fences, whole.fences);
        assert_eq!(
            first_runs + resumed_runs,
            whole_runs,
            "runs repeated or lost"
        );
        assert_eq!(entries(&cut), entries(&straight));
    }
}

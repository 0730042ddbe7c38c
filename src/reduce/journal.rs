//! The reduction's journal: every oracle request and its answer, appended as it completes.
//! A resumed reduction replays the journal: the algorithm is deterministic given the answers,
//! so it asks the same questions in the same order and gets the recorded answers back until
//! the journal runs out, losing at most the request that was in flight.

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
        if let Some(e) = self.replay.pop_front() {
            if e.nonce == nonce && e.fences == fences && e.body_off == off && e.request == request {
                self.replayed += 1;
                self.kept.push(serde_json::to_string(&e)?);
                return Ok(e.tally);
            }
            // The algorithm asked something else: the rest of the journal no longer applies.
            self.replay.clear();
            std::fs::write(&self.path, self.kept.join("\n") + "\n")?;
            self.file = std::fs::OpenOptions::new().append(true).open(&self.path)?;
        }
        let tally = self
            .inner
            .run_placed(enabled, body_off, request, nonce, seconds_left)?;
        let e = Entry {
            nonce,
            fences,
            body_off: off,
            request,
            tally,
        };
        writeln!(self.file, "{}", serde_json::to_string(&e)?)?;
        self.file.sync_data()?;
        Ok(tally)
    }
}

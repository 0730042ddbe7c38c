//! The files a report is made of, found in an output folder (`test/summary.json`,
//! `reduce/reduce.json`, `reduce/journal.jsonl`, `cost/cost.json`, named by `OutDir`) or in the
//! step folders of `scripts/gpu/evidence.sh` (`--from`: the same files at the folder's top
//! level), each read by `doc` (wrapped or not). A step folder with nothing to report is exit 66;
//! a second reduction, journal or cost record exit 64.

use crate::cost::measure::Report as CostReport;
use crate::exit_code::{self, fail};
use crate::out_dir::OutDir;
use crate::reduce::record::Report as Reduction;
use crate::report::doc::{Doc, read};
use crate::report::journal::{self, Journal};
use crate::report::test_table::Summary;
use anyhow::Result;
use std::path::{Path, PathBuf};

/// The files of one or more folders.
#[derive(Debug, Default)]
pub struct Found {
    /// Test summaries: one from an output folder, any number from step folders.
    pub summaries: Vec<Doc<Summary>>,
    pub reduction: Option<Doc<Reduction>>,
    pub journal: Option<Doc<Journal>>,
    pub cost: Option<Doc<CostReport>>,
}

/// Where a folder keeps each file.
struct Names {
    summary: PathBuf,
    reduction: PathBuf,
    journal: PathBuf,
    cost: PathBuf,
}

impl Found {
    /// The files of the output folder `out`.
    pub fn in_output(out: &OutDir) -> Result<Found> {
        Self::at(&Names {
            summary: out.test().summary(),
            reduction: out.reduce().report(),
            journal: out.reduce().journal(),
            cost: out.cost().report(),
        })
    }

    /// The files of a step folder of the GPU script, at its top level.
    pub fn in_step(dir: &Path) -> Result<Found> {
        if !dir.is_dir() {
            return Err(fail(
                exit_code::NO_INPUT,
                format!("{}: no such folder", dir.display()),
            ));
        }
        let found = Self::at(&Names {
            summary: dir.join("summary.json"),
            reduction: dir.join("reduce.json"),
            journal: dir.join("journal.jsonl"),
            cost: dir.join("cost.json"),
        })?;
        if found.is_empty() {
            return Err(fail(
                exit_code::NO_INPUT,
                format!(
                    "nothing to report in {}: no summary.json, reduce.json, journal.jsonl or cost.json at its top level (an output folder is read as `wmfix report DIR` or `--out OUT`)",
                    dir.display()
                ),
            ));
        }
        Ok(found)
    }

    fn at(n: &Names) -> Result<Found> {
        let opt = |p: &Path| p.is_file().then(|| p.to_path_buf());
        Ok(Found {
            summaries: opt(&n.summary)
                .map(|p| read(&p, "test summary"))
                .transpose()?
                .into_iter()
                .collect(),
            reduction: opt(&n.reduction)
                .map(|p| read(&p, "reduction record"))
                .transpose()?,
            journal: opt(&n.journal).map(|p| journal::read(&p)).transpose()?,
            cost: opt(&n.cost).map(|p| read(&p, "cost record")).transpose()?,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.summaries.is_empty()
            && self.reduction.is_none()
            && self.journal.is_none()
            && self.cost.is_none()
    }

    /// These files and `more`'s: test summaries add up; a second reduction, journal or cost
    /// record is refused (exit 64), as a page shows one of each.
    pub fn join(mut self, more: Found) -> Result<Found> {
        self.summaries.extend(more.summaries);
        self.reduction = one(self.reduction, more.reduction)?;
        self.journal = one(self.journal, more.journal)?;
        self.cost = one(self.cost, more.cost)?;
        Ok(self)
    }
}

fn one<T>(a: Option<Doc<T>>, b: Option<Doc<T>>) -> Result<Option<Doc<T>>> {
    match (a, b) {
        (Some(a), Some(b)) => Err(fail(
            exit_code::USAGE,
            format!(
                "{} and {}: a report shows one reduction and one cost record; give --from one of them",
                a.path.display(),
                b.path.display()
            ),
        )),
        (a, b) => Ok(a.or(b)),
    }
}

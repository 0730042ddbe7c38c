//! Which fence sites a run executed, and which of them on global memory: the file the runtime
//! writes at exit where `WMFIX_COVERAGE` says (`runtime-cu/README.md`), read back after each
//! run, and its union over runs. A site whose access is on shared or local memory is neither
//! fenced nor counted as global by the runtime; one of unknown space (after a call) counts as
//! global. Recorded in the active environments only (no-str- has no per-block filter).

use crate::fences::id::Ids;
use crate::fences::set::FenceSet;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The variable naming the file the runtime writes.
pub const VAR: &str = "WMFIX_COVERAGE";

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Coverage {
    /// Fence ids the file covers (the program's `WMFIX_NUM_FENCES`).
    pub fences: usize,
    /// Sites that ran.
    pub executed: FenceSet,
    /// Sites that ran on global memory, or on memory of unknown space.
    pub global: FenceSet,
}

impl Coverage {
    /// The runtime's text: `wmfix-coverage 1`, then `fences N`, `executed SET`, `global SET`.
    pub fn parse(text: &str) -> Result<Coverage, String> {
        let mut lines = text.lines();
        if lines.next() != Some("wmfix-coverage 1") {
            return Err("not a wmfix coverage file (version 1)".into());
        }
        let mut field = |name: &str| -> Result<String, String> {
            lines
                .next()
                .and_then(|l| l.strip_prefix(name))
                .and_then(|l| l.strip_prefix(' '))
                .map(str::to_string)
                .ok_or_else(|| format!("no `{name}` line"))
        };
        let fences = field("fences")?
            .parse()
            .map_err(|_| "`fences` is not a number".to_string())?;
        let executed = FenceSet::parse(&field("executed")?)?;
        let global = FenceSet::parse(&field("global")?)?;
        Ok(Coverage {
            fences,
            executed,
            global,
        })
    }

    /// The file a run left, if it left a whole one (a run killed before its exit leaves none).
    pub fn read(path: &Path) -> Option<Coverage> {
        Coverage::parse(&std::fs::read_to_string(path).ok()?).ok()
    }

    /// Both runs' sites.
    pub fn union(&self, other: &Coverage) -> Coverage {
        let n = self.fences.max(other.fences);
        let join = |a: &FenceSet, b: &FenceSet| {
            FenceSet::Ids(a.ids(n).union(&b.ids(n)).copied().collect())
        };
        Coverage {
            fences: n,
            executed: join(&self.executed, &other.executed),
            global: join(&self.global, &other.global),
        }
    }

    /// Of `ids`, those this coverage shows never ran on global memory (ids beyond what the
    /// file covers are not known, so not among them).
    pub fn never_global(&self, ids: &Ids) -> Ids {
        let global = self.global.ids(self.fences);
        ids.iter()
            .copied()
            .filter(|id| id.0 < self.fences && !global.contains(id))
            .collect()
    }

    /// `sys-str+: 9 of 15 fence sites ran on global memory (or memory of unknown space); the
    /// others did not (not fenced)`, for the runs of `env`; sites a file says ran on shared or
    /// local memory only (earlier runtimes counted those) are listed.
    pub fn line(&self, env: &str) -> String {
        let executed = self.executed.ids(self.fences);
        let global = self.global.ids(self.fences);
        let local: Vec<String> = executed
            .difference(&global)
            .map(|id| id.to_string())
            .collect();
        let mut line = format!(
            "{env}: {} of {} fence sites ran on global memory (or memory of unknown space); the others did not (not fenced)",
            global.len(),
            self.fences,
        );
        if !local.is_empty() {
            line += &format!("; on shared or local memory only: {}", local.join(", "));
        }
        line + "\n"
    }
}

/// The union of some runs' coverage; None when no run left one.
pub fn union<'a>(runs: impl IntoIterator<Item = &'a Coverage>) -> Option<Coverage> {
    runs.into_iter().fold(None, |acc: Option<Coverage>, c| {
        Some(acc.map_or_else(|| c.clone(), |a| a.union(c)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fences::id::FenceId;

    fn ids(s: &str) -> Ids {
        FenceSet::parse(s).unwrap().ids(1000)
    }

    #[test]
    fn the_runtimes_file_is_read_and_runs_join() {
        let a =
            Coverage::parse("wmfix-coverage 1\nfences 8\nexecuted 0-2,5\nglobal 0,2\n").unwrap();
        let b = Coverage::parse("wmfix-coverage 1\nfences 8\nexecuted 1,6\nglobal 1\n").unwrap();
        let both = union([&a, &b]).unwrap();
        assert_eq!(both.executed.ids(8), ids("0-2,5-6"));
        assert_eq!(both.global.ids(8), ids("0-2"));
        // Sites 5 and 6 ran on shared or local memory only; 3, 4, 7 never ran.
        assert_eq!(both.never_global(&ids("0-7")), ids("3-7"));
        assert!(
            both.executed.ids(8).contains(&FenceId(6))
                && !both.executed.ids(8).contains(&FenceId(7))
        );
        assert_eq!(union(std::iter::empty::<&Coverage>()), None);
    }

    #[test]
    fn ids_the_file_does_not_cover_are_not_called_off_global() {
        let c =
            Coverage::parse("wmfix-coverage 1\nfences 4\nexecuted none\nglobal none\n").unwrap();
        assert_eq!(c.never_global(&ids("2-5")), ids("2-3"));
    }

    #[test]
    fn a_cut_or_foreign_file_is_no_coverage() {
        for text in [
            "",
            "wmfix-coverage 2\nfences 4\nexecuted none\nglobal none\n",
            "wmfix-coverage 1\nfences 4\nexecuted 0-1\n",
            "wmfix-coverage 1\nfences x\nexecuted none\nglobal none\n",
            "wmfix-coverage 1\nfences 4\nexecuted 0-\nglobal none\n",
        ] {
            assert!(Coverage::parse(text).is_err(), "{text:?}");
        }
    }
}

//! A fence's number: its place in the program-wide order of fence sites (files by path, then
//! source order), the same in `fences.json`, `WMFIX_FENCES`, the journal, `reduce.json` and
//! the patch.

use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FenceId(pub usize);

/// A set of fence ids, in order.
pub type Ids = BTreeSet<FenceId>;

impl FenceId {
    /// Every id of a program with `n` fences.
    pub fn all(n: usize) -> Ids {
        (0..n).map(FenceId).collect()
    }
}

impl fmt::Display for FenceId {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        self.0.fmt(f)
    }
}

//! Empirical fence insertion: the algorithm over an oracle, the journal, the patch.

pub mod algorithm;
pub mod by_race;
pub mod checks;
pub mod error;
pub mod journal;
pub mod model;
pub mod oracle;
pub mod patch;
pub mod record;
pub mod reduced;
pub mod split;
pub mod summary;
pub mod why;

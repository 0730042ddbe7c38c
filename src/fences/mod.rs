//! The vocabulary every stage shares about fences: an id, a set of ids.

pub mod id;
pub mod record;
pub mod scope;
pub mod set;

//! The vocabulary every stage shares about fences.

pub mod set;

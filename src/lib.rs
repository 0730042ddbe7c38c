//! wmfix: exposes weak-memory bugs in CUDA applications and hardens them with the fewest
//! fences. See DESIGN.md for the file map.

pub mod device_code;
pub mod dump;
pub mod edits;
pub mod exit_code;
pub mod insert;
pub mod instrument;
pub mod parse;
pub mod plan;
pub mod queries;
pub mod runtime;
pub mod sites;
pub mod source;
pub mod walk;

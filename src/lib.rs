//! wmfix: exposes weak-memory bugs in CUDA applications and hardens them with the fewest
//! fences. See DESIGN.md for the file map.

pub mod batch;
pub mod builder;
pub mod child;
pub mod config;
pub mod device_code;
pub mod digest;
pub mod dump;
pub mod edits;
pub mod environment;
pub mod exit_code;
pub mod fence_set;
pub mod insert;
pub mod instrument;
pub mod interrupt;
pub mod journal;
pub mod litmus;
pub mod oracle;
pub mod parallel;
pub mod parse;
pub mod patch;
pub mod plan;
pub mod queries;
pub mod reduce;
pub mod reducing;
pub mod runtime;
pub mod sites;
pub mod source;
pub mod stats;
pub mod svg;
pub mod testing;
pub mod toolchain;
pub mod trial;
pub mod tune_analysis;
pub mod tuning;
pub mod walk;

//! `wmfix race`: data races under the PTX model (or scoped-HRF: `detect::Model`), from one
//! run. The detection runtime (`runtime-cu/wmfix_race.cuh`) records every instrumented global
//! access, atomic, fence and barrier into a trace (`format`); here the trace is read (`trace`,
//! with each site's kind from `sites`), checked with vector clocks (`clock`, `detect`;
//! `private` spares the addresses one thread alone touched), each racing pair explained by the
//! fences that would order it (`explain`), and reported (`report`, with `locks`); `store_load`
//! finds the stores a flag load must not pass, which no race shows. The same code reads
//! hand-written traces in the tests.

pub mod clock;
pub mod detect;
pub mod explain;
pub mod format;
pub mod launches;
pub mod locks;
pub mod observed;
pub mod order;
pub mod private;
mod reads;
pub mod report;
pub mod runs;
pub mod scope;
pub mod sites;
pub mod slim;
pub mod store_load;
pub mod trace;

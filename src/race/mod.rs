//! `wmfix race`: data races under the PTX model, from one run. The detection runtime
//! (`runtime-cu/wmfix_race.cuh`) records every instrumented global access, atomic, fence and
//! barrier into a trace; here the trace is read (`trace`), checked with vector clocks
//! (`clock`, `detect`), each racing pair explained by the fences that would order it
//! (`explain`), and reported (`report`). The same code reads hand-written traces in the tests.

pub mod clock;
pub mod detect;
pub mod explain;
pub mod order;
pub mod report;
pub mod runs;
pub mod trace;

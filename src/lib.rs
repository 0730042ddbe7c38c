//! wmfix: exposes weak-memory bugs in CUDA applications and hardens them with the fewest
//! fences. The folders follow the pipeline (DESIGN.md has the map): `rewrite` (insert) ->
//! `app` (build) -> `run` (runs under stress) -> `race` (detection runs) -> `cmd::test` /
//! `reduce` -> `cost`, and the side track `litmus` -> `tune`; `report` makes a page of their
//! records. `cmd` holds the subcommands; `exit_code`, `stats`, `chip` (GPUs by name, the shipped
//! profiles), `chart` (SVG charts through plotters) and `out_dir` (the output folder, which
//! `insert` writes too) are leaves.

pub mod app;
pub mod chart;
pub mod chip;
pub mod cmd;
pub mod cost;
pub mod digest;
pub mod exit_code;
pub mod fences;
pub mod interrupt;
pub mod litmus;
pub mod out_dir;
pub mod race;
pub mod reduce;
pub mod report;
pub mod rewrite;
pub mod rng;
pub mod run;
pub mod stats;
pub mod tune;

//! The CPU side of `wmfix tune`: from the raw counts of the three micro-benchmark phases of
//! Sorensen & Donaldson, PLDI 2016 (Sec. 3.2 to 3.4) to a chip profile for `sys-str`.
//!
//! - **Patch finding** (Sec. 3.2): `counts[test][d][l]`, the weak behaviours in C executions of
//!   `<T_d, l>`; [`critical_patch_size`] finds the epsilon-patches and the critical patch size P.
//! - **Sequence finding** (Sec. 3.3): `scores[test][sigma]`, summed over the distances and the
//!   patch-start locations; [`best_sequence`] takes the Pareto-optimal sequences over MP, LB and
//!   SB and breaks ties as the paper does.
//! - **Spread finding** (Sec. 3.4): `scores[test][m - 1]` for m = 1..M; [`best_spread`].
//!
//! [`RawCounts`] is the JSON that `wmfix tune` writes beside the profile and `wmfix tune
//! --analyse FILE` reads; every phase is optional, so a partial run can be analysed. [`run`]
//! is the `--analyse` command: it prints [`report`], writes `profile.toml` (the runtime's TOML
//! subset, see `runtime-cu/README.md`), `analysis.json` and the plots of `plots.rs`.

pub mod analyse;
pub mod analysis;
pub mod choice;
pub mod measure;
pub mod patch;
pub mod plots;
pub mod raw;
pub mod report;
pub mod structure;

#[cfg(test)]
mod tests;

//! The user's application and the output folder wmfix works in: `wmfix.toml`, nvcc, child
//! processes in their own process groups, the claim on the output folder (and the Slurm steps of
//! its runs), the builds.

pub mod build_macros;
pub mod builder;
pub mod child;
pub mod claim;
pub mod config;
pub mod host_lib;
pub mod slurm;
pub mod toolchain;

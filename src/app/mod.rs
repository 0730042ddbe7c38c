//! The user's application: `wmfix.toml`, builds of the original and the instrumented program, nvcc, digests, the runtime headers.

pub mod builder;
pub mod config;
pub mod digest;
pub mod runtime_headers;
pub mod toolchain;

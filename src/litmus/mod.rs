//! The litmus engine and its vocabulary: tests, access sequences, chip profiles.

pub mod engine;
pub mod profile;
pub mod report;
pub mod vocabulary;

//! `wmfix insert`: CUDA sources to the instrumented tree and `fences.json`.

pub mod aim;
pub mod calls;
pub mod device_code;
pub mod dump;
pub mod edits;
pub mod insert;
pub mod macros;
pub mod mask;
pub mod mask_forms;
pub mod parallel;
pub mod parse;
pub mod plan;
pub mod preprocess;
pub mod queries;
pub mod ranges;
pub mod reach;
pub mod render;
pub mod runtime_headers;
pub mod scopes;
pub mod sites;
pub mod source;
pub mod top_level;
pub mod walk;
pub mod write_back;

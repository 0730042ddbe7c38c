//! Running the program under stress: testing environments, one run and its outcome, many runs
//! at once, the held CUDA context.

pub mod batch;
pub mod environment;
pub mod hold;
pub mod trial;

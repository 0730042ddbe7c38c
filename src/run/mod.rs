//! Running the program under stress: testing environments, one run and its outcome, many runs
//! at once, the held CUDA context, the chip profile the runs get.

pub mod batch;
pub mod environment;
pub mod hold;
pub mod profile;
pub mod trial;

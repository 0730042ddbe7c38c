//! Running the program: a child in its own process group, one run and its outcome, many runs at once, testing environments, the output directory claim, ctrl-c, the held CUDA context.

pub mod batch;
pub mod child;
pub mod claim;
pub mod environment;
pub mod hold;
pub mod interrupt;
pub mod trial;

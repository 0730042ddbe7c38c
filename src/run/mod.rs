//! Running the program under stress: testing environments, one run and its outcome, many runs
//! at once, the held CUDA context, the chip profile the runs get, the sanity check before them,
//! which fence sites the runs executed on global memory, an MPS server of wmfix's own, warm
//! processes that serve many runs each (as many at a time a GPU as make the most runs) and the check that they agree with cold ones.

pub mod batch;
pub mod counts;
pub mod coverage;
pub mod differential;
pub mod environment;
pub mod hold;
pub mod mps;
pub mod pace;
pub mod probe;
pub mod profile;
pub mod sanity;
pub mod trial;
pub mod warm;
pub mod warm_check;

//! `wmfix cost`: what the fences cost in time and energy.

pub mod energy;
pub mod measure;

//! The scope of the fences wmfix inserts (`--fence`): block, device or system.

use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum FenceScope {
    /// `__threadfence_block()`
    Block,
    /// `__threadfence()`
    Device,
    /// `__threadfence_system()`
    System,
}

impl FenceScope {
    /// The CUDA fence of this scope.
    pub fn call(self) -> &'static str {
        match self {
            FenceScope::Block => "__threadfence_block()",
            FenceScope::Device => "__threadfence()",
            FenceScope::System => "__threadfence_system()",
        }
    }

    pub fn code(self) -> u8 {
        match self {
            FenceScope::Block => 0,
            FenceScope::Device => 1,
            FenceScope::System => 2,
        }
    }
}

//! The memory scopes of the PTX model, as the detector orders by them.

/// A memory scope of the PTX model (cluster scope is read as block scope).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    Block,
    Device,
    System,
}

impl Scope {
    pub fn name(self) -> &'static str {
        match self {
            Scope::Block => "block",
            Scope::Device => "device",
            Scope::System => "system",
        }
    }

    /// A trace record's scope bits (`format::flag`).
    pub fn from_bits(bits: u8) -> Scope {
        match bits & 3 {
            0 => Scope::Block,
            1 => Scope::Device,
            _ => Scope::System,
        }
    }
}

impl From<crate::fences::scope::FenceScope> for Scope {
    fn from(f: crate::fences::scope::FenceScope) -> Scope {
        use crate::fences::scope::FenceScope;
        match f {
            FenceScope::Block => Scope::Block,
            FenceScope::Device => Scope::Device,
            FenceScope::System => Scope::System,
        }
    }
}

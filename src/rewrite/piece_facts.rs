//! What the pieces of a big file (`pieces.rs`) tell each other: the facts a plan of one piece
//! takes from the rest of its file, and those it gives. A file planned whole takes none.

use crate::rewrite::device_code::Members;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// What one piece learns from the other pieces of its file.
#[derive(Clone, Default)]
pub struct Imports<'s> {
    /// `__device__` variables the other pieces declare outside functions (its own may be
    /// among them).
    pub globals: Arc<HashSet<&'s str>>,
    /// Macros the other pieces define whose bodies may access memory.
    pub hiding: Arc<HashSet<&'s str>>,
    /// Names that earlier pieces last bound at file scope to memory that is not global (a
    /// `__shared__` array, a pointer into one), each with the byte it is visible from.
    pub local_names: Vec<(&'s str, usize)>,
    /// The pointer parameters (function name, parameter index) that every call in the whole
    /// file passes local memory; `None`: as this piece's own calls say.
    pub local_params: Option<Vec<(&'s str, usize)>>,
    /// The struct members the other pieces declare (arrays, and otherwise).
    pub members: Arc<Members<'s>>,
}

/// What one piece tells the other pieces of its file.
#[derive(Default)]
pub struct Exports<'s> {
    /// `__device__` variables declared outside functions whose name alone reads them.
    pub globals: HashSet<&'s str>,
    /// The names of its top-level `__device__` declarations.
    pub top: HashSet<&'s str>,
    /// The name of each access through a `__device__` variable's name.
    pub global_uses: Vec<&'s str>,
    /// Macros it defines whose bodies may access memory.
    pub hiding: Vec<&'s str>,
    /// How many times it names each identifier.
    pub idents: HashMap<&'s str, usize>,
    /// What it binds at file scope: name, the byte it is visible from, whether it is local.
    pub file_scope: Vec<(&'s str, usize, bool)>,
    /// Device functions (not kernels) it defines: name, which parameters are pointers.
    pub callees: Vec<(&'s str, Vec<bool>)>,
    /// Its calls by name: name, which arguments point into local memory.
    pub calls: Vec<(&'s str, Vec<bool>)>,
    /// The pointer parameters its own calls alone pass local memory (function, index).
    pub local_params: Vec<(&'s str, usize)>,
    /// The struct members it declares, and the member names it uses after `.`.
    pub members: Members<'s>,
    pub member_uses: HashSet<&'s str>,
}

//! `fences.json`: every fence of the instrumented program, written by `insert` and read back
//! by `reduce`, `cost` and `build`, through these types both ways.

use crate::exit_code::{self, fail};
use crate::fences::id::FenceId;
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What an access does to global memory. A site's kind is the greatest of its accesses'.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AccessKind {
    Load,
    Store,
    /// A cache-operator or CUB load/store call that takes the address: `__ldcg(p)`,
    /// `__stcg(p, v)`, `ThreadLoad<LOAD_CG>(p)`, `detail::store_release(p, v)` (counted as
    /// atomics by wmfix before issue 47: `atomic` in older records).
    Call,
    Atomic,
}

impl AccessKind {
    /// The name `fences.json` uses, also before each of a fence's `accesses`.
    pub fn name(self) -> &'static str {
        match self {
            AccessKind::Load => "load",
            AccessKind::Store => "store",
            AccessKind::Call => "call",
            AccessKind::Atomic => "atomic",
        }
    }

    /// What a reader is told a fence follows: "after load/store call `__stcg(p, v);`".
    pub fn label(self) -> &'static str {
        match self {
            AccessKind::Call => "load/store call",
            k => k.name(),
        }
    }
}

impl std::fmt::Display for AccessKind {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How a fence's text is inserted at one place.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum How {
    /// A statement after the access's statement.
    Statement,
    /// `, fence` inside a comma expression.
    Comma,
    /// Around a value: the value is computed, then the fence, then the value is used.
    Wrap,
}

/// Where a fence's text goes. In preprocessed mode `line` is, like the record's, the line of
/// the file the code came from; `column` and `byte` are of the preprocessed translation unit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Placement {
    pub line: usize,
    pub column: usize,
    pub byte: usize,
    pub how: How,
    /// The top of the body of a loop whose condition the fence follows (`WMFIX_IN_LOOP`);
    /// the fence's other placement is after the loop.
    #[serde(default, skip_serializing_if = "is_false")]
    pub loop_body: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// One fence.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FenceRecord {
    pub id: FenceId,
    pub file: PathBuf,
    pub line: usize,
    pub column: usize,
    pub function: String,
    /// The statement, condition or value whose accesses the fence follows.
    pub access: String,
    pub kind: AccessKind,
    /// The kind of the access the fence names (`WMFIX_FENCE_AT`), where it is not `kind`
    /// (a statement whose store could not be named): what `wmfix race` records it as.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aimed: Option<AccessKind>,
    /// Each access it follows: `kind: text`.
    pub accesses: Vec<String>,
    pub placements: Vec<Placement>,
    /// In a function no launched kernel reaches (`rewrite/reach.rs`): never executed, so
    /// never needed. Absent (false) in lists written before wmfix looked.
    #[serde(default, skip_serializing_if = "is_false")]
    pub unreachable: bool,
    /// In a library header outside the application (preprocessed mode): a reduction keeping it
    /// can report it but not patch it, so it prefers the application's own fences.
    #[serde(default, skip_serializing_if = "is_false")]
    pub library: bool,
}

impl FenceRecord {
    /// `file:line:column`.
    pub fn location(&self) -> String {
        format!("{}:{}:{}", self.file.display(), self.line, self.column)
    }
}

/// The file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FenceList {
    pub version: u32,
    pub fence_scope: crate::fences::scope::FenceScope,
    pub root: PathBuf,
    pub total: usize,
    pub fences: Vec<FenceRecord>,
}

pub const VERSION: u32 = 1;

impl FenceList {
    pub fn load(path: &Path) -> Result<FenceList> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| fail(exit_code::NO_INPUT, format!("{}: {e}", path.display())))?;
        let list: FenceList = serde_json::from_str(&text)
            .map_err(|e| fail(exit_code::BAD_INPUT, format!("{}: {e}", path.display())))?;
        if list.version != VERSION || list.total != list.fences.len() {
            return Err(fail(
                exit_code::BAD_INPUT,
                format!(
                    "{}: version {} with {} of {} fences listed; run `wmfix build` again",
                    path.display(),
                    list.version,
                    list.fences.len(),
                    list.total
                ),
            ));
        }
        Ok(list)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_round_trips_and_a_short_one_is_refused() {
        let list = FenceList {
            version: VERSION,
            fence_scope: crate::fences::scope::FenceScope::Device,
            root: "/app".into(),
            total: 1,
            fences: vec![FenceRecord {
                id: FenceId(0),
                file: "k.cu".into(),
                line: 3,
                column: 5,
                function: "k".into(),
                access: "x[i] = 1;".into(),
                kind: AccessKind::Store,
                aimed: None,
                accesses: vec!["store: x[i]".into()],
                placements: vec![Placement {
                    line: 3,
                    column: 14,
                    byte: 40,
                    how: How::Statement,
                    loop_body: true,
                }],
                unreachable: true,
                library: true,
            }],
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fences.json");
        std::fs::write(&path, serde_json::to_string_pretty(&list).unwrap()).unwrap();
        assert_eq!(FenceList::load(&path).unwrap(), list);
        assert_eq!(list.fences[0].location(), "k.cu:3:5");
        let short = FenceList { total: 2, ..list };
        std::fs::write(&path, serde_json::to_string(&short).unwrap()).unwrap();
        let e = FenceList::load(&path).unwrap_err();
        assert_eq!(exit_code::code_of(&e), exit_code::BAD_INPUT);
    }
}

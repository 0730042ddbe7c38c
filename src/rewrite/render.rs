//! Instruments a whole program: plans every file, numbers the fences across the program in
//! source order (files by path, then byte offset), and renders each file's new text.

use crate::rewrite::device_code::AccessKind;
use crate::rewrite::edits::{self, Edit};
use crate::rewrite::parse::{self, SyntaxError};
use crate::rewrite::plan::{self, FilePlan};
use crate::rewrite::sites::{Piece, Site};
use crate::rewrite::source::SourceFile;
use serde::Serialize;
use std::collections::BTreeSet;
use std::path::PathBuf;

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

    fn code(self) -> u8 {
        match self {
            FenceScope::Block => 0,
            FenceScope::Device => 1,
            FenceScope::System => 2,
        }
    }
}

#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct Placement {
    pub line: usize,
    pub column: usize,
    pub byte: usize,
    /// `statement`, `comma` or `wrap` (around a value).
    pub how: &'static str,
}

/// One fence, as listed in `fences.json`.
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct FenceRecord {
    pub id: usize,
    pub file: PathBuf,
    pub line: usize,
    pub column: usize,
    pub function: String,
    /// The statement, condition or value whose accesses the fence follows.
    pub access: String,
    pub kind: AccessKind,
    /// Each access it follows: `kind: text`.
    pub accesses: Vec<String>,
    pub placements: Vec<Placement>,
}

/// A planned file.
pub struct Planned {
    pub file: SourceFile,
    pub plan: FilePlan,
    /// Its first syntax error; the plan leaves the unparsed part alone.
    pub syntax_error: Option<SyntaxError>,
}

pub struct Instrumented {
    /// New text per planned file, `None` where nothing changes.
    pub texts: Vec<Option<String>>,
    pub fences: Vec<FenceRecord>,
}

/// Parses and plans one file.
pub fn plan_file(file: SourceFile) -> Planned {
    let tree = parse::parse(&file.text);
    Planned {
        plan: plan::plan(&file, &tree),
        syntax_error: parse::syntax_error(&tree),
        file,
    }
}

/// Parses and plans every file on all cores, in input order: fences are numbered afterwards,
/// so the result does not depend on which thread planned which file.
pub fn plan_files(files: Vec<SourceFile>) -> Vec<Planned> {
    crate::rewrite::parallel::map(files, plan_file)
}

/// Numbers the fences of all files and renders them. `include` gives the `#include` path of the
/// runtime header for a file.
pub fn render(
    files: &mut [Planned],
    scope: FenceScope,
    include: impl Fn(&SourceFile) -> String,
) -> Result<Instrumented, edits::Overlap> {
    files.sort_by(|a, b| a.file.rel.cmp(&b.file.rel));
    let total: usize = files.iter().map(|f| f.plan.sites.len()).sum();
    let mut next_id = 0;
    let mut fences = Vec::with_capacity(total);
    let mut texts = Vec::with_capacity(files.len());
    for Planned { file, plan, .. } in files.iter() {
        if plan.is_empty() {
            texts.push(None);
            continue;
        }
        let mut edits = plan.fixed.clone();
        for site in &plan.sites {
            edits.extend(site_edits(site, next_id));
            edits.extend(site.braces.iter().cloned());
            fences.push(record(file, plan, site, next_id));
            next_id += 1;
        }
        let prologue = format!(
            "#define WMFIX_NUM_FENCES {}\n#define WMFIX_FENCE_SCOPE {}\n#include \"{}\"\n#line 1\n",
            total.max(1),
            scope.code(),
            include(file)
        );
        edits.push(Edit::insert(0, edits::Slot::open(0, false), prologue));
        texts.push(Some(edits::apply(&file.text, edits)?));
    }
    Ok(Instrumented { texts, fences })
}

/// The original files with only the `kept` fences, written as plain CUDA fences with a comment
/// naming the access each orders: what `fences.patch` adds. `None` where a file keeps none.
pub fn render_hardened(
    files: &mut [Planned],
    kept: &BTreeSet<usize>,
    scope: FenceScope,
) -> Result<Vec<Option<String>>, edits::Overlap> {
    files.sort_by(|a, b| a.file.rel.cmp(&b.file.rel));
    let mut next_id = 0;
    let mut texts = Vec::with_capacity(files.len());
    for Planned { file, plan, .. } in files.iter() {
        let mut edits = Vec::new();
        for site in &plan.sites {
            if kept.contains(&next_id) {
                let note = format!(
                    "wmfix fence {next_id}: after {} `{}`",
                    kind_name(site.kind()),
                    plan::one_line(&file.text[site.range.clone()])
                );
                let host = plan.functions[site.function].1;
                edits.extend(hardened_edits(
                    site,
                    scope.call(),
                    &note.replace("*/", "* /"),
                    host,
                ));
                edits.extend(site.braces.iter().cloned());
            }
            next_id += 1;
        }
        texts.push(if edits.is_empty() {
            None
        } else {
            Some(edits::apply(&file.text, edits)?)
        });
    }
    Ok(texts)
}

/// Plain CUDA fences. In `__host__ __device__` functions the fence exists only in the device
/// pass, so it goes between `#ifdef __CUDA_ARCH__` lines.
fn hardened_edits<'s>(
    site: &'s Site,
    call: &'s str,
    note: &'s str,
    host: bool,
) -> impl Iterator<Item = Edit> + 's {
    let guard = move |code: String| {
        if host {
            format!("\n#ifdef __CUDA_ARCH__\n{code}\n#endif\n")
        } else {
            code
        }
    };
    site.spots.iter().map(move |s| {
        let text = match s.piece {
            Piece::Fence => guard(format!(" {call}; /* {note} */")),
            Piece::CommaFence => guard(format!(", {call}")),
            Piece::WrapOpen => "[&] { auto wmfix_value = (".to_string(),
            Piece::WrapClose => format!(
                "); {} return wmfix_value; }}()",
                guard(format!("{call}; /* {note} */"))
            ),
        };
        Edit::insert(s.at, s.slot, text)
    })
}

fn kind_name(k: AccessKind) -> &'static str {
    match k {
        AccessKind::Load => "load",
        AccessKind::Store => "store",
        AccessKind::Atomic => "atomic",
    }
}

fn site_edits(site: &Site, id: usize) -> impl Iterator<Item = Edit> + '_ {
    site.spots.iter().map(move |s| {
        let text = match s.piece {
            Piece::Fence => format!(" WMFIX_FENCE({id});"),
            Piece::CommaFence => format!(", WMFIX_FENCE_EXPR({id})"),
            Piece::WrapOpen => format!("WMFIX_AFTER({id}, "),
            Piece::WrapClose => ")".to_string(),
        };
        Edit::insert(s.at, s.slot, text)
    })
}

fn record(file: &SourceFile, plan: &FilePlan, site: &Site, id: usize) -> FenceRecord {
    let first = site.accesses[0].0.start;
    let (line, column) = file.line_col(first);
    let placements = site
        .spots
        .iter()
        .filter(|s| s.piece != Piece::WrapClose)
        .map(|s| {
            let (line, column) = file.line_col(s.at);
            let how = match s.piece {
                Piece::Fence => "statement",
                Piece::CommaFence => "comma",
                _ => "wrap",
            };
            Placement {
                line,
                column,
                byte: s.at,
                how,
            }
        })
        .collect();
    FenceRecord {
        id,
        file: file.rel.clone(),
        line,
        column,
        function: plan.functions[site.function].0.clone(),
        access: plan::one_line(&file.text[site.range.clone()]),
        kind: site.kind(),
        accesses: site
            .accesses
            .iter()
            .map(|(r, k)| {
                format!(
                    "{}: {}",
                    kind_name(*k),
                    plan::one_line(&file.text[r.clone()])
                )
            })
            .collect(),
        placements,
    }
}

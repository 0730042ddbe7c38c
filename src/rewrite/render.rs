//! Instruments a whole program: plans every file, numbers the fences across the program in
//! source order (files by path, then byte offset), and renders each file's new text.

use crate::fences::id::{FenceId, Ids};
use crate::fences::record::{AccessKind, FenceRecord, How, Placement};
use crate::fences::scope::FenceScope;
use crate::rewrite::aim::AimForm;
use crate::rewrite::branches::Groups;
use crate::rewrite::configs;
use crate::rewrite::device_code::{self, Program};
use crate::rewrite::edits::{self, Edit};
use crate::rewrite::macros::Macros;
use crate::rewrite::parallel;
use crate::rewrite::parse::{self, SyntaxError};
use crate::rewrite::plan::{self, FilePlan};
use crate::rewrite::queries::{self, Captures};
use crate::rewrite::scopes::Scopes;
use crate::rewrite::sites::{Piece, Site};
use crate::rewrite::source::SourceFile;

/// A planned file.
pub struct Planned {
    pub file: SourceFile,
    pub plan: FilePlan,
    /// Its first syntax error; the plan leaves the unparsed part alone.
    pub syntax_error: Option<SyntaxError>,
}

/// Edits that stand or fall together: one fixed edit, or one fence's edits and braces.
pub struct Group {
    pub fence: Option<FenceId>,
    pub edits: Vec<Edit>,
}

pub struct Instrumented {
    /// New text per planned file, `None` where nothing changes.
    pub texts: Vec<Option<String>>,
    pub fences: Vec<FenceRecord>,
}

/// Sites rendered by one thread at a time: a file with fewer is rendered where it is.
const SITES_PER_CHUNK: usize = 8192;

/// Source bytes above which a file's parse tree, and its rendered edits, are freed on a thread
/// of their own.
const BIG_TREE: usize = 1 << 20;

/// Parses and plans one file that sees `program`.
pub fn plan_file(file: SourceFile, program: &Program) -> Planned {
    let masked = parse::mask(&file.text, &program.macros);
    // `#if` groups with more than one branch; where one declares a `__device__` variable that
    // another names (`constexpr int n` in the other), each configuration is planned (`configs`).
    let groups = Groups::scan(&masked.text);
    let per_branch = groups
        .as_ref()
        .is_some_and(|g| masked.text.contains("__device__") && g.declared_per_branch(&masked.text));
    if !per_branch && let Some(plan) = crate::rewrite::pieces::plan(&file, &masked, program) {
        drop(masked);
        return Planned {
            plan,
            syntax_error: None,
            file,
        };
    }
    let parse::Masked {
        tree,
        attribute: _,
        first_branch_only,
        first_branches,
        qualified,
    } = parse::parse_whole(&masked);
    // Where a group splits a statement (the file parses better with the first branches alone:
    // an `#else` left out, or a group without one that holds an unbraced body), or a name is
    // declared per branch: every configuration planned, the plans merged.
    if let Some(groups) = groups.filter(|_| per_branch || first_branches) {
        let split = first_branches;
        if file.text.len() > BIG_TREE {
            parallel::drop_later(tree);
        } else {
            drop(tree);
        }
        let (plan, syntax_error) = match configs::plan(&file, &masked, program, &groups, split) {
            Some(m) => (m.plan, m.syntax_error),
            // Nested too deep: parsed whole again, as the file was planned before.
            None => {
                let tree = parse::parse_whole(&masked).tree;
                plan_tree(&file, tree, program, &qualified, first_branch_only)
            }
        };
        drop(masked);
        return Planned {
            plan,
            syntax_error,
            file,
        };
    }
    let (plan, syntax_error) = plan_tree(&file, tree, program, &qualified, first_branch_only);
    drop(masked);
    Planned {
        plan,
        syntax_error,
        file,
    }
}

/// The plan of `file` parsed as `tree`, and its first syntax error; `first_branch_only`: where
/// the first `#else` left out is, said in a warning.
fn plan_tree(
    file: &SourceFile,
    tree: tree_sitter::Tree,
    program: &Program,
    qualified: &[crate::rewrite::mask::Qualified],
    first_branch_only: Option<usize>,
) -> (FilePlan, Option<SyntaxError>) {
    let syntax_error = parse::syntax_error(&tree, &file.text);
    // Too deep a tree is not queried at all: tree-sitter's query cursor takes time quadratic in
    // its depth (200,000 nested blocks ran past 300 s).
    let mut plan = match &syntax_error {
        Some(e) if e.too_deep => plan::FilePlan::none(),
        _ => plan::plan(file, &tree, program, qualified),
    };
    // A big file's tree takes a while to free (tree-sitter frees node by node): on another
    // thread, while this one renders.
    if file.text.len() > BIG_TREE {
        parallel::drop_later(tree);
    }
    if let Some(at) = first_branch_only {
        plan.warnings.push(format!(
            "{}: `#if`/`#else` splits a statement and the file's `#if` groups need more than {} configurations; only the first branch of each `#if` in this file is instrumented",
            file.location(at),
            crate::rewrite::branches::MAX_CONFIGS
        ));
    }
    (plan, syntax_error)
}

/// Parses and plans every file on all cores, in input order: fences are numbered afterwards,
/// so the result does not depend on which thread planned which file. Headers are read first
/// for the `__device__` variables they declare, which every file may use: only those that say
/// `__device__` (what the declaration query matches), which spares CCCL 2,160 of its 2,310
/// headers a second parse.
pub fn plan_files(files: Vec<SourceFile>, macros: Macros) -> Vec<Planned> {
    let headers: Vec<&SourceFile> = files
        .iter()
        .filter(|f| !is_source(f) && f.text.contains("__device__"))
        .collect();
    let names = parallel::map(headers, |f| {
        // A name declared `__device__` in one `#if` branch and otherwise in another is no
        // header global: which it is depends on the configuration, which the header's own plan
        // resolves per configuration (`configs.rs`); another file's uses of it get no fence.
        if let Some(per_branch) = Groups::scan(&f.text).map(|g| g.per_branch_names(&f.text))
            && !per_branch.is_empty()
        {
            let tree = parse::parse(&f.text);
            let caps = Captures::run(queries::all(), tree.root_node(), f.text.as_bytes());
            let scopes = Scopes::new(&caps);
            return device_code::global_variables(&caps, &f.text, &scopes)
                .into_iter()
                .filter(|n| !per_branch.contains(n))
                .map(str::to_string)
                .collect();
        }
        if let Some(names) = crate::rewrite::pieces::header_globals(f) {
            return names;
        }
        let tree = parse::parse(&f.text);
        let caps = Captures::run(queries::all(), tree.root_node(), f.text.as_bytes());
        let scopes = Scopes::new(&caps);
        device_code::global_variables(&caps, &f.text, &scopes)
            .into_iter()
            .map(str::to_string)
            .collect::<Vec<_>>()
    });
    let program = Program {
        header_globals: names.into_iter().flatten().collect(),
        macros,
    };
    parallel::map(files, |f| plan_file(f, &program))
}

fn is_source(f: &SourceFile) -> bool {
    f.rel.extension().is_some_and(|e| e == "cu")
}

/// The program's one fence numbering, which both renderings use: files by path, then each
/// file's sites in source order, ids from 0. Sorts `files` by path.
fn numbered(files: &mut [Planned]) -> Vec<(&Planned, Vec<(&Site, FenceId)>)> {
    files.sort_by(|a, b| a.file.rel.cmp(&b.file.rel));
    let mut next = 0;
    files
        .iter()
        .map(|p| {
            let sites = p
                .plan
                .sites
                .iter()
                .map(|site| {
                    next += 1;
                    (site, FenceId(next - 1))
                })
                .collect();
            (p, sites)
        })
        .collect()
}

/// Numbers the fences of all files and renders them. `include` gives the `#include` path of the
/// runtime header for a file.
pub fn render(
    files: &mut [Planned],
    scope: FenceScope,
    include: impl Fn(&SourceFile) -> String,
) -> Result<Instrumented, edits::Overlap> {
    let numbered = numbered(files);
    let total: usize = numbered.iter().map(|(_, sites)| sites.len()).sum();
    let mut fences = Vec::with_capacity(total);
    let mut texts = Vec::with_capacity(numbered.len());
    for (Planned { file, plan, .. }, sites) in numbered {
        if plan.is_empty() {
            texts.push(None);
            continue;
        }
        // The edits in the order of `edit_groups`, borrowed, without a list a group: a big file
        // has hundreds of thousands.
        let mut done = fence_chunks(file, plan, sites);
        let prologue = Edit::insert(
            0,
            edits::Slot::open(0, false),
            prologue(total, scope, &include(file)),
        );
        let count = done.iter().map(|c| c.0.len()).sum::<usize>() + plan.fixed.len() + 1;
        let mut edits: Vec<&Edit> = Vec::with_capacity(count);
        edits.extend(&plan.fixed);
        for (chunk, _, records) in &mut done {
            edits.extend(&*chunk);
            fences.append(records);
        }
        edits.push(&prologue);
        texts.push(Some(edits::apply(&file.text, edits)?));
        if file.text.len() > BIG_TREE {
            parallel::drop_later(done);
        }
    }
    Ok(Instrumented { texts, fences })
}

/// A file's fences rendered in chunks on all cores, joined in order: their edits, how many of
/// them each fence has, and their records.
type Chunk = (Vec<Edit>, Vec<usize>, Vec<FenceRecord>);

fn fence_chunks(file: &SourceFile, plan: &FilePlan, sites: Vec<(&Site, FenceId)>) -> Vec<Chunk> {
    let replaced = replacements(&plan.fixed);
    let chunks: Vec<Vec<(&Site, FenceId)>> =
        sites.chunks(SITES_PER_CHUNK).map(<[_]>::to_vec).collect();
    parallel::map(chunks, |chunk| {
        let mut edits = Vec::with_capacity(chunk.len() * 2);
        let mut counts = Vec::with_capacity(chunk.len());
        let mut records = Vec::with_capacity(chunk.len());
        for (site, id) in chunk {
            let before = edits.len();
            edits.extend(site_edits(site, id, &file.text, &replaced));
            edits.extend(site.braces.iter().cloned());
            counts.push(edits.len() - before);
            records.push(record(file, plan, site, id));
        }
        (edits, counts, records)
    })
}

/// What every instrumented file starts with: the fence count, the scope and the runtime header.
pub fn prologue(total: usize, scope: FenceScope, include: &str) -> String {
    format!(
        "#define WMFIX_NUM_FENCES {}\n#define WMFIX_FENCE_SCOPE {}\n#include \"{include}\"\n#line 1\n",
        total.max(1),
        scope.code(),
    )
}

/// Numbers the fences of all files (sorting `files` by path) and gives each file's edits in
/// groups that stand or fall together: each fixed edit alone, then each fence's edits with its
/// braces. `None` where a file has nothing to change. Preprocessed mode writes the groups back
/// into the files the translation unit came from (`write_back`).
pub fn edit_groups(files: &mut [Planned]) -> (Vec<Option<Vec<Group>>>, Vec<FenceRecord>) {
    let numbered = numbered(files);
    let total: usize = numbered.iter().map(|(_, sites)| sites.len()).sum();
    let mut fences = Vec::with_capacity(total);
    let mut out = Vec::with_capacity(numbered.len());
    for (Planned { file, plan, .. }, sites) in numbered {
        if plan.is_empty() {
            out.push(None);
            continue;
        }
        let mut groups: Vec<Group> = plan
            .fixed
            .iter()
            .map(|e| Group {
                fence: None,
                edits: vec![e.clone()],
            })
            .collect();
        for (chunk, counts, records) in fence_chunks(file, plan, sites) {
            let mut chunk = chunk.into_iter();
            for (n, record) in counts.into_iter().zip(records) {
                groups.push(Group {
                    fence: Some(record.id),
                    edits: chunk.by_ref().take(n).collect(),
                });
                fences.push(record);
            }
        }
        out.push(Some(groups));
    }
    (out, fences)
}

/// The original files with only the `kept` fences, written as plain CUDA fences with a comment
/// naming the access each orders: what `fences.patch` adds. `None` where a file keeps none.
pub fn render_hardened(
    files: &mut [Planned],
    kept: &Ids,
    scope: FenceScope,
) -> Result<Vec<Option<String>>, edits::Overlap> {
    render_hardened_placed(files, kept, &Ids::new(), scope)
}

/// As `render_hardened`, but a fence of `after_loop` whose access is a loop condition (two
/// statement placements: the top of the body and after the loop) gets only the latter. (An
/// `if` condition's fence, at the top of both branches, keeps both.)
pub fn render_hardened_placed(
    files: &mut [Planned],
    kept: &Ids,
    after_loop: &Ids,
    scope: FenceScope,
) -> Result<Vec<Option<String>>, edits::Overlap> {
    let groups = hardened_groups(files, kept, after_loop, scope);
    files
        .iter()
        .zip(groups)
        .map(|(p, groups)| {
            let edits: Vec<Edit> = groups.into_iter().flat_map(|g| g.edits).collect();
            if edits.is_empty() {
                Ok(None)
            } else {
                edits::apply(&p.file.text, edits).map(Some)
            }
        })
        .collect()
}

/// Each file's `kept` fences as plain CUDA fences, one group per fence with its braces (sorting
/// `files` by path): the edits of `render_hardened_placed`, which preprocessed mode writes back
/// into the files the translation unit came from instead.
pub fn hardened_groups(
    files: &mut [Planned],
    kept: &Ids,
    after_loop: &Ids,
    scope: FenceScope,
) -> Vec<Vec<Group>> {
    let numbered = numbered(files);
    let mut out = Vec::with_capacity(numbered.len());
    for (Planned { file, plan, .. }, sites) in numbered {
        let mut groups = Vec::new();
        for (site, id) in sites.into_iter().filter(|(_, id)| kept.contains(id)) {
            let note = format!(
                "wmfix fence {id}: after {} `{}`",
                site.kind().label(),
                plan::one_line(&file.text[site.range.clone()])
            );
            let function = &plan.functions[site.function];
            let (host, void) = (function.host, function.returns_void);
            // A loop condition's fence: its placement at the top of the body dropped.
            let body = after_loop.contains(&id).then(|| {
                site.spots
                    .iter()
                    .find(|s| s.piece == Piece::LoopFence)
                    .map(|s| s.at)
            });
            let mut edits: Vec<Edit> =
                hardened_edits(site, scope.call(), &note.replace("*/", "* /"), host, void)
                    .filter(|e| body.flatten() != Some(e.start))
                    .collect();
            edits.extend(site.braces.iter().cloned());
            groups.push(Group {
                fence: Some(id),
                edits,
            });
        }
        out.push(groups);
    }
    out
}

/// Plain CUDA fences. In `__host__ __device__` functions the fence exists only in the device
/// pass, so it goes between `#ifdef __CUDA_ARCH__` lines. A `return` in a function returning
/// `void` (`return f(a[i]);`) returns a comma: the lambda's `auto` value cannot be void.
fn hardened_edits<'s>(
    site: &'s Site,
    call: &'s str,
    note: &'s str,
    host: bool,
    void: bool,
) -> impl Iterator<Item = Edit> + 's {
    let returns_void = void && site.spots.iter().any(|s| s.piece == Piece::ReturnOpen);
    let guard = move |code: String| {
        if host {
            format!("\n#ifdef __CUDA_ARCH__\n{code}\n#endif\n")
        } else {
            code
        }
    };
    site.spots.iter().map(move |s| {
        let text = match s.piece {
            Piece::Fence | Piece::LoopFence => guard(format!(" {call}; /* {note} */")),
            Piece::CommaFence => guard(format!(", {call}")),
            Piece::ReturnOpen if returns_void => "(void)(".to_string(),
            Piece::WrapClose if returns_void => {
                format!("){} /* {note} */", guard(format!(", {call}")))
            }
            Piece::WrapOpen | Piece::ReturnOpen => "[&] { auto wmfix_value = (".to_string(),
            Piece::WrapClose => format!(
                "); {} return wmfix_value; }}()",
                guard(format!("{call}; /* {note} */"))
            ),
        };
        Edit::insert(s.at, s.slot, text)
    })
}

/// `WMFIX_GLOBAL(b[j]) || ...` of a site's places but `named`, when each of its accesses is at
/// `named` or at a race hook's (plain lvalues whose text may be copied): whether one of them
/// may be global then decides the fence, as the named one's space decides `WMFIX_FENCE_AT`'s
/// (CUTLASS's basic_gemm: a copy between register arrays, `idx[i] = _idx[i]` unrolled, was 1,144
/// of its 2,923 fences; values that are no lvalue, `x * stride_[0] + y`, 276).
fn places_global(
    site: &Site,
    named: Option<&std::ops::Range<usize>>,
    text: &str,
    replaced: &[Edit],
) -> Option<String> {
    let hooks = &site.race_hooks;
    let covered =
        |r: &std::ops::Range<usize>| Some(r) == named || hooks.iter().any(|(h, _)| h == r);
    if !site.accesses.iter().all(|(r, _)| covered(r)) {
        return None;
    }
    let mut out: Vec<String> = Vec::new();
    for (r, _) in hooks.iter().filter(|(r, _)| Some(r) != named) {
        let place = format!("WMFIX_GLOBAL({})", rewritten(text, replaced, r));
        if !out.contains(&place) {
            out.push(place);
        }
    }
    (!out.is_empty()).then(|| out.join(" || "))
}

/// Whether a site's accesses are at more than one place (`s[i] = g[i]`, not `a[i] += 1`).
fn several_places(site: &Site) -> bool {
    let first = site.accesses.first().map(|(r, _)| r);
    site.accesses.iter().any(|(r, _)| Some(r) != first)
}

fn site_edits<'s>(
    site: &'s Site,
    id: FenceId,
    text: &str,
    replaced: &[Edit],
) -> impl Iterator<Item = Edit> + 's {
    let fence = match &site.aim {
        None => format!(" WMFIX_FENCE({id});"),
        Some(aim) => {
            let named = rewritten(text, replaced, &aim.range);
            // Where the statement accesses more than one place, the one named may be shared
            // memory while another is global: the fence must not depend on it alone. Where
            // every place is named (the others are the race hooks), it depends on them all.
            match (aim.form, several_places(site)) {
                (AimForm::Lvalue, false) => format!(" WMFIX_FENCE_AT({id}, {named});"),
                (AimForm::Pointer, false) => format!(" WMFIX_FENCE_PTR({id}, {named});"),
                (AimForm::Lvalue, true) => {
                    match places_global(site, Some(&aim.range), text, replaced) {
                        Some(others) => format!(" WMFIX_FENCE_AIM_IF({id}, {others}, {named});"),
                        None => format!(" WMFIX_FENCE_AIM({id}, {named});"),
                    }
                }
                (AimForm::Pointer, true) => format!(" WMFIX_FENCE_AIM_PTR({id}, {named});"),
                (AimForm::Word, false) => {
                    format!(" WMFIX_FENCE_PTR({id}, WMFIX_ATOMIC_WORD({named}));")
                }
                (AimForm::Word, true) => {
                    format!(" WMFIX_FENCE_AIM_PTR({id}, WMFIX_ATOMIC_WORD({named}));")
                }
            }
        }
    };
    // The site's other accesses, for the detection runtime only (nothing otherwise); before
    // the fence, as the named access's record is.
    let others: String = site
        .race_hooks
        .iter()
        .map(|(r, kind)| {
            let name = if *kind == AccessKind::Load {
                "WMFIX_RACE_LOAD"
            } else {
                "WMFIX_RACE_STORE"
            };
            format!(" {name}({id}, {});", rewritten(text, replaced, r))
        })
        .collect();
    let value_global = value_global(site, text, replaced);
    site.spots.iter().map(move |s| {
        let text = match s.piece {
            Piece::Fence => format!("{others}{fence}"),
            Piece::LoopFence => format!(" if (WMFIX_IN_LOOP({id})){fence}"),
            Piece::CommaFence => format!(", WMFIX_FENCE_EXPR({id})"),
            Piece::WrapOpen => match &value_global {
                Some(global) => format!("WMFIX_AFTER_IF({id}, {global}, "),
                None => format!("WMFIX_AFTER({id}, "),
            },
            Piece::ReturnOpen => match &value_global {
                Some(global) => format!("WMFIX_AFTER_RETURN_IF({id}, {global}, "),
                None => format!("WMFIX_AFTER_RETURN({id}, "),
            },
            Piece::WrapClose => ")".to_string(),
        };
        Edit::insert(s.at, s.slot, text)
    })
}

/// The places a value site's value accesses (`places_global`), where the value is not that
/// access itself, whose address `WMFIX_AFTER` takes; only for a site that wraps a value.
fn value_global(site: &Site, text: &str, replaced: &[Edit]) -> Option<String> {
    let wraps = site
        .spots
        .iter()
        .any(|s| matches!(s.piece, Piece::WrapOpen | Piece::ReturnOpen));
    let value_itself = site.accesses.iter().all(|(r, _)| *r == site.range);
    if !wraps || site.aim.is_some() || value_itself {
        return None;
    }
    places_global(site, None, text, replaced)
}

/// The replacements among a file's fixed edits (the virtual thread ids), by start.
fn replacements(fixed: &[Edit]) -> Vec<Edit> {
    let mut out: Vec<Edit> = fixed
        .iter()
        .filter(|e| e.slot == edits::Slot::Replace)
        .cloned()
        .collect();
    out.sort_by_key(|e| e.start);
    out
}

/// `text[range]` as the instrumented file has it: with the replacements inside it.
/// `replaced` is sorted by start (`replacements`), so only those inside `range` are looked at.
fn rewritten(text: &str, replaced: &[Edit], range: &std::ops::Range<usize>) -> String {
    let first = replaced.partition_point(|e| e.start < range.start);
    let inside = replaced[first..]
        .iter()
        .take_while(|e| e.start < range.end)
        .filter(|e| e.end <= range.end)
        .map(|e| Edit {
            start: e.start - range.start,
            end: e.end - range.start,
            ..e.clone()
        })
        .collect();
    // Overlapping replacements fail the whole file's rendering anyway.
    edits::apply(&text[range.clone()], inside).unwrap_or_else(|_| text[range.clone()].to_string())
}

fn record(file: &SourceFile, plan: &FilePlan, site: &Site, id: FenceId) -> FenceRecord {
    let first = site.accesses[0].0.start;
    let (line, column) = file.line_col(first);
    // Sized exactly: a big file's records are hundreds of thousands.
    let mut placements = Vec::with_capacity(site.spots.len());
    placements.extend(
        site.spots
            .iter()
            .filter(|s| s.piece != Piece::WrapClose)
            .map(|s| {
                let (line, column) = file.line_col(s.at);
                let how = match s.piece {
                    Piece::Fence | Piece::LoopFence => How::Statement,
                    Piece::CommaFence => How::Comma,
                    _ => How::Wrap,
                };
                Placement {
                    line,
                    column,
                    byte: s.at,
                    how,
                    loop_body: s.piece == Piece::LoopFence,
                }
            }),
    );
    FenceRecord {
        id,
        file: file.rel.clone(),
        line,
        column,
        function: plan.functions[site.function].name.clone(),
        access: plan::one_line(&file.text[site.range.clone()]),
        kind: site.kind(),
        aimed: site
            .aim
            .as_ref()
            .map(|a| a.kind)
            .filter(|k| *k != site.kind()),
        accesses: site
            .accesses
            .iter()
            .map(|(r, k)| format!("{k}: {}", plan::one_line(&file.text[r.clone()])))
            .collect(),
        placements,
        unreachable: !plan.functions[site.function].reachable,
        library: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hardened(text: &str, kept: &[usize], after_loop: &[usize]) -> String {
        let file = SourceFile::new("k.cu".into(), "k.cu".into(), text.to_string());
        let mut files = plan_files(vec![file], Default::default());
        let ids = |v: &[usize]| v.iter().copied().map(FenceId).collect::<Ids>();
        let texts =
            render_hardened_placed(&mut files, &ids(kept), &ids(after_loop), FenceScope::Device)
                .unwrap();
        texts[0].clone().unwrap()
    }

    #[test]
    fn after_the_loop_drops_only_a_loops_in_body_placement() {
        let spin = "__global__ void k(int *m) {\n  while (atomicCAS(m, 0, 1) != 0) {\n  }\n}\n";
        let both = hardened(spin, &[0], &[]);
        assert_eq!(both.matches("__threadfence();").count(), 2, "{both}");
        let after = hardened(spin, &[0], &[0]);
        assert!(after.contains("  } __threadfence();"), "{after}");
        assert_eq!(after.matches("__threadfence();").count(), 1, "{after}");
        // A try-lock's `if` has two placements too, one per branch: both stay.
        let try_lock = "__global__ void k(int *m, int *d) {\n  if (atomicCAS(m, 0, 1) == 0) {\n    d[0] = 1;\n  } else {\n    d[1] = 1;\n  }\n}\n";
        let kept = hardened(try_lock, &[0], &[0]);
        assert_eq!(
            kept.matches("__threadfence(); /* wmfix fence 0").count(),
            2,
            "{kept}"
        );
    }

    #[test]
    fn a_cache_operator_calls_fence_is_noted_as_after_a_load_store_call_not_an_atomic() {
        let text = "__global__ void k(float *o, int *n, float v) {\n  __stcg(&o[0], v);\n  float t = __ldcg(&o[1]);\n  atomicAdd(n, 1);\n}\n";
        let out = hardened(text, &[0, 1, 2], &[]);
        assert!(
            out.contains("/* wmfix fence 0: after load/store call `__stcg(&o[0], v);` */"),
            "{out}"
        );
        assert!(
            out.contains("/* wmfix fence 1: after load/store call `float t = __ldcg(&o[1]);` */"),
            "{out}"
        );
        assert!(
            out.contains("/* wmfix fence 2: after atomic `atomicAdd(n, 1);` */"),
            "{out}"
        );
    }

    #[test]
    fn a_void_functions_return_is_hardened_as_a_comma() {
        // `auto wmfix_value = (sink(g[0]))` cannot be void: the fence follows the call instead.
        let text = "__device__ void sink(int v);\n__device__ void relay(int *g) { return sink(g[0]); }\n__device__ int get(int *g) { return g[1]; }\n";
        let out = hardened(text, &[0, 1], &[]);
        assert!(
            out.contains("return (void)(sink(g[0])), __threadfence() /* wmfix fence 0"),
            "{out}"
        );
        assert!(
            out.contains("return [&] { auto wmfix_value = (g[1]);"),
            "{out}"
        );
    }
}

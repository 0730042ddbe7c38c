//! A big file parsed and planned in pieces, so that its parse tree (about 60 bytes a source
//! byte, and 25 more for the query's captures) is in memory a piece at a time per core.
//! Each piece is cut at a top-level declaration (`cuts.rs`), parsed alone with its nodes at
//! their offsets in the file (edits stay byte ranges of the original), and planned; the plans
//! join in source order as one plan of the whole file lists them (`plan::Order`).
//!
//! What the plan of one piece takes from the rest of the file (`piece_facts.rs`): its
//! `__device__` variables, macros that hide accesses, names bound local at file scope and the
//! pointer parameters every call passes local memory. A piece is planned with what the pieces
//! planned before it have told; one that was told less, or otherwise, than the whole file tells
//! about a name it uses, or whose functions' parameters the whole file's calls decide otherwise,
//! is parsed and planned again. So the result does not depend on which thread planned what.
//! A piece with a syntax error, or nested too deep, sends the file back to be parsed whole.

use crate::rewrite::cuts;
use crate::rewrite::device_code::{self, Members, Precision, Program};
use crate::rewrite::parallel;
use crate::rewrite::parse::{self, MaskedText};
use crate::rewrite::piece_facts::{Exports, Imports};
use crate::rewrite::plan::{self, FilePlan, PiecePlan};
use crate::rewrite::queries::{self, Captures};
use crate::rewrite::scopes::Scopes;
use crate::rewrite::source::SourceFile;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tree_sitter::{Point, Tree};

/// Files from this size on are cut.
pub const CUT_FROM: usize = 1 << 20;

/// The size of a piece. Small: the walks over a piece's tree then stay in the cache (16 MB of
/// small kernels were planned in 4.0 s in pieces of 16 KB, in 6.5 s in pieces of 1 MB, on two
/// cores).
pub const PIECE_BYTES: usize = 16 << 10;

/// The ranges of `text`'s pieces; none where it is not cut.
fn pieces(text: &str) -> Vec<Range<usize>> {
    let Some(piece) = piece_bytes(text.len()) else {
        return Vec::new();
    };
    let cuts = cuts::cuts(text, piece);
    if cuts.is_empty() {
        return Vec::new();
    }
    let starts = std::iter::once(0).chain(cuts.iter().copied());
    let ends = cuts.iter().copied().chain(std::iter::once(text.len()));
    starts.zip(ends).map(|(s, e)| s..e).collect()
}

/// `text[range]` of `file` parsed alone; `None` where it has a syntax error or is nested too deep.
fn parse_piece(file: &SourceFile, text: &str, range: Range<usize>) -> Option<Tree> {
    let point = |at: usize| {
        let (line, column) = file.line_col(at);
        Point::new(line - 1, column - 1)
    };
    let (start, end) = (point(range.start), point(range.end));
    let tree = parse::parse_range(text, range, start, end);
    parse::syntax_error(&tree, &file.text)
        .is_none()
        .then_some(tree)
}

/// The plan of `file` (masked as `masked`) made in pieces; `None` where it is not cut, or a piece
/// does not parse cleanly: then it is parsed whole.
pub fn plan(file: &SourceFile, masked: &MaskedText, program: &Program) -> Option<FilePlan> {
    let ranges = pieces(&masked.text);
    if ranges.is_empty() {
        return None;
    }
    let failed = AtomicBool::new(false);
    let told = Mutex::new(Told::default());
    // Tests plan every piece alone first too: then each is planned again where it must be.
    #[cfg(test)]
    let told = Mutex::new(Told {
        alone: tests::ALONE.get(),
        ..told.into_inner().unwrap()
    });
    let planned = parallel::map(ranges.iter().cloned().enumerate().collect(), |(i, r)| {
        if failed.load(Ordering::Relaxed) {
            return None;
        }
        let Some(tree) = parse_piece(file, &masked.text, r) else {
            failed.store(true, Ordering::Relaxed);
            return None;
        };
        let used = told.lock().unwrap().imports(i);
        let mut plan = plan::plan_piece(file, &tree, program, &masked.qualified, &used, true);
        told.lock().unwrap().tell(i, &plan.exports);
        compact(&mut plan.plan);
        Some(Part { plan, used })
    });
    let mut parts: Vec<Part> = planned.into_iter().collect::<Option<_>>()?;
    reconcile(&mut parts, |i, imports| {
        let tree = parse_piece(file, &masked.text, ranges[i].clone())?;
        let qualified = &masked.qualified;
        Some(plan::plan_piece(
            file, &tree, program, qualified, imports, true,
        ))
    })?;
    #[cfg(test)]
    tests::PIECED.set(tests::PIECED.get() + 1);
    Some(join(parts.into_iter().map(|p| p.plan).collect()))
}

/// `plan`'s sites without spare capacity: a big file's are hundreds of thousands, kept until
/// they are rendered.
fn compact(plan: &mut FilePlan) {
    for site in plan.sites.iter_mut() {
        site.accesses.shrink_to_fit();
        site.spots.shrink_to_fit();
        site.race_hooks.shrink_to_fit();
    }
}

/// A piece's plan and what it was told.
struct Part<'s> {
    plan: PiecePlan<'s>,
    used: Imports<'s>,
}

/// What the pieces planned so far have told: a piece planned later is told it, so that it is
/// seldom planned again (a `__device__` variable declared at the top and used everywhere).
#[derive(Default)]
struct Told<'s> {
    globals: Arc<HashSet<&'s str>>,
    hiding: Arc<HashSet<&'s str>>,
    members: Arc<Members<'s>>,
    /// By piece, what the pieces that bind names at file scope bind.
    file_scope: BTreeMap<usize, Vec<(&'s str, usize, bool)>>,
    #[cfg(test)]
    alone: bool,
}

impl<'s> Told<'s> {
    fn tell(&mut self, piece: usize, e: &Exports<'s>) {
        let more = |set: &mut Arc<HashSet<&'s str>>, names: &mut dyn Iterator<Item = &&'s str>| {
            let new: Vec<&str> = names.filter(|n| !set.contains(*n)).copied().collect();
            if !new.is_empty() {
                Arc::make_mut(set).extend(new);
            }
        };
        more(&mut self.globals, &mut e.globals.iter());
        more(&mut self.hiding, &mut e.hiding.iter());
        if !e.members.arrays.is_empty() || !e.members.others.is_empty() {
            Arc::make_mut(&mut self.members).extend(&e.members);
        }
        if !e.file_scope.is_empty() {
            self.file_scope.insert(piece, e.file_scope.clone());
        }
    }

    /// What piece `i` is told: every global and macro told, and what the pieces before it
    /// told of file scope.
    fn imports(&self, i: usize) -> Imports<'s> {
        #[cfg(test)]
        if self.alone {
            return Imports::default();
        }
        let mut last = HashMap::new();
        bind(&mut last, self.file_scope.range(..i).flat_map(|(_, b)| b));
        Imports {
            globals: self.globals.clone(),
            hiding: self.hiding.clone(),
            local_names: local_names(&last),
            local_params: None,
            members: self.members.clone(),
        }
    }
}

/// `bound` (file-scope bindings in source order) added to `last`, what was last bound to
/// each name at file scope: the byte it is visible from, and whether it is local.
fn bind<'a, 's: 'a>(
    last: &mut HashMap<&'s str, (usize, bool)>,
    bound: impl IntoIterator<Item = &'a (&'s str, usize, bool)>,
) {
    for &(name, from, local) in bound {
        let latest = last.entry(name).or_insert((from, local));
        if from >= latest.0 {
            *latest = (from, local);
        }
    }
}

/// The names `last` binds local, with the byte each is visible from; sorted.
fn local_names<'s>(last: &HashMap<&'s str, (usize, bool)>) -> Vec<(&'s str, usize)> {
    let mut out: Vec<(&str, usize)> = last
        .iter()
        .filter(|(_, (_, local))| *local)
        .map(|(name, (from, _))| (*name, *from))
        .collect();
    out.sort_unstable();
    out
}

/// Plans `again`, all at once on all cores, the pieces whose plans were told less than, or
/// otherwise than, the whole file tells them about names they use, until none is; then counts
/// the uses of `__device__` variables declared outside the file's top level.
fn reconcile<'s>(
    parts: &mut [Part<'s>],
    again: impl Fn(usize, &Imports<'s>) -> Option<PiecePlan<'s>> + Sync,
) -> Option<()> {
    let all = |e: fn(&Exports<'s>) -> Vec<&'s str>| -> Arc<HashSet<&'s str>> {
        Arc::new(parts.iter().flat_map(|p| e(&p.plan.exports)).collect())
    };
    let globals = all(|e| e.globals.iter().copied().collect());
    let hiding = all(|e| e.hiding.clone());
    let mut members = Members::default();
    for p in parts.iter() {
        members.extend(&p.plan.exports.members);
    }
    let members = Arc::new(members);
    // Each round settles at least the first piece still wrong: what a piece is told depends
    // on the pieces before it only, but for the parameters, which are settled last.
    for _ in 0..parts.len() + 2 {
        let decided = local_params(parts);
        let mut wrong = Vec::new();
        let mut last = HashMap::new();
        for (i, part) in parts.iter().enumerate() {
            let e = &part.plan.exports;
            let defined: HashSet<&str> = e.callees.iter().map(|c| c.0).collect();
            let mine: Vec<(&str, usize)> = decided
                .iter()
                .filter(|(name, _)| defined.contains(name))
                .copied()
                .collect();
            let exact = Imports {
                globals: globals.clone(),
                hiding: hiding.clone(),
                local_names: local_names(&last),
                local_params: (mine != e.local_params).then_some(mine),
                members: members.clone(),
            };
            if differ(&part.used, &exact, e) {
                wrong.push((i, exact));
            }
            bind(&mut last, &e.file_scope);
        }
        if wrong.is_empty() {
            let top: HashSet<&str> = parts
                .iter()
                .flat_map(|p| &p.plan.exports.top)
                .copied()
                .collect();
            for part in parts {
                let uses = &part.plan.exports.global_uses;
                part.plan.plan.precision.hidden_globals =
                    uses.iter().filter(|n| !top.contains(*n)).count();
            }
            return Some(());
        }
        let again = parallel::map(wrong, |(i, exact)| Some((i, again(i, &exact)?, exact)));
        for done in again {
            let (i, plan, used) = done?;
            parts[i] = Part { plan, used };
        }
    }
    None
}

/// Whether a piece planned with `used` might be planned otherwise with `exact`: they differ
/// on a name it uses (a global or macro not its own, a name bound local before it), or on
/// which of its functions' parameters are local.
fn differ<'s>(used: &Imports<'s>, exact: &Imports<'s>, e: &Exports<'s>) -> bool {
    let named = |n: &&str| e.idents.contains_key(n);
    // What a piece is told of globals and macros is a part of what all pieces tell. The names
    // it uses are few, the names a big file tells are many: look up the first in the second.
    let less = |u: &HashSet<&str>, x: &HashSet<&str>, own: &dyn Fn(&str) -> bool| {
        u.len() < x.len() && (e.idents.keys()).any(|n| x.contains(n) && !u.contains(n) && !own(n))
    };
    let names =
        |l: &[(&'s str, usize)]| -> HashSet<&'s str> { l.iter().map(|(n, _)| *n).collect() };
    let (u, x) = (names(&used.local_names), names(&exact.local_names));
    let params = |i: &Imports<'s>| {
        i.local_params
            .clone()
            .unwrap_or_else(|| e.local_params.clone())
    };
    less(&used.globals, &exact.globals, &|n| e.globals.contains(n))
        || less(&used.hiding, &exact.hiding, &|n| e.hiding.contains(&n))
        || u.symmetric_difference(&x).any(named)
        || params(used) != params(exact)
        || (e.member_uses.iter()).any(|n| used.members.is_array(n) != exact.members.is_array(n))
}

/// The pointer parameters that every call in the whole file passes local memory.
fn local_params<'s>(parts: &[Part<'s>]) -> Vec<(&'s str, usize)> {
    let exports = || parts.iter().map(|p| &p.plan.exports);
    let callees: Vec<_> = exports().flat_map(|e| e.callees.clone()).collect();
    if callees.is_empty() {
        return Vec::new();
    }
    let calls: Vec<_> = exports().flat_map(|e| e.calls.clone()).collect();
    let uses = |name: &str| -> usize {
        let counts = exports().map(|e| e.idents.get(name));
        counts.map(|n| n.copied().unwrap_or(0)).sum()
    };
    crate::rewrite::calls::decide(&callees, &calls, uses)
}

/// The pieces' plans as one: each kind of fixed edit and warning in source order, kind after
/// kind; functions and sites in source order.
fn join(parts: Vec<PiecePlan>) -> FilePlan {
    let mut plan = FilePlan::none();
    let total = |of: fn(&FilePlan) -> usize| parts.iter().map(|p| of(&p.plan)).sum::<usize>();
    plan.fixed.reserve_exact(total(|p| p.fixed.len()));
    plan.functions.reserve_exact(total(|p| p.functions.len()));
    // Each piece lists its fixed edits and warnings kind by kind: taken kind by kind across
    // the pieces, each moved once, into a list of its final size.
    let mut fixed = Vec::with_capacity(parts.len());
    let mut warnings = Vec::with_capacity(parts.len());
    for PiecePlan {
        plan: part, order, ..
    } in parts
    {
        fixed.push((part.fixed.into_iter(), order.fixed));
        warnings.push((part.warnings.into_iter(), order.warnings));
        let offset = plan.functions.len();
        plan.functions.extend(part.functions);
        let mut sites = part.sites;
        for s in sites.iter_mut() {
            s.function += offset;
        }
        plan.sites.append(sites);
        plan.has_device_code |= part.has_device_code;
        plan.launches |= part.launches;
        plan.precision = add(plan.precision, part.precision);
    }
    by_kind(&mut plan.fixed, fixed);
    by_kind(&mut plan.warnings, warnings);
    plan
}

/// Appends to `out` each piece's items of the first kind, then of the second, ...; `pieces`
/// gives each piece's items and how many there are of each kind, kind by kind.
fn by_kind<T>(out: &mut Vec<T>, mut pieces: Vec<(std::vec::IntoIter<T>, Vec<usize>)>) {
    let kinds = pieces.first().map_or(0, |p| p.1.len());
    for kind in 0..kinds {
        for (items, counts) in &mut pieces {
            out.extend(items.by_ref().take(counts[kind]));
        }
    }
}

fn add(a: Precision, b: Precision) -> Precision {
    Precision {
        hidden_globals: a.hidden_globals + b.hidden_globals,
        local_params: a.local_params + b.local_params,
        macro_functions: a.macro_functions + b.macro_functions,
        macro_functions_fenced: a.macro_functions_fenced + b.macro_functions_fenced,
        if_branches: a.if_branches + b.if_branches,
    }
}

/// The `__device__` variables a header declares outside functions (`render::plan_files`), found
/// in pieces; `None` where it is not cut or a piece does not parse cleanly.
pub fn header_globals(file: &SourceFile) -> Option<Vec<String>> {
    let text = parse::blank_pragmas(&file.text);
    let ranges = pieces(&text);
    if ranges.is_empty() {
        return None;
    }
    let found = parallel::map(ranges, |r| {
        let tree = parse_piece(file, &text, r)?;
        let caps = Captures::run(queries::all(), tree.root_node(), file.text.as_bytes());
        let scopes = Scopes::new(&caps);
        let names = device_code::global_variables(&caps, &file.text, &scopes);
        Some(names.into_iter().map(str::to_string).collect::<Vec<_>>())
    });
    let found: Vec<Vec<String>> = found.into_iter().collect::<Option<_>>()?;
    Some(found.into_iter().flatten().collect())
}

/// The size of the pieces of a text of `len` bytes; none where it is not cut.
fn piece_bytes(len: usize) -> Option<usize> {
    #[cfg(test)]
    if let Some(bytes) = tests::FORCED.get() {
        return Some(bytes);
    }
    (len >= CUT_FROM).then_some(PIECE_BYTES)
}

#[cfg(test)]
#[path = "pieces_tests.rs"]
pub(crate) mod tests;

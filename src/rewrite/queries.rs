//! The tree-sitter patterns in `queries/`, compiled once per process and matched by
//! `matcher.rs`. Node kinds live in the `.scm` files; Rust code only sees capture names.

use crate::rewrite::flat::Flat;
use crate::rewrite::matcher::Patterns;
use crate::rewrite::{parallel, top_level};
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::OnceLock;
use tree_sitter::{Language, Node};

pub fn language() -> Language {
    tree_sitter_cuda_wmfix::LANGUAGE.into()
}

/// The grammar's id of a field, which the rewriter's walks follow (checked once, at first use:
/// by name, each look-up is a string search).
pub fn field(name: &str) -> std::num::NonZeroU16 {
    let id = language().field_id_for_name(name);
    id.unwrap_or_else(|| panic!("the grammar has a {name} field"))
}

/// The query files, one per concept. Capture names are unique across them.
const FILES: &[(&str, &str)] = &[
    (
        "device_functions.scm",
        include_str!("../../queries/device_functions.scm"),
    ),
    ("accesses.scm", include_str!("../../queries/accesses.scm")),
    ("aim.scm", include_str!("../../queries/aim.scm")),
    ("locals.scm", include_str!("../../queries/locals.scm")),
    ("sites.scm", include_str!("../../queries/sites.scm")),
    ("bodies.scm", include_str!("../../queries/bodies.scm")),
    (
        "thread_ids.scm",
        include_str!("../../queries/thread_ids.scm"),
    ),
    ("launches.scm", include_str!("../../queries/launches.scm")),
    ("macros.scm", include_str!("../../queries/macros.scm")),
    (
        "unsupported.scm",
        include_str!("../../queries/unsupported.scm"),
    ),
    ("calls.scm", include_str!("../../queries/calls.scm")),
    ("libcuxx.scm", include_str!("../../queries/libcuxx.scm")),
];

/// The text of every query file, one after the other.
pub(crate) fn text() -> String {
    FILES.iter().map(|(_, t)| *t).collect::<Vec<_>>().join("\n")
}

/// All query files as one set of patterns, so that a file's tree is walked once, not once per
/// concept.
pub fn all() -> &'static Patterns {
    static Q: OnceLock<Patterns> = OnceLock::new();
    Q.get_or_init(|| {
        Patterns::new(&language(), &text()).unwrap_or_else(|e| {
            // Only on error is each file compiled alone, so that the message names its file.
            for (name, text) in FILES {
                if let Err(e) = Patterns::new(&language(), text) {
                    panic!("queries/{name}: {e}");
                }
            }
            panic!("the query files do not compile together: {e}")
        })
    })
}

/// The capture names Rust code reads, one variant each. [`check`] finds each in the compiled
/// query once, at start-up, so renaming a capture in a `.scm` file without renaming it here is an
/// error before any file is instrumented, never an empty look-up that silently drops fences.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Capture {
    Access,
    /// An `asm` expression, its template, and its operands' values (`rewrite/asm.rs`).
    AccessAsm,
    AccessAsmCode,
    AsmOperand,
    AccessAtomic,
    AccessCached,
    AccessRef,
    AimAssigned,
    AimImpure,
    AimPacked,
    AliasDecl,
    AliasValue,
    Block,
    Body,
    CallArgs,
    CallFunction,
    CallName,
    CalleeBody,
    CalleeName,
    CalleeParams,
    CoopGrid,
    CoopLaunch,
    DeviceBody,
    /// Every member declarator, and those declaring arrays.
    FieldArray,
    /// A wmma fragment variable (`rewrite/device_code.rs`: local, its `x` an array).
    FragmentDecl,
    FieldDecl,
    /// Every function body (`rewrite/macros.rs`: a device qualifier macro in its head).
    FunctionBody,
    FunctionName,
    GlobalArray,
    /// A `__device__` variable no code can write (`constexpr`, or `const` and not a pointer).
    GlobalImmutable,
    GlobalTop,
    GlobalVar,
    HostBody,
    Ident,
    KernelBody,
    Labeled,
    LaunchConfig,
    LaunchExConfig,
    LaunchExWrapper,
    /// libcu++'s `cuda::atomic_ref<...>` and `cuda::atomic_ref` / `cuda::atomic_thread_fence`
    /// (`plan.rs`: renamed in device code).
    LibcuxxRef,
    LibcuxxName,
    /// libcu++ atomics' operations (`rewrite/libcuxx.rs`): a call by an operation's name and its
    /// receiver (or pointer, for `->`), an expression an operator takes, a temporary
    /// `cuda::atomic_ref<...>(x)` (and `auto` declarations that may hold one), declarations whose type may be an atomic, their pointer and
    /// array declarators, aliases, members that may be atomics, and every member's declarator.
    LibcuxxOp,
    LibcuxxReceiver,
    LibcuxxPointer,
    LibcuxxOperand,
    LibcuxxArgument,
    LibcuxxTemp,
    LibcuxxAuto,
    LibcuxxTyped,
    LibcuxxIndirect,
    LibcuxxAlias,
    LibcuxxMember,
    LibcuxxField,
    LocalDecl,
    MacroName,
    MacroValue,
    NotAccess,
    ParamDecl,
    ParamPointer,
    Scope,
    ScopeFunction,
    SharedDecl,
    SiteAfter,
    SiteComma,
    SiteIfCond,
    SiteLoopCond,
    SiteStop,
    SiteWrap,
    /// A braced list a `return` returns: its last element is wrapped.
    SiteList,
    /// A value a `return` returns (it may be void).
    SiteReturn,
    Store,
    ThreadId,
    Unevaluated,
    VarDecl,
    ViaAddress,
    ViaArith,
    ViaCast,
    ViaMember,
    ViaParen,
}

impl Capture {
    pub const ALL: [Capture; 79] = [
        Capture::Access,
        Capture::AccessAsm,
        Capture::AccessAsmCode,
        Capture::AsmOperand,
        Capture::AccessAtomic,
        Capture::AccessCached,
        Capture::AccessRef,
        Capture::AimAssigned,
        Capture::AimImpure,
        Capture::AimPacked,
        Capture::AliasDecl,
        Capture::AliasValue,
        Capture::Block,
        Capture::Body,
        Capture::CallArgs,
        Capture::CallFunction,
        Capture::CallName,
        Capture::CalleeBody,
        Capture::CalleeName,
        Capture::CalleeParams,
        Capture::CoopGrid,
        Capture::CoopLaunch,
        Capture::DeviceBody,
        Capture::FieldArray,
        Capture::FragmentDecl,
        Capture::FieldDecl,
        Capture::FunctionBody,
        Capture::FunctionName,
        Capture::GlobalArray,
        Capture::GlobalImmutable,
        Capture::GlobalTop,
        Capture::GlobalVar,
        Capture::HostBody,
        Capture::Ident,
        Capture::KernelBody,
        Capture::Labeled,
        Capture::LaunchConfig,
        Capture::LaunchExConfig,
        Capture::LaunchExWrapper,
        Capture::LibcuxxRef,
        Capture::LibcuxxName,
        Capture::LibcuxxOp,
        Capture::LibcuxxReceiver,
        Capture::LibcuxxPointer,
        Capture::LibcuxxOperand,
        Capture::LibcuxxArgument,
        Capture::LibcuxxTemp,
        Capture::LibcuxxAuto,
        Capture::LibcuxxTyped,
        Capture::LibcuxxIndirect,
        Capture::LibcuxxAlias,
        Capture::LibcuxxMember,
        Capture::LibcuxxField,
        Capture::LocalDecl,
        Capture::MacroName,
        Capture::MacroValue,
        Capture::NotAccess,
        Capture::ParamDecl,
        Capture::ParamPointer,
        Capture::Scope,
        Capture::ScopeFunction,
        Capture::SharedDecl,
        Capture::SiteAfter,
        Capture::SiteComma,
        Capture::SiteIfCond,
        Capture::SiteLoopCond,
        Capture::SiteStop,
        Capture::SiteWrap,
        Capture::SiteList,
        Capture::SiteReturn,
        Capture::Store,
        Capture::ThreadId,
        Capture::Unevaluated,
        Capture::VarDecl,
        Capture::ViaAddress,
        Capture::ViaArith,
        Capture::ViaCast,
        Capture::ViaMember,
        Capture::ViaParen,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Capture::Access => "access",
            Capture::AccessAsm => "access.asm",
            Capture::AccessAsmCode => "access.asm.code",
            Capture::AsmOperand => "asm.operand",
            Capture::AccessAtomic => "access.atomic",
            Capture::AccessCached => "access.cached",
            Capture::AccessRef => "access.ref",
            Capture::AimAssigned => "aim.assigned",
            Capture::AimImpure => "aim.impure",
            Capture::AimPacked => "aim.packed",
            Capture::AliasDecl => "alias.decl",
            Capture::AliasValue => "alias.value",
            Capture::Block => "block",
            Capture::Body => "body",
            Capture::CallArgs => "call.args",
            Capture::CallFunction => "call.function",
            Capture::CallName => "call.name",
            Capture::CalleeBody => "callee.body",
            Capture::CalleeName => "callee.name",
            Capture::CalleeParams => "callee.params",
            Capture::CoopGrid => "coop.grid",
            Capture::CoopLaunch => "coop.launch",
            Capture::DeviceBody => "device.body",
            Capture::FieldArray => "field.array",
            Capture::FragmentDecl => "fragment.decl",
            Capture::FieldDecl => "field.decl",
            Capture::FunctionBody => "function.body",
            Capture::FunctionName => "function.name",
            Capture::GlobalArray => "global.array",
            Capture::GlobalImmutable => "global.immutable",
            Capture::GlobalTop => "global.top",
            Capture::GlobalVar => "global.var",
            Capture::HostBody => "host.body",
            Capture::Ident => "ident",
            Capture::KernelBody => "kernel.body",
            Capture::Labeled => "labeled",
            Capture::LaunchConfig => "launch.config",
            Capture::LaunchExConfig => "launch_ex.config",
            Capture::LaunchExWrapper => "launch_ex.wrapper",
            Capture::LocalDecl => "local.decl",
            Capture::MacroName => "macro.name",
            Capture::MacroValue => "macro.value",
            Capture::NotAccess => "not_access",
            Capture::ParamDecl => "param.decl",
            Capture::ParamPointer => "param.pointer",
            Capture::Scope => "scope",
            Capture::ScopeFunction => "scope.function",
            Capture::SharedDecl => "shared.decl",
            Capture::SiteAfter => "site.after",
            Capture::SiteComma => "site.comma",
            Capture::SiteIfCond => "site.if_cond",
            Capture::SiteLoopCond => "site.loop_cond",
            Capture::SiteStop => "site.stop",
            Capture::SiteWrap => "site.wrap",
            Capture::SiteList => "site.list",
            Capture::SiteReturn => "site.return",
            Capture::Store => "store",
            Capture::ThreadId => "thread_id",
            Capture::LibcuxxRef => "libcuxx.ref",
            Capture::LibcuxxName => "libcuxx.name",
            Capture::LibcuxxOp => "libcuxx.op",
            Capture::LibcuxxReceiver => "libcuxx.receiver",
            Capture::LibcuxxPointer => "libcuxx.pointer",
            Capture::LibcuxxOperand => "libcuxx.operand",
            Capture::LibcuxxArgument => "libcuxx.argument",
            Capture::LibcuxxTemp => "libcuxx.temp",
            Capture::LibcuxxAuto => "libcuxx.auto",
            Capture::LibcuxxTyped => "libcuxx.typed",
            Capture::LibcuxxIndirect => "libcuxx.indirect",
            Capture::LibcuxxAlias => "libcuxx.alias",
            Capture::LibcuxxMember => "libcuxx.member",
            Capture::LibcuxxField => "libcuxx.field",
            Capture::Unevaluated => "unevaluated",
            Capture::VarDecl => "var.decl",
            Capture::ViaAddress => "via.address",
            Capture::ViaArith => "via.arith",
            Capture::ViaCast => "via.cast",
            Capture::ViaMember => "via.member",
            Capture::ViaParen => "via.paren",
        }
    }

    /// Its index in the compiled query.
    fn index(self) -> usize {
        indices()[self as usize]
    }
}

/// Each capture's index in the compiled query; a name the query lacks is an error naming it.
fn resolve(query: &Patterns) -> Result<Vec<usize>, String> {
    Capture::ALL
        .iter()
        .map(|c| {
            query
                .capture_names()
                .iter()
                .position(|n| n == c.name())
                .ok_or_else(|| format!("no capture @{} in queries/*.scm", c.name()))
        })
        .collect()
}

fn indices() -> &'static [usize] {
    static I: OnceLock<Vec<usize>> = OnceLock::new();
    I.get_or_init(|| resolve(all()).unwrap_or_else(|e| panic!("{e}")))
}

/// For each capture index of `query` (the combined one), the `Capture` it is, if Rust code
/// reads it.
fn by_index_of(query: &'static Patterns) -> &'static [Option<Capture>] {
    static B: OnceLock<Vec<Option<Capture>>> = OnceLock::new();
    debug_assert!(std::ptr::eq(query, all()), "captures of the combined query");
    B.get_or_init(|| {
        query
            .capture_names()
            .iter()
            .map(|n| Capture::ALL.iter().copied().find(|c| c.name() == *n))
            .collect()
    })
}

/// Compiles the queries and finds every capture Rust code reads; the rewriter calls it once
/// before planning any file, so a mismatch stops wmfix at start-up with the name.
pub fn check() -> Result<(), String> {
    resolve(all()).map(|_| ())
}

/// Every capture of one query over a tree, grouped by capture.
pub struct Captures<'t> {
    query: &'static Patterns,
    root: Node<'t>,
    /// Nodes per capture index.
    by_index: Vec<Vec<Node<'t>>>,
    /// Matches of more than one capture, in match order, for patterns that pair captures.
    pub matches: Vec<Vec<(Option<Capture>, Node<'t>)>>,
    /// The tree as the query read it, where it read the whole tree at once.
    flat: Option<Flat<'t>>,
}

impl<'t> Captures<'t> {
    pub fn run(query: &'static Patterns, root: Node<'t>, text: &[u8]) -> Captures<'t> {
        let groups = top_level::groups(root);
        let found = if groups.len() > 1 {
            split(query, root, text, groups)
        } else {
            None
        };
        let (found, flat) = match found {
            Some(f) => (f, None),
            None => {
                let mut f = Found::new(query);
                let flat = f.walk(query, root, text, false);
                (f, Some(flat))
            }
        };
        Captures {
            query,
            root,
            by_index: found.by_index,
            matches: found.matches,
            flat,
        }
    }

    /// The tree as the query read it, where it read the whole tree at once (a big tree is
    /// walked in parts on all cores).
    pub fn flat(&self) -> Option<&Flat<'t>> {
        self.flat.as_ref()
    }

    /// The node the query ran over.
    pub fn root(&self) -> Node<'t> {
        self.root
    }

    pub fn get(&self, c: Capture) -> &[Node<'t>] {
        debug_assert!(
            std::ptr::eq(self.query, all()),
            "captures of the combined query"
        );
        &self.by_index[c.index()]
    }

    /// Node ids captured under `c`.
    pub fn ids(&self, c: Capture) -> IdSet {
        self.get(c).iter().map(Node::id).collect()
    }
}

/// What one walk of the query over a tree (or part of one) found, as `Captures` keeps it.
struct Found<'t> {
    by_index: Vec<Vec<Node<'t>>>,
    matches: Vec<Vec<(Option<Capture>, Node<'t>)>>,
}

impl<'t> Found<'t> {
    fn new(query: &Patterns) -> Found<'t> {
        Found {
            by_index: vec![Vec::new(); query.capture_names().len()],
            matches: Vec::new(),
        }
    }

    /// Adds the matches at `node` (`root_only`) or at and under it, in the order they are found;
    /// gives back the tree as read.
    fn walk(
        &mut self,
        query: &'static Patterns,
        node: Node<'t>,
        text: &[u8],
        root_only: bool,
    ) -> Flat<'t> {
        let by_name = by_index_of(query);
        query.walk(node, text, root_only, |caps| {
            for (c, n) in caps {
                self.by_index[*c as usize].push(*n);
            }
            // Only matches that pair captures are kept whole.
            if caps.len() > 1 {
                self.matches.push(
                    caps.iter()
                        .map(|(c, n)| (by_name[*c as usize], *n))
                        .collect(),
                );
            }
        })
    }

    fn append(&mut self, mut later: Found<'t>) {
        for (mine, theirs) in self.by_index.iter_mut().zip(&mut later.by_index) {
            mine.append(theirs);
        }
        self.matches.append(&mut later.matches);
    }
}

/// The walk of a big tree on all cores: the top-level `groups` each on a thread, joined in
/// source order, and the matches that start at the root itself (`(translation_unit ...)`
/// patterns) found alone. That equals one walk when those root matches capture one node each
/// and under capture names no other match uses (so no order between the two kinds is lost);
/// `None` otherwise, and the caller walks once.
fn split<'t>(
    query: &'static Patterns,
    root: Node<'t>,
    text: &[u8],
    groups: Vec<Vec<Node<'t>>>,
) -> Option<Found<'t>> {
    let mut at_root = Found::new(query);
    at_root.walk(query, root, text, true);
    if !at_root.matches.is_empty() {
        return None;
    }
    let parts = parallel::map(groups, |group| {
        let mut f = Found::new(query);
        for node in group {
            f.walk(query, node, text, false);
        }
        f
    });
    // Appended to the first part, each part freed once it is moved.
    let mut parts = parts.into_iter();
    let mut out = parts.next()?;
    for part in parts {
        out.append(part);
    }
    for (mine, theirs) in out.by_index.iter_mut().zip(at_root.by_index) {
        if theirs.is_empty() {
            continue;
        }
        if !mine.is_empty() {
            return None;
        }
        *mine = theirs;
    }
    Some(out)
}

/// Hashes node ids (addresses) with one multiply: SipHash cost more than the look-ups it served.
#[derive(Default)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, _: &[u8]) {
        unreachable!("only node ids are hashed")
    }
    fn write_usize(&mut self, id: usize) {
        // The high bits of the product are the well-mixed ones; the table indexes by the low.
        self.0 = (id as u64)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .rotate_left(32);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

pub type IdSet = HashSet<usize, BuildHasherDefault<IdHasher>>;
pub type IdMap<V> = HashMap<usize, V, BuildHasherDefault<IdHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_query_compiles_and_has_every_capture() {
        check().unwrap();
        for c in Capture::ALL {
            assert_eq!(all().capture_names()[c.index()], c.name());
        }
    }

    /// Each kept match's names and node ids.
    type MatchIds = Vec<Vec<(Option<Capture>, usize)>>;

    /// Each capture's node ids, and each kept match's.
    fn ids(f: &Found) -> (Vec<Vec<usize>>, MatchIds) {
        let by_index = f.by_index.iter().map(|v| v.iter().map(Node::id).collect());
        let matches = f
            .matches
            .iter()
            .map(|m| m.iter().map(|(c, n)| (*c, n.id())).collect());
        (by_index.collect(), matches.collect())
    }

    #[test]
    fn a_split_walk_finds_what_one_walk_finds() {
        let text = crate::rewrite::top_level::tests::every_fixture();
        let tree = crate::rewrite::parse::parse(&text);
        let root = tree.root_node();
        let mut one = Found::new(all());
        one.walk(all(), root, text.as_bytes(), false);
        assert!(one.matches.len() > 1000, "{} matches", one.matches.len());
        for parts in [2, 3, 16] {
            let groups = crate::rewrite::top_level::groups_of(root, parts);
            assert!(groups.len() > parts / 2, "{} groups", groups.len());
            let split = split(all(), root, text.as_bytes(), groups).expect("the split applies");
            assert!(
                ids(&split) == ids(&one),
                "{parts} parts differ from one walk"
            );
        }
    }

    #[test]
    fn a_missing_capture_is_named() {
        let q = Patterns::new(&language(), "(identifier) @ident").unwrap();
        let e = resolve(&q).unwrap_err();
        assert!(e.starts_with("no capture @access "), "{e}");
    }
}

//! libcu++'s atomics in device code (`queries/libcuxx.scm`): which calls and operators are
//! operations of a `cuda::atomic_ref` or a `cuda::atomic`, and the expression of the word each
//! touches. Each is an atomic access, so the fence site after it names it: a race build traces
//! the operation in its wrapper (runtime-cu/wmfix_race.cuh), which cannot know where it stands,
//! and the site's record at the same word gives it its place (src/race/trace.rs).
//!
//! A receiver is an atomic where it is a temporary (`cuda::atomic_ref<int, S>(a[i]).load()`) or a
//! name whose declaration in scope has a libcu++ atomic type, directly or through an alias
//! declared in the same text. Not seen: members, pointers and arrays of atomics, and aliases or
//! `__device__` atomics declared in a header or another piece of a big file.

use crate::rewrite::queries::{self, Capture, Captures, IdMap};
use crate::rewrite::scopes::{Bindings, Scopes, function_name};
use std::collections::{HashMap, HashSet};
use std::num::NonZeroU16;
use std::sync::OnceLock;
use tree_sitter::Node;

/// What a libcu++ atomic type holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Held {
    /// `cuda::atomic<T, S>`: the word is the object itself.
    Object,
    /// `cuda::atomic_ref<T, S>`: the word it was bound to.
    Ref,
}

/// The word an operation touches.
#[derive(Clone, Copy, Debug)]
pub struct Word<'t> {
    /// Its expression: an atomic object, a reference, or a temporary's argument.
    pub node: Node<'t>,
    /// A reference's: its word is the runtime's to find (`WMFIX_ATOMIC_WORD(r)`), where the
    /// others are lvalues.
    pub reference: bool,
    /// The atomic's own name (`flag`, whose word its operators write, never the name), not a
    /// temporary's argument (`a[i]` in `cuda::atomic_ref<int>(a[i])`).
    pub atomic: bool,
}

/// Operations by node id.
pub type Words<'t> = IdMap<Word<'t>>;

/// One operation of a libcu++ atomic.
pub struct Op<'t> {
    /// The call, or the name an operator takes (`flag` of `flag = 1`).
    pub node: Node<'t>,
    pub word: Word<'t>,
    /// Where the word is an lvalue the rewriter sees: shared or per-thread memory is no access.
    pub place: Option<Node<'t>>,
}

struct Fields {
    ty: NonZeroU16,
    name: NonZeroU16,
    declarator: NonZeroU16,
}

fn fields() -> &'static Fields {
    static IDS: OnceLock<Fields> = OnceLock::new();
    IDS.get_or_init(|| {
        let id = queries::field;
        Fields {
            ty: id("type"),
            name: id("name"),
            declarator: id("declarator"),
        }
    })
}

/// The libcu++ type names of a text (thread_ids.scm's `@libcuxx.ref`, `@libcuxx.name`) by node,
/// as the template's own name says: `atomic_ref` or `atomic` (not `atomic_thread_fence`).
fn type_names<'t>(caps: &Captures<'t>, text: &str) -> IdMap<Held> {
    let held = |n: Option<Node>| match n.map(|n| &text[n.byte_range()]) {
        Some("atomic_ref") => Some(Held::Ref),
        Some("atomic") => Some(Held::Object),
        _ => None,
    };
    let name = |n: Node<'t>| n.child_by_field_id(fields().name.get());
    let templated = caps
        .get(Capture::LibcuxxRef)
        .iter()
        .map(|n| (n, name(*n).and_then(name)));
    let plain = caps.get(Capture::LibcuxxName).iter().map(|n| (n, name(*n)));
    templated
        .chain(plain)
        .filter_map(|(n, m)| held(m).map(|h| (n.id(), h)))
        .collect()
}

/// The atomic a type names: a libcu++ type (through the name of `::cuda::...`), or an alias.
fn held(ty: Node, types: &IdMap<Held>, aliases: &HashMap<&str, Held>, text: &str) -> Option<Held> {
    let named = |n: Node| types.get(&n.id()).copied();
    named(ty)
        .or_else(|| ty.child_by_field_id(fields().name.get()).and_then(named))
        .or_else(|| aliases.get(&text[ty.byte_range()]).copied())
}

/// Aliases of libcu++ atomic types (`using R = cuda::atomic_ref<...>;`, `typedef ... R;`), in
/// source order, so that an alias of an alias is one too.
fn aliases<'s>(caps: &Captures, text: &'s str, types: &IdMap<Held>) -> HashMap<&'s str, Held> {
    let f = fields();
    let mut out = HashMap::new();
    for a in caps.get(Capture::LibcuxxAlias) {
        let Some(ty) = a.child_by_field_id(f.ty.get()) else {
            continue;
        };
        // `using`'s type is a type descriptor's.
        let ty = ty.child_by_field_id(f.ty.get()).unwrap_or(ty);
        let Some(h) = held(ty, types, &out, text) else {
            continue;
        };
        let mut c = a.walk();
        let names = a.children_by_field_id(f.declarator, &mut c);
        for n in a.child_by_field_id(f.name.get()).into_iter().chain(names) {
            out.insert(&text[n.byte_range()], h);
        }
    }
    out
}

/// The names declared with a libcu++ atomic type, by where each starts; `None` where the text
/// names no such type (so has no temporary of one either).
fn declared_atomics(caps: &Captures, text: &str) -> Option<HashMap<usize, Held>> {
    let types = type_names(caps, text);
    if types.is_empty() {
        return None;
    }
    let aliases = aliases(caps, text, &types);
    Some(declared(caps, text, &types, &aliases))
}

/// The names declared with an atomic type (not pointers or arrays of one), by where each starts.
fn declared(
    caps: &Captures,
    text: &str,
    types: &IdMap<Held>,
    aliases: &HashMap<&str, Held>,
) -> HashMap<usize, Held> {
    let f = fields();
    let indirect = caps.ids(Capture::LibcuxxIndirect);
    let mut out = HashMap::new();
    for d in caps.get(Capture::LibcuxxTyped) {
        let ty = d.child_by_field_id(f.ty.get());
        let Some(h) = ty.and_then(|t| held(t, types, aliases, text)) else {
            continue;
        };
        let mut c = d.walk();
        for declarator in d.children_by_field_id(f.declarator, &mut c) {
            if !indirect.contains(&declarator.id()) {
                out.insert(function_name(declarator, text).start_byte(), h);
            }
        }
    }
    out
}

/// Where the names declared as libcu++ atomic objects start: a `__device__` one is read through
/// its operations, not its name.
pub fn objects(caps: &Captures, text: &str) -> HashSet<usize> {
    let declared = declared_atomics(caps, text).unwrap_or_default();
    let objects = declared.into_iter().filter(|(_, h)| *h == Held::Object);
    objects.map(|(at, _)| at).collect()
}

/// Every operation of a libcu++ atomic in the text (device code or not: the caller keeps those
/// in device functions).
pub fn ops<'t>(caps: &Captures<'t>, text: &str, scopes: &Scopes) -> Vec<Op<'t>> {
    let Some(declared) = declared_atomics(caps, text) else {
        return Vec::new(); // no libcu++ atomic named here
    };
    // Every declaration of a name some atomic has: an inner one of another type hides it.
    let names: Vec<(Node, bool)> = [(Capture::VarDecl, false), (Capture::ParamDecl, true)]
        .into_iter()
        .flat_map(|(c, param)| {
            caps.get(c)
                .iter()
                .map(move |d| (function_name(*d, text), param))
        })
        .collect();
    let candidates: HashSet<&str> = (names.iter())
        .filter(|(n, _)| declared.contains_key(&n.start_byte()))
        .map(|(n, _)| &text[n.byte_range()])
        .collect();
    let mut bindings: Bindings<Option<Held>> = Bindings::new();
    for (name, param) in names {
        let n = &text[name.byte_range()];
        let scope = scopes.at(name.start_byte());
        if !candidates.contains(n) || (param && !scope.is_some_and(|s| scopes.is_function(s))) {
            continue; // not an atomic's name, or a prototype's parameter
        }
        let held = declared.get(&name.start_byte()).copied();
        bindings.declare(scope, n, name.end_byte(), held);
    }
    let mut temps: IdMap<Node> = IdMap::default();
    let mut calls = Vec::new();
    for m in &caps.matches {
        let find = |c: Capture| m.iter().find(|(k, _)| *k == Some(c)).map(|(_, n)| *n);
        if let (Some(t), Some(arg)) = (find(Capture::LibcuxxTemp), find(Capture::NotAccess)) {
            temps.entry(t.id()).or_insert(arg);
        } else if let (Some(op), Some(r)) =
            (find(Capture::LibcuxxOp), find(Capture::LibcuxxReceiver))
        {
            calls.push((op, r));
        }
    }
    let word = |node, reference, atomic| Word {
        node,
        reference,
        atomic,
    };
    let receiver = |node: Node<'t>, r: Node<'t>| -> Option<Op<'t>> {
        if let Some(arg) = temps.get(&r.id()) {
            let word = word(*arg, false, false);
            let place = Some(*arg);
            return Some(Op { node, word, place });
        }
        let name = &text[r.byte_range()];
        if r.child_count() != 0 || !candidates.contains(name) {
            return None;
        }
        let (reference, place) = match bindings.lookup(scopes, name, r.start_byte()) {
            Some(Some(Held::Object)) => (false, Some(r)),
            Some(Some(Held::Ref)) => (true, None),
            _ => return None,
        };
        let word = word(r, reference, true);
        Some(Op { node, word, place })
    };
    let by_call = calls.into_iter().filter_map(|(op, r)| receiver(op, r));
    let operands = caps.get(Capture::LibcuxxOperand).iter();
    by_call
        .chain(operands.filter_map(|n| receiver(*n, *n)))
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::rewrite::render;
    use crate::rewrite::source::SourceFile;

    /// The instrumented text of a file, less the runtime's prologue.
    fn instrument(text: &str) -> String {
        let file = SourceFile::new("t.cu".into(), "t.cu".into(), text.to_string());
        let mut planned = vec![render::plan_file(file, &Default::default())];
        let scope = crate::fences::scope::FenceScope::Device;
        let out = render::render(&mut planned, scope, |_| "wmfix.cuh".into()).unwrap();
        let text = out.texts[0].clone().unwrap();
        text.split_once("#line 1\n").unwrap().1.to_string()
    }

    #[test]
    fn each_operation_of_an_atomic_names_its_word() {
        let t = instrument(
            "using R = cuda::atomic_ref<int, cuda::thread_scope_block>;\n\
             typedef R R2;\n\
             __device__ ::cuda::atomic<int> g;\n\
             __device__ void f(int *a, R2 &p, cuda::atomic<int> &o) {\n\
             cuda::atomic_ref<int> r(a[0]);\n\
             r.store(1);\n\
             p.fetch_or(2);\n\
             o.exchange(3);\n\
             g.fetch_max(4);\n\
             g |= 5;\n\
             if (!r) {}\n\
             a[1] = r.load(cuda::memory_order_acquire);\n\
             ::cuda::atomic_ref<int>{a[2]}.store(6);\n\
             }\n",
        );
        for line in [
            "r.store(1); WMFIX_FENCE_PTR(0, WMFIX_ATOMIC_WORD(r));",
            "p.fetch_or(2); WMFIX_FENCE_PTR(1, WMFIX_ATOMIC_WORD(p));",
            "o.exchange(3); WMFIX_FENCE_AT(2, o);",
            "g.fetch_max(4); WMFIX_FENCE_AT(3, g);",
            "g |= 5; WMFIX_FENCE_AT(4, g);",
            "if (!r) { WMFIX_FENCE(5);} WMFIX_FENCE(5);",
            // The store is named (stores and atomics first, in order); the atomic's record stays
            // as it is, as a plain atomic's beside a store does.
            "a[1] = r.load(cuda::memory_order_acquire); WMFIX_FENCE_AIM(6, a[1]);",
            "WMFIX_ATOMIC_REF<int>{a[2]}.store(6); WMFIX_FENCE_AT(7, a[2]);",
        ] {
            assert!(t.contains(line), "{line} in {t}");
        }
    }

    #[test]
    fn a_temporary_is_an_operation_where_no_atomic_is_declared() {
        let t = instrument(
            "__global__ void k(int *a) { ::cuda::atomic_ref<int>{a[0]}.fetch_add(1); }\n",
        );
        assert!(
            t.contains("WMFIX_ATOMIC_REF<int>{a[0]}.fetch_add(1); WMFIX_FENCE_AT(0, a[0]);"),
            "{t}"
        );
    }

    #[test]
    fn only_atomics_in_device_code_are_operations() {
        let t = instrument(
            "struct Tile { __device__ void load(int *p); };\n\
             __device__ void f(int *a, Tile t, cuda::atomic<int> *ap) {\n\
             cuda::atomic_ref<int> r(a[0]);\n\
             t.load(a);\n\
             { int r = 0; r = 1; r += 2; }\n\
             ap = nullptr;\n\
             ap->store(1);\n\
             __shared__ cuda::atomic<int, cuda::thread_scope_block> s;\n\
             s.store(1);\n\
             s = 2;\n\
             }\n\
             void h(int *a) { cuda::atomic_ref<int> r(a[0]); r.store(1); }\n",
        );
        // A method of another type, an inner `r` that hides the atomic one, a pointer to an
        // atomic (whose `->` is not followed), a __shared__ atomic, host code: no site.
        assert!(!t.contains("WMFIX_FENCE"), "{t}");
    }
}

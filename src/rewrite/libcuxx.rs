//! libcu++'s atomics in device code (`queries/libcuxx.scm`): which calls and operators are
//! operations of a `cuda::atomic_ref` or a `cuda::atomic`, and the expression of the word each
//! touches. Each is an atomic access, so the fence site after it names it: a race build traces
//! the operation in its wrapper (runtime-cu/wmfix_race.cuh), which cannot know where it stands,
//! and the site's record at the same word gives it its place (src/race/trace.rs).
//!
//! A receiver is an atomic where it is a temporary (`cuda::atomic_ref<int, S>(a[i]).load()`), a
//! name whose declaration in scope has a libcu++ atomic type, directly or through an alias
//! declared in the same text, an element of a pointer or array of atomic objects (`a[i]`, `*p`,
//! `p->load()`), or a member declared as an atomic object in the text (`q->head`, `s.count`)
//! where no member of that name has another type, or an `auto` variable holding a temporary.
//! What a named atomic_ref binds, and an atomic passed to a call, are no plain access.
//! cuda::std's `atomic_ref<T>` and `atomic<T>` are the same at system scope. Not seen: aliases,
//! members or `__device__` atomics declared in a header or another piece of a big file.

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
    /// A pointer to the word (`p` of `p->load()`), where the others are the word itself.
    pub pointer: bool,
}

impl<'t> Op<'t> {
    /// The nodes that are no plain access since they are this operation's: its receiver where it
    /// is an element or a member, and a member's bases through `.` (`box` of
    /// `box.ready.load()`, a `__device__` struct whose name alone would be a load).
    pub fn not_accesses(&self, text: &str) -> Vec<Node<'t>> {
        let f = fields();
        let mut out = Vec::new();
        let mut next = self.receiver;
        while let Some(n) = next {
            out.push(n);
            let dot = n.child_by_field_id(f.field.get()).is_some()
                && n.child_by_field_id(f.operator.get())
                    .is_none_or(|o| &text[o.byte_range()] == ".");
            next = n.child_by_field_id(f.argument.get()).filter(|_| dot);
        }
        out
    }
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
    /// The receiver of a call where it is an element or a member (`a[i]` of `a[i].load()`):
    /// no plain access, since what it touches is the operation's.
    pub receiver: Option<Node<'t>>,
}

struct Fields {
    ty: NonZeroU16,
    name: NonZeroU16,
    declarator: NonZeroU16,
    argument: NonZeroU16,
    field: NonZeroU16,
    operator: NonZeroU16,
    scope: NonZeroU16,
    value: NonZeroU16,
}

fn fields() -> &'static Fields {
    static IDS: OnceLock<Fields> = OnceLock::new();
    IDS.get_or_init(|| {
        let id = queries::field;
        Fields {
            ty: id("type"),
            name: id("name"),
            declarator: id("declarator"),
            argument: id("argument"),
            field: id("field"),
            operator: id("operator"),
            scope: id("scope"),
            value: id("value"),
        }
    })
}

/// A libcu++ name's own identifier (`atomic_ref` of `cuda::std::atomic_ref<int>`), and whether
/// it is cuda::std's (thread_ids.scm's `@libcuxx.ref`, `@libcuxx.name`): the `name` fields down
/// through the scopes and a template's.
pub fn own_name<'t>(n: Node<'t>, text: &str) -> Option<(Node<'t>, bool)> {
    let mut std = false;
    let mut at = n;
    while let Some(next) = at.child_by_field_id(fields().name.get()) {
        let scope = at.child_by_field_id(fields().scope.get());
        std |= scope.is_some_and(|s| &text[s.byte_range()] == "std");
        at = next;
    }
    (at.id() != n.id()).then_some((at, std))
}

/// The libcu++ type names of a text (thread_ids.scm's `@libcuxx.ref`, `@libcuxx.name`) by node,
/// as the template's own name says: `atomic_ref` or `atomic` (not `atomic_thread_fence`).
fn type_names<'t>(caps: &Captures<'t>, text: &str) -> IdMap<Held> {
    let held = |n: Option<(Node, bool)>| match n.map(|(n, _)| &text[n.byte_range()]) {
        Some("atomic_ref") => Some(Held::Ref),
        Some("atomic") => Some(Held::Object),
        _ => None,
    };
    let names = caps.get(Capture::LibcuxxRef).iter();
    names
        .chain(caps.get(Capture::LibcuxxName))
        .filter_map(|n| held(own_name(*n, text)).map(|h| (n.id(), h)))
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

/// How a name is declared with a libcu++ atomic type: the atomic itself, or (`indirect`) a
/// pointer to or an array of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Decl {
    held: Held,
    indirect: bool,
}

/// The libcu++ atomic types a text names: the types themselves, by node, and its aliases.
struct Types<'s> {
    types: IdMap<Held>,
    aliases: HashMap<&'s str, Held>,
}

impl<'s> Types<'s> {
    /// `None` where the text names no such type (so has no temporary of one either).
    fn of(caps: &Captures, text: &'s str) -> Option<Types<'s>> {
        let types = type_names(caps, text);
        if types.is_empty() {
            return None;
        }
        let aliases = aliases(caps, text, &types);
        Some(Types { types, aliases })
    }

    /// The atomic a type node names, if any.
    fn held(&self, ty: Node, text: &str) -> Option<Held> {
        held(ty, &self.types, &self.aliases, text)
    }
}

/// The names declared with an atomic type, or as pointers or arrays of one, by where each starts.
fn declared(caps: &Captures, text: &str, types: &Types) -> HashMap<usize, Decl> {
    let f = fields();
    let indirect = caps.ids(Capture::LibcuxxIndirect);
    let mut out = HashMap::new();
    // `auto r = cuda::atomic_ref<int, S>(x);`: a reference, as its temporary is.
    let temps = caps.ids(Capture::LibcuxxTemp);
    for d in caps.get(Capture::LibcuxxAuto) {
        let value = d.child_by_field_id(f.value.get());
        if value.is_some_and(|v| temps.contains(&v.id())) {
            let decl = Decl {
                held: Held::Ref,
                indirect: false,
            };
            out.insert(function_name(*d, text).start_byte(), decl);
        }
    }
    for d in caps.get(Capture::LibcuxxTyped) {
        let ty = d.child_by_field_id(f.ty.get());
        let Some(held) = ty.and_then(|t| types.held(t, text)) else {
            continue;
        };
        let mut c = d.walk();
        for declarator in d.children_by_field_id(f.declarator, &mut c) {
            let indirect = indirect.contains(&declarator.id());
            let decl = Decl { held, indirect };
            out.insert(function_name(declarator, text).start_byte(), decl);
        }
    }
    out
}

/// The member names declared as atomic objects (`cuda::atomic<int, S> head;`), less those some
/// other member declares with another type or as a pointer or array.
fn atomic_members<'s>(caps: &Captures, text: &'s str, types: &Types) -> HashSet<&'s str> {
    let f = fields();
    // The declarators of the members declared as atomic objects (their declaration's type).
    let atomic: IdMap<()> = (caps.get(Capture::LibcuxxMember).iter())
        .filter(|n| {
            let ty = n.parent().and_then(|d| d.child_by_field_id(f.ty.get()));
            ty.and_then(|t| types.held(t, text)) == Some(Held::Object)
        })
        .map(|n| (n.id(), ()))
        .collect();
    let mut names: HashSet<&str> = HashSet::new();
    let mut others: HashSet<&str> = HashSet::new();
    for d in caps.get(Capture::LibcuxxField) {
        let name = &text[function_name(*d, text).byte_range()];
        if atomic.contains_key(&d.id()) {
            names.insert(name);
        } else {
            others.insert(name);
        }
    }
    names.retain(|n| !others.contains(n));
    names
}

/// Where the names declared as libcu++ atomic objects start: a `__device__` one is read through
/// its operations, not its name.
pub fn objects(caps: &Captures, text: &str) -> HashSet<usize> {
    let Some(types) = Types::of(caps, text) else {
        return HashSet::new();
    };
    let declared = declared(caps, text, &types);
    let object = Decl {
        held: Held::Object,
        indirect: false,
    };
    let objects = declared.into_iter().filter(|(_, d)| *d == object);
    objects.map(|(at, _)| at).collect()
}

/// The libcu++ atomics of a text: their operations, and the expressions that are no plain
/// access though they name memory.
#[derive(Default)]
pub struct Found<'t> {
    pub ops: Vec<Op<'t>>,
    /// What atomic_refs declared by name bind (`cuda::atomic_ref<int, S> r(a[i])`, `r{a[i]}`),
    /// and atomics passed to a call (`peek(a[0])`: bound to a reference parameter, or loaded by
    /// the atomic's own conversion).
    pub unread: Vec<Node<'t>>,
}

/// Every operation of a libcu++ atomic in the text (device code or not: the caller keeps those
/// in device functions), and what its atomic_refs bind.
pub fn ops<'t>(caps: &Captures<'t>, text: &str, scopes: &Scopes) -> Found<'t> {
    let Some(types) = Types::of(caps, text) else {
        return Found::default(); // no libcu++ atomic named here
    };
    let declared = declared(caps, text, &types);
    let mut unread = bound(caps, text, &types);
    let bindings = bindings(caps, text, scopes, &declared);
    let members = atomic_members(caps, text, &types);
    let mut temps: IdMap<Node> = IdMap::default();
    let mut calls = Vec::new();
    for m in &caps.matches {
        let find = |c: Capture| m.iter().find(|(k, _)| *k == Some(c)).map(|(_, n)| *n);
        if let (Some(t), Some(arg)) = (find(Capture::LibcuxxTemp), find(Capture::NotAccess)) {
            temps.entry(t.id()).or_insert(arg);
        } else if let Some(op) = find(Capture::LibcuxxOp) {
            if let Some(r) = find(Capture::LibcuxxReceiver) {
                calls.push((op, r, false));
            } else if let Some(p) = find(Capture::LibcuxxPointer) {
                calls.push((op, p, true));
            }
        }
    }
    let seen = Receivers {
        text,
        scopes,
        bindings: &bindings,
        members: &members,
    };
    let receiver = |node: Node<'t>, r: Node<'t>, through: bool| -> Option<Op<'t>> {
        if let Some(arg) = temps.get(&r.id()) {
            let word = word(*arg, false, false, false);
            let place = Some(*arg);
            let receiver = None;
            return Some(Op {
                node,
                word,
                place,
                receiver,
            });
        }
        if through {
            return seen.pointer(node, r);
        }
        seen.named(node, r).or_else(|| seen.element(node, r))
    };
    let by_call = calls
        .into_iter()
        .filter_map(|(op, r, p)| receiver(op, r, p));
    let operands = caps.get(Capture::LibcuxxOperand).iter();
    let ops = by_call
        .chain(operands.filter_map(|n| receiver(*n, *n, false)))
        .collect();
    let passed = caps.get(Capture::LibcuxxArgument).iter();
    unread.extend(passed.filter(|n| {
        seen.named(**n, **n)
            .or_else(|| seen.element(**n, **n))
            .is_some()
    }));
    Found { ops, unread }
}

/// The arguments atomic_refs declared with a libcu++ type bind (`r(a[i])`, `r{a[i]}`).
fn bound<'t>(caps: &Captures<'t>, text: &str, types: &Types) -> Vec<Node<'t>> {
    let f = fields();
    let mut out = Vec::new();
    for d in caps.get(Capture::LibcuxxTyped) {
        let ty = d.child_by_field_id(f.ty.get());
        if ty.and_then(|t| types.held(t, text)) != Some(Held::Ref) {
            continue;
        }
        let mut c = d.walk();
        for declarator in d.children_by_field_id(f.declarator, &mut c) {
            let Some(value) = declarator.child_by_field_id(f.value.get()) else {
                continue;
            };
            let mut c = value.walk();
            out.extend(value.named_children(&mut c));
        }
    }
    out
}

fn word(node: Node, reference: bool, atomic: bool, pointer: bool) -> Word {
    Word {
        node,
        reference,
        atomic,
        pointer,
    }
}

/// Each name that some atomic (or pointer or array of them) has, bound where it is declared:
/// an inner declaration of another type hides it.
fn bindings<'s>(
    caps: &Captures,
    text: &'s str,
    scopes: &Scopes,
    declared: &HashMap<usize, Decl>,
) -> Bindings<'s, Option<Decl>> {
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
    let mut bindings = Bindings::new();
    for (name, param) in names {
        let n = &text[name.byte_range()];
        let scope = scopes.at(name.start_byte());
        if !candidates.contains(n) || (param && !scope.is_some_and(|s| scopes.is_function(s))) {
            continue; // not an atomic's name, or a prototype's parameter
        }
        let decl = declared.get(&name.start_byte()).copied();
        bindings.declare(scope, n, name.end_byte(), decl);
    }
    bindings
}

/// What a receiver or an operand names.
struct Receivers<'a, 's> {
    text: &'s str,
    scopes: &'a Scopes,
    bindings: &'a Bindings<'s, Option<Decl>>,
    members: &'a HashSet<&'s str>,
}

impl<'t> Receivers<'_, '_> {
    /// How the name `r` is declared where it stands, if it is a bare name.
    fn decl(&self, r: Node) -> Option<Decl> {
        if r.child_count() != 0 {
            return None;
        }
        let name = &self.text[r.byte_range()];
        self.bindings
            .lookup(self.scopes, name, r.start_byte())
            .copied()
            .flatten()
    }

    /// An atomic's own name: `flag.load()`, `flag = 1`.
    fn named(&self, node: Node<'t>, r: Node<'t>) -> Option<Op<'t>> {
        let decl = self.decl(r).filter(|d| !d.indirect)?;
        let (reference, place) = match decl.held {
            Held::Object => (false, Some(r)),
            Held::Ref => (true, None),
        };
        let word = word(r, reference, true, false);
        Some(Op {
            node,
            word,
            place,
            receiver: None,
        })
    }

    /// An element of a pointer or array of atomic objects (`a[i]`, `*p`), or an atomic member
    /// (`q->head`, `s.count`): the receiver is the word.
    fn element(&self, node: Node<'t>, r: Node<'t>) -> Option<Op<'t>> {
        let f = fields();
        let object = Decl {
            held: Held::Object,
            indirect: true,
        };
        let member = r.child_by_field_id(f.field.get());
        let named = if let Some(m) = member {
            self.members.contains(&self.text[m.byte_range()])
        } else {
            let base = r.child_by_field_id(f.argument.get())?;
            // `*p`, or `a[i]` (whose base is an `argument` too, with no operator).
            let op = r.child_by_field_id(f.operator.get());
            let deref_or_index = op.is_none_or(|o| &self.text[o.byte_range()] == "*");
            deref_or_index && self.decl(base) == Some(object)
        };
        if !named {
            return None;
        }
        let word = word(r, false, true, false);
        let receiver = (node.id() != r.id()).then_some(r);
        Some(Op {
            node,
            word,
            place: Some(r),
            receiver,
        })
    }

    /// `p->load()` where `p` points to atomic objects: the pointer names the word.
    fn pointer(&self, node: Node<'t>, p: Node<'t>) -> Option<Op<'t>> {
        let object = Decl {
            held: Held::Object,
            indirect: true,
        };
        (self.decl(p) == Some(object)).then(|| Op {
            node,
            word: word(p, false, true, true),
            place: None,
            receiver: None,
        })
    }
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
             __shared__ cuda::atomic<int, cuda::thread_scope_block> s;\n\
             s.store(1);\n\
             s = 2;\n\
             }\n\
             void h(int *a) { cuda::atomic_ref<int> r(a[0]); r.store(1); }\n",
        );
        // A method of another type, an inner `r` that hides the atomic one, a pointer to an
        // atomic assigned, a __shared__ atomic, host code: no site.
        assert!(!t.contains("WMFIX_FENCE"), "{t}");
    }

    #[test]
    fn elements_members_and_pointers_of_atomics_are_operations_not_plain_accesses() {
        let t = instrument(
            "struct Q { cuda::atomic<int, cuda::thread_scope_device> head; int items[4]; };\n\
             struct P { int head; };\n\
             struct S { cuda::atomic<int> count; };\n\
             __device__ cuda::atomic<int> locks[4];\n\
             __device__ void f(Q *q, Q &r, S *s, cuda::atomic<int> *a, int *b, P *p) {\n\
             q->items[0] = 1;\n\
             a[1].store(1);\n\
             a[2] = 2;\n\
             while (locks[3].exchange(1) != 0) {}\n\
             (*a).fetch_add(3);\n\
             a->fetch_sub(4);\n\
             s->count += 5;\n\
             r.items[1] = s->count.load();\n\
             b[0] = 6;\n\
             p->head = 7;\n\
             q->head.store(8);\n\
             }\n",
        );
        for line in [
            // Plain data stays a plain access.
            "q->items[0] = 1; WMFIX_FENCE_AIM(0, q->items[0]);",
            "a[1].store(1); WMFIX_FENCE_AT(1, a[1]);",
            "a[2] = 2; WMFIX_FENCE_AT(2, a[2]);",
            "(*a).fetch_add(3); WMFIX_FENCE_AT(4, *a);",
            "a->fetch_sub(4); WMFIX_FENCE_PTR(5, a);",
            "s->count += 5; WMFIX_FENCE_AT(6, s->count);",
            "b[0] = 6; WMFIX_FENCE_AT(8, b[0]);",
        ] {
            assert!(t.contains(line), "{line} in {t}");
        }
        // `head` is also a plain int of another struct: neither is taken as an atomic (the
        // plain store keeps its site, the call gets none).
        assert!(
            t.contains("p->head = 7; WMFIX_FENCE_AT(9, p->head);"),
            "{t}"
        );
        assert!(t.contains("q->head.store(8);\n"), "{t}");
    }
}

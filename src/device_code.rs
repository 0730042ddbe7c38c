//! Device code: the `__global__`/`__device__` functions of a file, and the expressions in them
//! that may access global memory.

use crate::queries::{self, Captures, IdMap, IdSet};
use crate::scopes::{Bindings, Scopes};
use serde::Serialize;
use std::collections::HashSet;
use std::num::NonZeroU16;
use std::sync::OnceLock;
use tree_sitter::Node;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AccessKind {
    Load,
    Store,
    Atomic,
}

pub struct DeviceFunction<'t> {
    pub body: Node<'t>,
    pub name: String,
    pub kernel: bool,
    /// `__host__ __device__`: compiled for the host too.
    pub host: bool,
}

pub struct Access<'t> {
    pub node: Node<'t>,
    pub kind: AccessKind,
    /// Index into the file's device functions.
    pub function: usize,
}

pub fn device_functions<'t>(caps: &Captures<'t>, text: &str) -> Vec<DeviceFunction<'t>> {
    let kernels = caps.ids("kernel.body");
    let host = caps.ids("host.body");
    let mut seen = IdSet::default();
    let mut out = Vec::new();
    for body in caps
        .get("kernel.body")
        .iter()
        .chain(caps.get("device.body"))
    {
        if !seen.insert(body.id()) {
            continue;
        }
        let function = body.parent().expect("a body has a function");
        out.push(DeviceFunction {
            body: *body,
            name: declared_name(function, text).to_string(),
            kernel: kernels.contains(&body.id()),
            host: host.contains(&body.id()),
        });
    }
    out.sort_by_key(|f| f.body.start_byte());
    out
}

/// The name a declaration declares: follow `declarator` fields to the innermost one.
pub fn declared_name<'s>(node: Node, text: &'s str) -> &'s str {
    &text[name_node(node).byte_range()]
}

fn name_node(node: Node) -> Node {
    let mut n = node;
    while let Some(d) = n.child_by_field_id(declarator_field().get()) {
        n = d;
    }
    n
}

/// The field's id, found once: by name, each look-up is a string search.
fn declarator_field() -> NonZeroU16 {
    static ID: OnceLock<NonZeroU16> = OnceLock::new();
    *ID.get_or_init(|| {
        let id = queries::language().field_id_for_name("declarator");
        id.expect("the grammar has a declarator field")
    })
}

/// The innermost device function body containing `node`, as an index into `functions`.
fn enclosing(functions: &[DeviceFunction], node: Node) -> Option<usize> {
    let r = node.byte_range();
    functions
        .iter()
        .enumerate()
        .filter(|(_, f)| f.body.start_byte() <= r.start && r.end <= f.body.end_byte())
        .max_by_key(|(_, f)| f.body.start_byte())
        .map(|(i, _)| i)
}

/// Whether each declared name is not global memory where it is visible: `__shared__`
/// variables, arrays local to a block, and pointers initialised from those. Every declaration of
/// such a name is bound, so that a parameter or inner variable of the same name hides it.
fn locality<'s>(scopes: &Scopes, caps: &Captures, text: &'s str) -> Bindings<'s, bool> {
    let locals = local_declarators(caps);
    // A name never declared local is global memory wherever it is used: it needs no binding.
    let candidates: HashSet<&str> = locals.names.iter().map(|n| &text[n.byte_range()]).collect();
    let mut names: Vec<(Node, bool)> = Vec::new();
    for (cap, param) in [("var.decl", false), ("param.decl", true)] {
        for name in caps.get(cap).iter().map(|d| name_node(*d)) {
            if candidates.contains(&text[name.byte_range()]) {
                names.push((name, param));
            }
        }
    }
    // Source order, so that an alias sees the declarations before it.
    names.sort_by_key(|(n, _)| n.start_byte());

    let mut bindings = Bindings::new();
    for (name, param) in names {
        let at = name.start_byte();
        let scope = scopes.at(at);
        if param && !scope.is_some_and(|s| scopes.is_function(s)) {
            continue; // a prototype's parameter
        }
        let from_local = |v: &Node| {
            let value = &text[v.byte_range()];
            bindings.lookup(scopes, value, v.start_byte()) == Some(&true)
        };
        let local = locals.always.contains(&at) || locals.aliases.get(&at).is_some_and(from_local);
        bindings.declare(scope, &text[name.byte_range()], name.end_byte(), local);
    }
    bindings
}

/// The declared names that may not be global memory, keyed by the byte each starts at.
struct LocalDeclarators<'t> {
    /// `__shared__` variables and local arrays.
    always: IdSet,
    /// Pointers, with the variable their initial value points into: local when that one is.
    aliases: IdMap<Node<'t>>,
    /// The names of both.
    names: Vec<Node<'t>>,
}

fn local_declarators<'t>(caps: &Captures<'t>) -> LocalDeclarators<'t> {
    let mut names: Vec<Node> = Vec::new();
    for decl in caps.get("shared.decl") {
        // One __shared__ declaration may declare several variables.
        let mut c = decl.walk();
        names.extend(
            decl.children_by_field_id(declarator_field(), &mut c)
                .map(name_node),
        );
    }
    names.extend(caps.get("local.decl").iter().map(|d| name_node(*d)));
    let always = names.iter().map(Node::start_byte).collect();
    let mut aliases = IdMap::default();
    for m in &caps.matches {
        let alias = m.iter().find(|(c, _)| *c == "alias.decl");
        let value = m.iter().find(|(c, _)| *c == "alias.value");
        if let (Some((_, a)), Some((_, v))) = (alias, value) {
            let name = name_node(*a);
            aliases.insert(name.start_byte(), *v);
            names.push(name);
        }
    }
    LocalDeclarators {
        always,
        aliases,
        names,
    }
}

/// Names of file-scope `__device__` variables; a function declarator declares none.
fn global_variables<'s>(caps: &Captures, text: &'s str) -> HashSet<&'s str> {
    let functions = caps.ids("function.name");
    caps.get("global.var")
        .iter()
        .map(|n| name_node(*n))
        .filter(|n| !functions.contains(&n.id()))
        .map(|n| &text[n.byte_range()])
        .collect()
}

fn within_any(node: Node, ranges: &[std::ops::Range<usize>]) -> bool {
    let r = node.byte_range();
    ranges.iter().any(|u| u.start <= r.start && r.end <= u.end)
}

/// Every expression in device code that may access global memory.
pub fn accesses<'t>(
    functions: &[DeviceFunction<'t>],
    caps: &Captures<'t>,
    text: &str,
) -> Vec<Access<'t>> {
    let scopes = Scopes::new(caps);
    let locality = locality(&scopes, caps, text);
    let is_local = |base: &Node| {
        let name = &text[base.byte_range()];
        locality.lookup(&scopes, name, base.start_byte()) == Some(&true)
    };
    let not_access = caps.ids("not_access");
    let stores = caps.ids("store");
    let unevaluated: Vec<_> = caps
        .get("unevaluated")
        .iter()
        .map(Node::byte_range)
        .collect();

    // Base identifier of each access, where the query found one.
    let mut base: IdMap<Node> = IdMap::default();
    for m in &caps.matches {
        let acc = m
            .iter()
            .find(|(c, _)| matches!(*c, "access" | "access.atomic"));
        let b = m.iter().find(|(c, _)| *c == "access.base");
        if let (Some((_, a)), Some((_, b))) = (acc, b) {
            base.insert(a.id(), *b);
        }
    }
    let globals = global_variables(caps, text);

    let mut seen = IdSet::default();
    let mut out = Vec::new();
    let mut push = |node: Node<'t>, kind: AccessKind, out: &mut Vec<Access<'t>>| {
        if !seen.insert(node.id())
            || not_access.contains(&node.id())
            || within_any(node, &unevaluated)
        {
            return;
        }
        let Some(function) = enclosing(functions, node) else {
            return;
        };
        if base.get(&node.id()).is_some_and(is_local) {
            return;
        }
        let kind = if kind == AccessKind::Load && is_store(node, &stores) {
            AccessKind::Store
        } else {
            kind
        };
        out.push(Access {
            node,
            kind,
            function,
        });
    };
    for n in caps.get("access.atomic") {
        push(*n, AccessKind::Atomic, &mut out);
    }
    for n in caps.get("access") {
        push(*n, AccessKind::Load, &mut out);
    }
    for n in caps.get("ident") {
        // Name first: `parent()` walks down from the root, too slow for every identifier.
        if globals.contains(&text[n.byte_range()]) && !is_declarator(*n) {
            push(*n, AccessKind::Load, &mut out);
        }
    }
    out.sort_by_key(|a| a.node.start_byte());
    out
}

/// The name a declaration declares, not a use of it.
fn is_declarator(n: Node) -> bool {
    n.parent()
        .and_then(|p| p.child_by_field_name("declarator"))
        .is_some_and(|d| d.id() == n.id())
}

fn is_store(node: Node, stores: &IdSet) -> bool {
    stores.contains(&node.id())
}

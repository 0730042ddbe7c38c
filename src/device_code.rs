//! Device code: the `__global__`/`__device__` functions of a file, and the expressions in them
//! that may access global memory.

use crate::queries::{Captures, IdMap, IdSet};
use serde::Serialize;
use std::collections::HashSet;
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
    let mut n = node;
    while let Some(d) = n.child_by_field_name("declarator") {
        n = d;
    }
    &text[n.byte_range()]
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

/// Names that are not global memory, per device function (`None`: the whole file):
/// `__shared__` variables, arrays local to a function, and pointers initialised from those.
fn local_names<'s>(
    functions: &[DeviceFunction],
    caps: &Captures,
    text: &'s str,
) -> HashSet<(Option<usize>, &'s str)> {
    let mut names = HashSet::new();
    let mut decls: Vec<(usize, &str, Node)> = Vec::new();
    for cap in ["shared.decl", "local.decl"] {
        decls.extend(caps.get(cap).iter().map(|n| (n.start_byte(), cap, *n)));
    }
    for m in &caps.matches {
        let alias = m.iter().find(|(c, _)| *c == "alias.decl");
        let value = m.iter().find(|(c, _)| *c == "alias.value");
        if let (Some((_, a)), Some((_, v))) = (alias, value) {
            decls.push((a.start_byte(), "alias", *a));
            decls.push((v.start_byte(), "alias.value", *v));
        }
    }
    // Source order, so that an alias sees the arrays declared before it.
    decls.sort_by_key(|d| d.0);
    let mut pending_alias: Option<(Option<usize>, &str)> = None;
    for (_, cap, node) in decls {
        let scope = enclosing(functions, node);
        match cap {
            "alias" => pending_alias = Some((scope, declared_name(node, text))),
            "alias.value" => {
                let value = &text[node.byte_range()];
                let from_local = |s| names.contains(&(s, value)) || names.contains(&(None, value));
                if let Some((s, alias)) = pending_alias.take().filter(|(s, _)| from_local(*s)) {
                    names.insert((s, alias));
                }
            }
            _ => {
                // A __shared__ declaration may declare several variables.
                let mut c = node.walk();
                let declarators: Vec<Node> =
                    node.children_by_field_name("declarator", &mut c).collect();
                if declarators.is_empty() {
                    names.insert((scope, declared_name(node, text)));
                }
                for d in declarators {
                    names.insert((scope, declared_name(d, text)));
                }
            }
        }
    }
    names
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
    let locals = local_names(functions, caps, text);
    let is_local =
        |f: usize, name: &str| locals.contains(&(Some(f), name)) || locals.contains(&(None, name));
    let not_access = caps.ids("not_access");
    let stores = caps.ids("store");
    let unevaluated: Vec<_> = caps
        .get("unevaluated")
        .iter()
        .map(Node::byte_range)
        .collect();

    // Base identifier of each access, where the query found one.
    let mut base: IdMap<&str> = IdMap::default();
    for m in &caps.matches {
        let acc = m
            .iter()
            .find(|(c, _)| matches!(*c, "access" | "access.atomic"));
        let b = m.iter().find(|(c, _)| *c == "access.base");
        if let (Some((_, a)), Some((_, b))) = (acc, b) {
            base.insert(a.id(), &text[b.byte_range()]);
        }
    }
    let globals: HashSet<&str> = caps
        .get("global.var")
        .iter()
        .map(|n| declared_name(*n, text))
        .collect();

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
        if base.get(&node.id()).is_some_and(|b| is_local(function, b)) {
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

//! Pointer parameters that every call passes shared or per-thread memory: a device function's
//! `p[i]` is then not a global access. One level of calls, within one file, and only where the
//! function's name is used for nothing but those calls (no address taken, no prototype, no
//! overload), so no call can hide elsewhere in the file. Only in `.cu` files: a header's
//! functions are called from files not seen here. (A `.cu` function that another translation
//! unit calls through `-rdc` and a prototype of its own is not seen either.)

use crate::rewrite::device_code::{Locality, name_node};
use crate::rewrite::queries::{Capture, Captures};
use std::collections::{HashMap, HashSet};
use tree_sitter::Node;

/// The names (declarator identifiers) of the pointer parameters of device functions (not
/// kernels) that every call in the file passes local memory, as `local` sees it.
pub fn local_params<'t>(caps: &Captures<'t>, text: &str, local: &Locality) -> Vec<Node<'t>> {
    let (callees, calls) = facts(caps, text, local, false);
    if callees.is_empty() {
        return Vec::new();
    }
    let names: HashSet<&str> = callees.iter().map(|(n, _)| *n).collect();
    let mut uses: HashMap<&str, usize> = HashMap::new();
    for n in caps.get(Capture::Ident) {
        let name = &text[n.byte_range()];
        if names.contains(name) {
            *uses.entry(name).or_default() += 1;
        }
    }
    let decided = decide(&callees, &calls, |n| uses.get(n).copied().unwrap_or(0));
    params_of(caps, text, &decided)
}

/// Device functions (not kernels) defined, with which parameters are pointers, and calls by
/// name, with which arguments point into local memory.
pub type Facts<'s> = (Vec<(&'s str, Vec<bool>)>, Vec<(&'s str, Vec<bool>)>);

/// The `Facts` of a file: its calls of the functions it defines only, unless `all` (a piece
/// of a file, whose calls may go to functions of another piece).
pub fn facts<'s>(caps: &Captures, text: &'s str, local: &Locality, all: bool) -> Facts<'s> {
    let pointers = caps.ids(Capture::ParamPointer);
    let callees: Vec<(&str, Vec<bool>)> = definitions(caps, text)
        .into_iter()
        .map(|(name, params)| {
            let pointer = named(params)
                .into_iter()
                .map(|p| pointers.contains(&p.id()));
            (name, pointer.collect())
        })
        .collect();
    let names: HashSet<&str> = callees.iter().map(|(n, _)| *n).collect();
    let mut calls = Vec::new();
    for m in &caps.matches {
        let get = |c| m.iter().find(|(k, _)| *k == Some(c)).map(|(_, n)| *n);
        if let (Some(name), Some(args)) = (get(Capture::CallName), get(Capture::CallArgs)) {
            let name = &text[name.byte_range()];
            if all || names.contains(name) {
                let args = named(args).into_iter().map(|a| local.points_local(a));
                calls.push((name, args.collect()));
            }
        }
    }
    (callees, calls)
}

/// The device functions (not kernels) a file defines: name, parameter list.
fn definitions<'t, 's>(caps: &Captures<'t>, text: &'s str) -> Vec<(&'s str, Node<'t>)> {
    let device = caps.ids(Capture::DeviceBody);
    let kernels = caps.ids(Capture::KernelBody);
    let mut out = Vec::new();
    for m in &caps.matches {
        let get = |c| m.iter().find(|(k, _)| *k == Some(c)).map(|(_, n)| *n);
        if let (Some(name), Some(params), Some(body)) = (
            get(Capture::CalleeName),
            get(Capture::CalleeParams),
            get(Capture::CalleeBody),
        ) && device.contains(&body.id())
            && !kernels.contains(&body.id())
        {
            out.push((&text[name.byte_range()], params));
        }
    }
    out
}

/// The pointer parameters (function, index) that every call passes local memory: of
/// functions defined once, named by nothing but those calls (`uses`: how many times a name is
/// named, its definition's name included). Sorted.
pub fn decide<'s>(
    callees: &[(&'s str, Vec<bool>)],
    calls: &[(&'s str, Vec<bool>)],
    uses: impl Fn(&str) -> usize,
) -> Vec<(&'s str, usize)> {
    let mut defs: HashMap<&str, Vec<&[bool]>> = HashMap::new();
    for (name, pointer) in callees {
        defs.entry(name).or_default().push(pointer);
    }
    let mut args: HashMap<&str, Vec<&[bool]>> = HashMap::new();
    for (name, local) in calls {
        args.entry(name).or_default().push(local);
    }
    let mut out = Vec::new();
    for (name, defs) in defs {
        let ([pointer], Some(args)) = (&defs[..], args.get(name)) else {
            continue;
        };
        // The definition's name and one per call: nothing else names it.
        if uses(name) != args.len() + 1 {
            continue;
        }
        for (i, _) in pointer.iter().enumerate().filter(|(_, p)| **p) {
            if args.iter().all(|a| a.get(i) == Some(&true)) {
                out.push((name, i));
            }
        }
    }
    out.sort_unstable();
    out
}

/// The declarator names of the `decided` parameters of the functions the file defines.
pub fn params_of<'t>(caps: &Captures<'t>, text: &str, decided: &[(&str, usize)]) -> Vec<Node<'t>> {
    if decided.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (name, params) in definitions(caps, text) {
        let params = named(params);
        let indices = decided.iter().filter(|(n, _)| *n == name);
        out.extend(indices.filter_map(|(_, i)| params.get(*i).map(|p| name_node(*p))));
    }
    out.sort_by_key(Node::start_byte);
    out
}

/// The named children that are not comments: parameters, or arguments.
fn named(list: Node) -> Vec<Node> {
    let mut c = list.walk();
    list.named_children(&mut c)
        .filter(|n| !n.is_extra())
        .collect()
}

//! Pointer parameters that every call passes shared or per-thread memory: a device function's
//! `p[i]` is then not a global access. One level of calls, within one file, and only where the
//! function's name is used for nothing but those calls (no address taken, no prototype, no
//! overload), so no call can hide elsewhere in the file. Only in `.cu` files: a header's
//! functions are called from files not seen here. (A `.cu` function that another translation
//! unit calls through `-rdc` and a prototype of its own is not seen either.)

use crate::rewrite::device_code::{Locality, name_node};
use crate::rewrite::queries::{Capture, Captures};
use std::collections::HashMap;
use tree_sitter::Node;

/// The names (declarator identifiers) of the pointer parameters of device functions (not
/// kernels) that every call in the file passes local memory, as `local` sees it.
pub fn local_params<'t>(caps: &Captures<'t>, text: &str, local: &Locality) -> Vec<Node<'t>> {
    let device = caps.ids(Capture::DeviceBody);
    let kernels = caps.ids(Capture::KernelBody);
    let pointers = caps.ids(Capture::ParamPointer);
    let mut callees: HashMap<&str, Vec<Node<'t>>> = HashMap::new();
    let mut calls: HashMap<&str, Vec<Node<'t>>> = HashMap::new();
    for m in &caps.matches {
        let get = |c| m.iter().find(|(k, _)| *k == Some(c)).map(|(_, n)| *n);
        if let (Some(name), Some(params), Some(body)) = (
            get(Capture::CalleeName),
            get(Capture::CalleeParams),
            get(Capture::CalleeBody),
        ) && device.contains(&body.id())
            && !kernels.contains(&body.id())
        {
            callees
                .entry(&text[name.byte_range()])
                .or_default()
                .push(params);
        }
        if let (Some(name), Some(args)) = (get(Capture::CallName), get(Capture::CallArgs)) {
            calls
                .entry(&text[name.byte_range()])
                .or_default()
                .push(args);
        }
    }
    callees.retain(|_, defs| defs.len() == 1);
    if callees.is_empty() {
        return Vec::new();
    }
    let mut uses: HashMap<&str, usize> = HashMap::new();
    for n in caps.get(Capture::Ident) {
        let name = &text[n.byte_range()];
        if callees.contains_key(name) {
            *uses.entry(name).or_default() += 1;
        }
    }
    let mut out = Vec::new();
    for (name, defs) in callees {
        let Some(args) = calls.get(name) else {
            continue;
        };
        // The definition's name and one per call: nothing else names it.
        if uses.get(name) != Some(&(args.len() + 1)) {
            continue;
        }
        for (i, param) in named(defs[0]).into_iter().enumerate() {
            let every_call_local = args
                .iter()
                .all(|a| named(*a).get(i).is_some_and(|arg| local.points_local(*arg)));
            if pointers.contains(&param.id()) && every_call_local {
                out.push(name_node(param));
            }
        }
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

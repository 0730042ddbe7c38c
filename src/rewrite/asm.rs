//! Inline PTX as an access (issue 45): `asm volatile("st.global.u32 [%0], %1;" :: "l"(p),
//! "r"(v))` stores through its operand `p`, so its statement gets a fence that names `p`, as a
//! load/store call does. An `asm` whose memory instructions all name shared, local, constant or
//! parameter memory, or that has none (`membar.gl`, arithmetic), is no access.

use super::queries::{Capture, Captures};
use crate::fences::record::AccessKind;
use crate::fences::scope::FenceScope;
use foldhash::{HashMap, HashMapExt};
use regex::Regex;
use std::sync::OnceLock;
use tree_sitter::Node;

/// One memory instruction of an `asm` template.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemOp {
    pub kind: AccessKind,
    /// `.relaxed`, `.acquire`, `.release`, `.volatile`, or an atomic: not a plain access.
    pub strong: bool,
    /// The operand number in `[%N]`, when the address is an operand.
    pub operand: Option<usize>,
    /// `.acquire` (or `.acq_rel`), and `.release` (or `.acq_rel`).
    pub acquire: bool,
    pub release: bool,
    /// `.cta`, `.gpu` (or `.cluster`: read as the block's), `.sys`; `.volatile` is relaxed at
    /// system scope; device where none is named.
    pub scope: FenceScope,
}

fn instruction() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    // An opcode at a statement's start (after `;`, `{`, a quote, a line break or a predicate),
    // its dotted modifiers, then the operands up to the first `[`: the address.
    RE.get_or_init(|| {
        Regex::new(
            r#"(?:^|[;{}"\n]|\\n|\\t)\s*(?:@!?%?\w+\s+)?(ld|st|atom|red)((?:\.[A-Za-z0-9_:]+)*)\s+([^;\[]*)\[\s*(?:%(\d+))?"#,
        )
        .expect("valid regex")
    })
}

/// The memory instructions of an `asm` template that may touch global memory (a `.global`
/// space or the generic one).
pub fn memory_ops(code: &str) -> Vec<MemOp> {
    const NOT_GLOBAL: [&str; 4] = [".shared", ".local", ".const", ".param"];
    const STRONG: [&str; 5] = [".relaxed", ".acquire", ".release", ".volatile", ".mmio"];
    instruction()
        .captures_iter(code)
        .filter(|c| !NOT_GLOBAL.iter().any(|s| c[2].contains(s)))
        .map(|c| {
            let kind = match &c[1] {
                "ld" => AccessKind::Load,
                "st" => AccessKind::Store,
                _ => AccessKind::Atomic,
            };
            let has = |m: &str| c[2].split('.').any(|p| p == m);
            let scope = if has("cta") || has("cluster") {
                FenceScope::Block
            } else if has("sys") || has("volatile") {
                FenceScope::System
            } else {
                FenceScope::Device
            };
            MemOp {
                kind,
                strong: kind == AccessKind::Atomic || STRONG.iter().any(|s| c[2].contains(s)),
                operand: c.get(4).and_then(|n| n.as_str().parse().ok()),
                acquire: has("acquire") || has("acq_rel"),
                release: has("release") || has("acq_rel"),
                scope,
            }
        })
        .collect()
}

/// What a statement holding these instructions counts as, and which instruction's address a
/// fence names: an atomic or strong one makes it a load/store call (strong, as `__stcg` is
/// counted); else a store if it stores, else a load.
pub fn kind_of(ops: &[MemOp]) -> Option<(AccessKind, MemOp)> {
    let pick = |f: &dyn Fn(&MemOp) -> bool| ops.iter().find(|o| f(o)).copied();
    if let Some(op) = pick(&|o| o.strong) {
        return Some((AccessKind::Call, op));
    }
    pick(&|o| o.kind == AccessKind::Store)
        .or_else(|| ops.first().copied())
        .map(|op| (op.kind, op))
}

/// An `asm` of device code that accesses memory: the statement's kind, and the operand
/// expression holding the address (none where the template computes it).
pub struct AsmAccess<'t> {
    pub node: Node<'t>,
    pub kind: AccessKind,
    pub pointer: Option<Node<'t>>,
}

/// The `asm` expressions of a file that access memory that may be global.
pub fn asm_accesses<'t>(caps: &Captures<'t>, text: &str) -> Vec<AsmAccess<'t>> {
    let sorted = |c: Capture| {
        let mut v: Vec<Node> = caps.get(c).to_vec();
        v.sort_by_key(Node::start_byte);
        v
    };
    let (codes, operands) = (sorted(Capture::AccessAsmCode), sorted(Capture::AsmOperand));
    let inside = |v: &'_ [Node<'t>], node: &Node| {
        let r = node.byte_range();
        let lo = v.partition_point(|o| o.start_byte() < r.start);
        let hi = v.partition_point(|o| o.start_byte() < r.end);
        v[lo..hi].to_vec()
    };
    caps.get(Capture::AccessAsm)
        .iter()
        .filter_map(|node| {
            let code = *inside(&codes, node).first()?;
            let (kind, op) = kind_of(&memory_ops(&text[code.byte_range()]))?;
            // Outputs, then inputs, in source order: the numbering `%N` uses.
            let pointer = op
                .operand
                .and_then(|n| inside(&operands, node).get(n).copied());
            Some(AsmAccess {
                node: *node,
                kind,
                pointer,
            })
        })
        .collect()
}

/// The address operand of each accessing `asm`, by node id.
pub type AsmPointers<'t> = HashMap<usize, Option<Node<'t>>>;

/// [`AsmPointers`] of `accesses`.
pub fn pointers<'t>(accesses: &[AsmAccess<'t>]) -> AsmPointers<'t> {
    let mut m = HashMap::new();
    for a in accesses {
        m.insert(a.node.id(), a.pointer);
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(kind: AccessKind, strong: bool, operand: usize) -> MemOp {
        MemOp {
            kind,
            strong,
            operand: Some(operand),
            acquire: false,
            release: false,
            scope: FenceScope::Device,
        }
    }

    #[test]
    fn global_and_generic_loads_stores_and_atomics_are_found_with_their_address_operand() {
        use AccessKind::*;
        assert_eq!(
            memory_ops(r#""st.global.u32 [%0], %1;""#),
            [op(Store, false, 0)]
        );
        assert_eq!(
            memory_ops(r#""ld.acquire.gpu.u32 %0, [%1];""#),
            [MemOp {
                acquire: true,
                ..op(Load, true, 1)
            }]
        );
        assert_eq!(
            memory_ops(r#""st.release.cta.global.u32 [%0], %1;""#),
            [MemOp {
                release: true,
                scope: FenceScope::Block,
                ..op(Store, true, 0)
            }]
        );
        assert_eq!(
            memory_ops(r#""atom.global.add.u32 %0, [%1], %2;""#),
            [op(Atomic, true, 1)]
        );
        assert_eq!(
            memory_ops(r#""{\n\t.reg .pred p;\n\tld.volatile.global.v2.u32 {%0, %1}, [%2+8];\n}""#),
            [MemOp {
                scope: FenceScope::System,
                ..op(Load, true, 2)
            }]
        );
        assert_eq!(
            memory_ops(r#""@p st.global.wb.u64 [%0], %1;""#),
            [op(Store, false, 0)]
        );
        // The template computes the address: an access with no operand to name.
        let computed = memory_ops(
            r#""{\n\t.reg .u64 a;\n\tcvta.to.global.u64 a, %0;\n\tst.global.u32 [a], %1;\n}""#,
        );
        assert_eq!(
            computed,
            [MemOp {
                operand: None,
                ..op(Store, false, 0)
            }]
        );
    }

    #[test]
    fn other_spaces_fences_and_arithmetic_are_not_accesses() {
        assert!(memory_ops(r#""st.shared.u32 [%0], %1;""#).is_empty());
        assert!(memory_ops(r#""ld.shared::cta.u32 %0, [%1];""#).is_empty());
        assert!(memory_ops(r#""ld.param.u64 %0, [%1];""#).is_empty());
        assert!(memory_ops(r#""membar.gl;""#).is_empty());
        assert!(memory_ops(r#""fence.acq_rel.gpu;""#).is_empty());
        assert!(memory_ops(r#""add.s32 %0, %1, 1;""#).is_empty());
        // A name that only contains an opcode.
        assert!(memory_ops(r#""mov.u32 %0, %%lanemask_lt;""#).is_empty());
    }

    #[test]
    fn the_statement_is_a_call_when_any_instruction_is_strong_else_a_store_before_a_load() {
        use AccessKind::*;
        let two = memory_ops(r#""ld.global.u32 %0, [%2]; st.global.u32 [%1], %0;""#);
        assert_eq!(kind_of(&two), Some((Store, op(Store, false, 1))));
        let strong = memory_ops(r#""ld.global.u32 %0, [%2]; st.release.gpu.u32 [%1], %0;""#);
        let release = MemOp {
            release: true,
            ..op(Store, true, 1)
        };
        assert_eq!(kind_of(&strong), Some((Call, release)));
        assert_eq!(kind_of(&[]), None);
    }
}

//! The address a fence can hand to the runtime for aimed stress (`aim-str`, runtime-cu/README.md):
//! a fence after a statement becomes `WMFIX_FENCE_AT(id, a[i]);` (an lvalue, whose address the
//! runtime takes) or `WMFIX_FENCE_PTR(id, p);` (the pointer an atomic or a cache-operator call
//! accesses). The runtime evaluates it only under aim-str, after the fence, and never reads or
//! writes through it: a wrong address makes the stress aim worse, never the program wrong.
//!
//! Only text that means after the statement what it meant in it is copied: nothing in it that
//! does something when evaluated again (calls, assignments, increments, commas, lambdas,
//! new/delete; `queries/aim.scm`), nothing inside a pack expansion, no name in it that the statement assigns (after `i = a[i];`,
//! `a[i]` is another element), and nothing that would not survive being copied onto one line
//! (line breaks, comments, preprocessor lines, quotes).

use crate::fences::record::AccessKind;
use crate::rewrite::asm::AsmPointers;
use crate::rewrite::device_code::call_pointer;
use crate::rewrite::libcuxx::Words;
use crate::rewrite::queries::{Capture, Captures, IdSet};
use std::ops::Range;
use tree_sitter::Node;

/// What the fence's text hands to the runtime.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AimForm {
    /// An lvalue: `WMFIX_FENCE_AT`.
    Lvalue,
    /// A pointer: `WMFIX_FENCE_PTR`.
    Pointer,
    /// A libcu++ `atomic_ref`, whose word the runtime finds: `WMFIX_FENCE_PTR(id,
    /// WMFIX_ATOMIC_WORD(r))`.
    Word,
}

/// The source range of an access's address expression, and its form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Aim {
    pub range: Range<usize>,
    pub form: AimForm,
    /// The named access's kind (a statement's fence names a store first).
    pub kind: AccessKind,
}

/// What a file's captures say about which text may be copied.
pub struct Facts<'a, 't> {
    calls: IdSet,
    /// Inline PTX accesses and the operand holding each one's address (`asm.rs`).
    asm: &'a AsmPointers<'t>,
    words: &'a Words<'t>,
    /// Byte ranges of impure expressions, by start.
    impure: Vec<Range<usize>>,
    /// Byte ranges of pack expansions, by start.
    packed: Vec<Range<usize>>,
    /// Assigned names, by start.
    assigned: Vec<(usize, &'t str)>,
    /// Every identifier, by start.
    idents: Vec<Range<usize>>,
    text: &'t str,
}

fn sorted_ranges(nodes: &[Node]) -> Vec<Range<usize>> {
    let mut v: Vec<Range<usize>> = nodes.iter().map(Node::byte_range).collect();
    v.sort_by_key(|r| r.start);
    v
}

/// The elements of `v` (sorted by start) that start inside `r`.
fn starting_in<'v, T>(v: &'v [T], start: impl Fn(&T) -> usize, r: &Range<usize>) -> &'v [T] {
    let lo = v.partition_point(|x| start(x) < r.start);
    let hi = v.partition_point(|x| start(x) < r.end);
    &v[lo..hi]
}

impl<'a, 't> Facts<'a, 't> {
    /// `asm`, `words`: the address operands and libcu++ words `device_code::accesses` found.
    pub fn new(
        caps: &Captures<'t>,
        text: &'t str,
        asm: &'a AsmPointers<'t>,
        words: &'a Words<'t>,
    ) -> Facts<'a, 't> {
        let mut calls = caps.ids(Capture::AccessAtomic);
        calls.extend(caps.ids(Capture::AccessCached));
        let mut assigned: Vec<(usize, &str)> = caps
            .get(Capture::AimAssigned)
            .iter()
            .map(|n| (n.start_byte(), &text[n.byte_range()]))
            .collect();
        assigned.sort();
        Facts {
            calls,
            asm,
            words,
            impure: sorted_ranges(caps.get(Capture::AimImpure)),
            packed: sorted_ranges(caps.get(Capture::AimPacked)),
            assigned,
            idents: sorted_ranges(caps.get(Capture::Ident)),
            text,
        }
    }

    /// The address of one of `accesses` (stores and atomics first) that a fence after
    /// `statement` can name, if any.
    pub fn aim(&self, statement: Range<usize>, accesses: &[(Node<'t>, AccessKind)]) -> Option<Aim> {
        let mut ordered: Vec<&(Node, AccessKind)> = accesses.iter().collect();
        ordered.sort_by_key(|(_, k)| *k == AccessKind::Load);
        ordered.into_iter().find_map(|(node, kind)| {
            let aim = if let Some(pointer) = self.asm.get(&node.id()) {
                Aim {
                    range: (*pointer)?.byte_range(),
                    form: AimForm::Pointer,
                    kind: *kind,
                }
            } else if let Some(word) = self.words.get(&node.id()) {
                let form = if word.reference {
                    AimForm::Word
                } else if word.pointer {
                    AimForm::Pointer
                } else {
                    AimForm::Lvalue
                };
                let aim = Aim {
                    range: word.node.byte_range(),
                    form,
                    kind: *kind,
                };
                // `flag = 1` assigns no name: it stores to the word `flag` refers to.
                let none = Range::default();
                let assigning = if word.atomic { &none } else { &statement };
                return self.copyable(&aim.range, assigning).then_some(aim);
            } else if self.calls.contains(&node.id()) {
                Aim {
                    range: call_pointer(*node)?.byte_range(),
                    form: AimForm::Pointer,
                    kind: *kind,
                }
            } else {
                Aim {
                    range: node.byte_range(),
                    form: AimForm::Lvalue,
                    kind: *kind,
                }
            };
            self.copyable(&aim.range, &statement).then_some(aim)
        })
    }

    /// The plain accesses of a site that the detection runtime records apart
    /// (`WMFIX_RACE_LOAD`/`_STORE`; `wmfix race` must see every access, and the fence names
    /// at most one): all whose text may be copied but the one `aim` names, and none inside it.
    pub fn race_hooks(
        &self,
        site: Range<usize>,
        accesses: &[(Node<'t>, AccessKind)],
        aim: Option<&Aim>,
    ) -> Vec<(Range<usize>, AccessKind)> {
        accesses
            .iter()
            .filter(|(n, k)| {
                *k != AccessKind::Atomic
                    && !self.calls.contains(&n.id())
                    && !self.asm.contains_key(&n.id())
            })
            .map(|(n, k)| (n.byte_range(), *k))
            .filter(|(r, _)| {
                aim.is_none_or(|a| !r.contains(&a.range.start) && !a.range.contains(&r.start))
            })
            .filter(|(r, _)| self.copyable(r, &site))
            .collect()
    }

    fn copyable(&self, r: &Range<usize>, statement: &Range<usize>) -> bool {
        let text = &self.text[r.clone()];
        if text.is_empty()
            || text.contains(['\n', '\r', '#', '"', '\''])
            || text.contains("//")
            || text.contains("/*")
        {
            return false;
        }
        // The name part of a qualified name (`advance` of `rng::advance`) means another thing,
        // or nothing, alone; through a pointer to member (`(c->*m)`) the place may be a member
        // function, whose address cannot be taken.
        if self.text[..r.start].trim_end().ends_with("::")
            || text.contains("->*")
            || text.contains(".*")
        {
            return false;
        }
        // An impure node that starts inside may still end outside only if it encloses the
        // access, which starts with it: then it does not lie inside.
        if starting_in(&self.impure, |x| x.start, r)
            .iter()
            .any(|i| i.end <= r.end)
        {
            return false;
        }
        let before = self.packed.partition_point(|p| p.start <= r.start);
        if self.packed[..before].iter().any(|p| p.end >= r.end) {
            return false;
        }
        let assigned = starting_in(&self.assigned, |x| x.0, statement);
        !starting_in(&self.idents, |x| x.start, r).iter().any(|i| {
            assigned
                .iter()
                .any(|(_, name)| *name == &self.text[i.clone()])
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::rewrite::render;
    use crate::rewrite::source::SourceFile;

    /// The instrumented text of a device function body.
    fn instrument(body: &str) -> String {
        let text = format!("__device__ int f(int *a, int *b, int i, int j) {{\n{body}\n}}\n");
        let file = SourceFile::new("t.cu".into(), "t.cu".into(), text);
        let mut planned = vec![render::plan_file(file, &Default::default())];
        let out = render::render(
            &mut planned,
            crate::fences::scope::FenceScope::Device,
            |_| "wmfix.cuh".into(),
        )
        .unwrap();
        let text = out.texts[0].clone().unwrap();
        text.lines().skip(5).collect::<Vec<_>>().join("\n")
    }

    #[test]
    fn a_statements_access_is_named_after_it() {
        // Two places: the fence does not depend on the space of the one it names alone (a may
        // point at shared memory while b is global), but on both.
        let t = instrument("a[i] = b[j];");
        assert!(
            t.contains(
                "a[i] = b[j]; WMFIX_RACE_LOAD(0, b[j]); WMFIX_FENCE_AIM_IF(0, WMFIX_GLOBAL(b[j]), a[i]);"
            ),
            "the other access for a race build: {t}"
        );
        // A place not named (an atomic's) leaves it unconditional.
        let t = instrument("a[i] = atomicAdd(&b[j], 1);");
        assert!(t.contains("WMFIX_FENCE_AIM(0, a[i]);"), "{t}");
        // One place, loaded and stored: the conditional form.
        let t = instrument("a[i] += 1;");
        assert!(t.contains("WMFIX_FENCE_AT(0, a[i]);"), "{t}");
        let t = instrument("int v = b[j + 1];");
        assert!(t.contains("WMFIX_FENCE_AT(0, b[j + 1]);"), "{t}");
        let t = instrument("atomicAdd(&a[i], 1);");
        assert!(t.contains("WMFIX_FENCE_PTR(0, &a[i]);"), "{t}");
        let t = instrument("a[threadIdx.x] = 0;");
        assert!(
            t.contains("WMFIX_FENCE_AT(0, a[wmfix_threadIdx().x]);"),
            "the copy gets the virtual id too: {t}"
        );
    }

    #[test]
    fn a_store_through_a_reference_a_call_returns_is_fenced() {
        // The callee's memory may be global; a call is not copied, so the fence names nothing.
        for body in ["at(i) = 1;", "t.at(i) += 2;", "++slot(0);"] {
            let t = instrument(body);
            assert!(
                t.contains(&format!("{body} WMFIX_FENCE(0);")),
                "{body}: {t}"
            );
        }
        // Beside an access it can name: the unconditional form, as for any two places.
        let t = instrument("at(i) = b[j];");
        assert!(t.contains("at(i) = b[j]; WMFIX_FENCE_AIM(0, b[j]);"), "{t}");
    }

    #[test]
    fn text_that_would_change_meaning_is_not_copied() {
        for body in [
            "i = a[i];",
            "a[i++] = 0;",
            "j += b[j];",
            "a[g(i)] = 0;",
            "a[i\n] = 1;",
            "a[i /* c */] = 1;",
            "int d[] = {(a[I] = 0, 0)...};",
        ] {
            let t = instrument(body);
            assert!(
                !t.contains("WMFIX_FENCE_AT") && !t.contains("WMFIX_FENCE_PTR"),
                "{body}: {t}"
            );
            assert!(t.contains("WMFIX_FENCE("), "{body}: still fenced: {t}");
        }
        // Another access of the statement can still be named.
        let t = instrument("i = a[j];");
        assert!(t.contains("WMFIX_FENCE_AT(0, a[j]);"), "{t}");
        let t = instrument("a[i] = b[i++];");
        assert!(!t.contains("WMFIX_FENCE_AT"), "{t}");
    }

    #[test]
    fn a_race_build_records_every_access_it_may_copy() {
        let t = instrument("a[i] = b[j] + b[j + 1];");
        assert!(
            t.contains(
                "WMFIX_RACE_LOAD(0, b[j]); WMFIX_RACE_LOAD(0, b[j + 1]); WMFIX_FENCE_AIM_IF(0, WMFIX_GLOBAL(b[j]) || WMFIX_GLOBAL(b[j + 1]), a[i]);"
            ),
            "{t}"
        );
        // A loop condition's fence names no address; the race build re-reads it after the loop.
        let t = instrument("while (*(volatile int *)a == 0) { }");
        assert!(
            t.contains("} WMFIX_RACE_LOAD(0, *(volatile int *)a); WMFIX_FENCE(0);"),
            "{t}"
        );
        // Nor the text that may not be copied, nor atomics (the race runtime sees those).
        let t = instrument("a[i] = b[i++];");
        assert!(!t.contains("WMFIX_RACE"), "{t}");
        let t = instrument("a[j] = atomicAdd(&b[i], 1);");
        assert!(!t.contains("WMFIX_RACE"), "{t}");
    }

    #[test]
    fn only_fences_after_statements_name_an_address() {
        let t = instrument("while (a[i] != 0) { }\nreturn b[j];");
        assert!(
            !t.contains("WMFIX_FENCE_AT") && !t.contains("WMFIX_FENCE_PTR"),
            "{t}"
        );
    }
}

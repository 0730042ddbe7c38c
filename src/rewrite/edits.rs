//! Edits as byte ranges over an unchanged original text (as in ast-grep and treereduce): the
//! rewriter never regenerates code from the tree, so comments, macros and layout survive.

use crate::rewrite::parallel;
use std::borrow::Borrow;
use std::cmp::Ordering;
use std::ops::Range;

/// Where an insertion sits among others at the same byte: everything that closes a construct
/// (deepest first) precedes everything that opens one (shallowest first), and both precede a
/// replacement that starts there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Slot {
    /// Closes the node at this depth; `second` orders two closings of one node (a fence, then
    /// the brace around it).
    Close {
        neg_depth: i64,
        second: bool,
    },
    Open {
        depth: i64,
        second: bool,
    },
    Replace,
}

impl Slot {
    pub fn close(depth: usize, second: bool) -> Slot {
        Slot::Close {
            neg_depth: -(depth as i64),
            second,
        }
    }
    pub fn open(depth: usize, second: bool) -> Slot {
        Slot::Open {
            depth: depth as i64,
            second,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Edit {
    pub start: usize,
    /// Equal to `start` for an insertion.
    pub end: usize,
    pub slot: Slot,
    pub text: String,
}

impl Edit {
    pub fn insert(at: usize, slot: Slot, text: impl Into<String>) -> Edit {
        Edit {
            start: at,
            end: at,
            slot,
            text: text.into(),
        }
    }
    pub fn replace(range: std::ops::Range<usize>, text: impl Into<String>) -> Edit {
        Edit {
            start: range.start,
            end: range.end,
            slot: Slot::Replace,
            text: text.into(),
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
#[error("internal error: overlapping edits at bytes {0} and {1}")]
pub struct Overlap(pub usize, pub usize);

/// Applies `edits` (owned or borrowed) to `original`. Replacements must not overlap each
/// other, and no insertion may fall strictly inside a replaced range. Many edits are applied in
/// spans of the text on all cores: the result is the same.
pub fn apply<E: Borrow<Edit> + Sync>(original: &str, mut edits: Vec<E>) -> Result<String, Overlap> {
    edits.sort_by(|a, b| in_order(a.borrow(), b.borrow()));
    edits.dedup_by(|a, b| (*a).borrow() == (*b).borrow());
    let spans = spans(&edits, original.len());
    if let [(edits, range)] = &spans[..] {
        return apply_span(original, edits, range.clone());
    }
    let texts = parallel::map(spans, |(edits, range)| apply_span(original, edits, range));
    let mut out = String::with_capacity(
        texts
            .iter()
            .map(|t| t.as_ref().map_or(0, String::len))
            .sum(),
    );
    for text in texts {
        out.push_str(&text?);
    }
    Ok(out)
}

/// The order edits are applied in: by position, then by slot among those at one byte.
fn in_order(a: &Edit, b: &Edit) -> Ordering {
    a.start.cmp(&b.start).then(a.slot.cmp(&b.slot))
}

/// Edits applied by one thread at a time.
const EDITS_PER_SPAN: usize = 1 << 14;

/// Sorted `edits` cut into runs of about `EDITS_PER_SPAN`, each with the bytes of the original
/// it rewrites: a cut goes only before an edit that no edit before it reaches past.
fn spans<E: Borrow<Edit>>(edits: &[E], len: usize) -> Vec<(&[E], Range<usize>)> {
    let mut out = Vec::new();
    let (mut from, mut at) = (0, 0);
    let mut reach = 0;
    for (i, e) in edits.iter().enumerate() {
        let e = e.borrow();
        if i - from >= EDITS_PER_SPAN && reach <= e.start {
            out.push((&edits[from..i], at..e.start));
            (from, at) = (i, e.start);
        }
        reach = reach.max(e.end);
    }
    out.push((&edits[from..], at..len));
    out
}

/// `original[range]` with `edits` (sorted, all inside it) applied.
fn apply_span<E: Borrow<Edit>>(
    original: &str,
    edits: &[E],
    range: Range<usize>,
) -> Result<String, Overlap> {
    let extra: usize = edits.iter().map(|e| e.borrow().text.len()).sum();
    let mut out = String::with_capacity(range.len() + extra);
    let mut copied = range.start;
    for e in edits {
        let e = e.borrow();
        if e.start < copied {
            return Err(Overlap(copied, e.start));
        }
        out.push_str(&original[copied..e.start]);
        out.push_str(&e.text);
        copied = e.end;
    }
    out.push_str(&original[copied..range.end]);
    Ok(out)
}

impl PartialOrd for Edit {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Edit {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.start, self.slot, self.end, &self.text).cmp(&(
            other.start,
            other.slot,
            other.end,
            &other.text,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closings_nest_inside_out_and_precede_openings() {
        let src = "ab";
        let edits = vec![
            Edit::insert(1, Slot::open(0, false), "<o0>"),
            Edit::insert(1, Slot::close(1, true), "<c1b>"),
            Edit::insert(1, Slot::close(0, false), "<c0>"),
            Edit::insert(1, Slot::close(1, false), "<c1>"),
            Edit::insert(1, Slot::open(1, false), "<o1>"),
            Edit::insert(1, Slot::open(0, true), "<o0b>"),
        ];
        assert_eq!(apply(src, edits).unwrap(), "a<c1><c1b><c0><o0><o0b><o1>b");
    }

    #[test]
    fn replacement_keeps_surrounding_text() {
        let edits = vec![
            Edit::replace(2..5, "X"),
            Edit::insert(5, Slot::close(0, false), ";"),
        ];
        assert_eq!(
            apply("a threadIdx b", vec![Edit::replace(2..11, "f()")]).unwrap(),
            "a f() b"
        );
        assert_eq!(apply("0123456", edits).unwrap(), "01X;56");
    }

    #[test]
    fn overlapping_replacements_are_refused() {
        let edits = vec![Edit::replace(0..3, "x"), Edit::replace(2..4, "y")];
        assert!(apply("abcdef", edits).is_err());
    }

    /// Many edits (applied in spans on all cores) give what one pass over the text gives.
    #[test]
    fn spans_give_the_text_one_pass_gives() {
        let text: String = (0..1_000_000)
            .map(|i| (b'a' + (i % 26) as u8) as char)
            .collect();
        let mut drawn = 0;
        let mut below = |n: u64| {
            drawn += 1;
            crate::rng::seed(7, 0, drawn) % n
        };
        let mut edits = Vec::new();
        let mut at = 0;
        while at + 10 < text.len() {
            at += below(12) as usize;
            match below(4) {
                0 => edits.push(Edit::replace(at..at + 3, "R")),
                1 => edits.push(Edit::insert(at, Slot::open(below(3) as usize, false), "(")),
                _ => edits.push(Edit::insert(at, Slot::close(below(3) as usize, false), ")")),
            }
            at += 3;
        }
        edits.extend(edits.clone().into_iter().step_by(5));
        assert!(edits.len() > 4 * EDITS_PER_SPAN);
        let mut sorted: Vec<&Edit> = edits.iter().collect();
        sorted.sort_by(|a, b| in_order(a, b));
        sorted.dedup();
        let one_pass = apply_span(&text, &sorted, 0..text.len()).unwrap();
        assert!(spans(&sorted, text.len()).len() > 3);
        assert_eq!(apply(&text, edits.iter().collect()).unwrap(), one_pass);
        assert_eq!(apply(&text, edits.clone()).unwrap(), one_pass);
        // An overlap far in is still found.
        edits.push(Edit::replace(900_000..900_100, "X"));
        assert!(apply(&text, edits).is_err());
    }
}

//! Edits as byte ranges over an unchanged original text (as in ast-grep and treereduce): the
//! rewriter never regenerates code from the tree, so comments, macros and layout survive.

use std::cmp::Ordering;

/// Where an insertion sits among others at the same byte: everything that closes a construct
/// (deepest first) precedes everything that opens one (shallowest first), and both precede a
/// replacement that starts there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
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

#[derive(Clone, Debug, PartialEq, Eq)]
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

/// Applies `edits` to `original`. Replacements must not overlap each other, and no insertion may
/// fall strictly inside a replaced range.
pub fn apply(original: &str, mut edits: Vec<Edit>) -> Result<String, Overlap> {
    edits.sort_by(|a, b| a.start.cmp(&b.start).then(a.slot.cmp(&b.slot)));
    edits.dedup();
    let extra: usize = edits.iter().map(|e| e.text.len()).sum();
    let mut out = String::with_capacity(original.len() + extra);
    let mut copied = 0;
    for e in &edits {
        if e.start < copied {
            return Err(Overlap(copied, e.start));
        }
        out.push_str(&original[copied..e.start]);
        out.push_str(&e.text);
        copied = e.end;
    }
    out.push_str(&original[copied..]);
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
}

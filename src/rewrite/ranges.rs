//! Byte ranges that nest or are disjoint (function bodies, unevaluated operands, syntax
//! errors), indexed once so that "which one holds this byte" costs a binary search and a walk
//! out through the ranges around it, not a scan of all of them.

use std::ops::Range;

pub struct Nested {
    /// Sorted by start, each range before the ranges inside it.
    ranges: Vec<Range<usize>>,
    /// The innermost range around each, by position in `ranges`.
    parent: Vec<Option<usize>>,
    /// The index each range had in the list it was built from.
    index: Vec<usize>,
    /// The inverse of `index`: each range's position in `ranges`, by its index in the list.
    position: Vec<usize>,
}

impl Nested {
    /// Indexes `ranges`, which must nest or be disjoint (tree-sitter nodes do).
    pub fn new(ranges: impl IntoIterator<Item = Range<usize>>) -> Nested {
        let mut all: Vec<(Range<usize>, usize)> = ranges
            .into_iter()
            .enumerate()
            .map(|(i, r)| (r, i))
            .collect();
        all.sort_by_key(|(r, _)| (r.start, std::cmp::Reverse(r.end)));
        let mut parent = Vec::with_capacity(all.len());
        let mut open: Vec<usize> = Vec::new();
        for (i, (r, _)) in all.iter().enumerate() {
            while open.last().is_some_and(|&o| all[o].0.end <= r.start) {
                open.pop();
            }
            parent.push(open.last().copied());
            open.push(i);
        }
        let (ranges, index): (Vec<_>, Vec<usize>) = all.into_iter().unzip();
        let mut position = vec![0; index.len()];
        for (p, &i) in index.iter().enumerate() {
            position[i] = p;
        }
        Nested {
            ranges,
            parent,
            index,
            position,
        }
    }

    /// The innermost range around range `i` (indices in the list the index was built from).
    pub fn parent(&self, i: usize) -> Option<usize> {
        self.parent[self.position[i]].map(|p| self.index[p])
    }

    /// The innermost range that holds all of `r` (an empty `r` is held where its start is),
    /// as its index in the list the index was built from.
    pub fn innermost(&self, r: Range<usize>) -> Option<usize> {
        let mut s = self
            .ranges
            .partition_point(|x| x.start <= r.start)
            .checked_sub(1)?;
        loop {
            let x = &self.ranges[s];
            if x.start <= r.start && r.end <= x.end && r.start < x.end.max(x.start + 1) {
                return Some(self.index[s]);
            }
            s = self.parent[s]?;
        }
    }

    /// Whether some range holds all of `r`.
    pub fn holds(&self, r: Range<usize>) -> bool {
        self.innermost(r).is_some()
    }

    /// Whether some range shares a byte with `r` (an empty `r` counts as its start byte).
    pub fn overlaps(&self, r: Range<usize>) -> bool {
        let end = r.end.max(r.start + 1);
        // Ranges starting before `end`; the one among them reaching furthest is an outermost
        // one, so checking the outermost ranges' ends is enough.
        let before = self.ranges.partition_point(|x| x.start < end);
        let Some(mut s) = before.checked_sub(1) else {
            return false;
        };
        while let Some(p) = self.parent[s] {
            s = p;
        }
        // `s` is the outermost range around the last one starting before `end`; outermost
        // ranges are disjoint and sorted, so it is the one that reaches furthest.
        self.ranges[s].end > r.start
    }
}

#[cfg(test)]
mod tests {
    use super::Nested;

    #[test]
    fn innermost_holding_range() {
        // 0: [0,100) holds 1: [10,20) and 2: [30,60), which holds 3: [40,50); 4: [200,210).
        let n = Nested::new([0..100, 10..20, 30..60, 40..50, 200..210]);
        assert_eq!(n.innermost(12..15), Some(1));
        assert_eq!(n.innermost(45..46), Some(3));
        assert_eq!(n.innermost(45..55), Some(2));
        assert_eq!(n.innermost(25..26), Some(0));
        assert_eq!(n.innermost(61..70), Some(0));
        assert_eq!(n.innermost(150..160), None);
        assert_eq!(n.innermost(205..205), Some(4));
        assert_eq!(n.innermost(90..150), None);
        assert!(!Nested::new([]).holds(0..1));
    }

    #[test]
    fn overlap_with_any_range() {
        let n = Nested::new([10..20, 12..14, 30..40]);
        assert!(n.overlaps(5..11));
        assert!(n.overlaps(19..25));
        assert!(!n.overlaps(20..30));
        assert!(n.overlaps(13..13));
        assert!(!n.overlaps(25..25));
        assert!(!n.overlaps(0..10));
        assert!(n.overlaps(0..100));
        assert!(!n.overlaps(40..50));
    }
}

//! What a thread has read of each other thread's writes: for load buffering across blocks. A
//! read that another block's write overwrites is ordered before it when the writing thread
//! learnt of the reader's progress through a message that both sides fenced. Happens-before in
//! the recorded run may order the pair through a later message only (the reader's thread went
//! on and released again before the writer wrote), while the reordering the fences are for
//! happens at the first: a work-stealing thief's slot read, then its claim, which the deque's
//! owner reads before it refills the slot (and its counters' atomics, which may reach the owner
//! earlier or later, do not decide that it refills). So such a pair races unless the message
//! of the reader thread's first write after the read that the writer's thread read was fenced
//! on both sides (`detect.rs`).

use foldhash::{HashMap, HashMapExt};
use std::collections::BTreeMap;

/// One thread's reads of other threads' writes: each write's first read, by the write's place.
#[derive(Default)]
pub struct Observed {
    by_thread: HashMap<u32, BTreeMap<u32, Seen>>,
}

/// A read of the write at `pos` of its thread, which had made `fences` device-scope fences
/// before it; the reading thread had made `acquires` acquiring fences (or barriers) before.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seen {
    pub pos: u32,
    pub fences: u32,
    pub acquires: u32,
}

impl Observed {
    pub fn new() -> Observed {
        Observed {
            by_thread: HashMap::new(),
        }
    }

    /// A read of thread `from`'s write (a write's first read is kept).
    pub fn note(&mut self, from: u32, seen: Seen) {
        self.by_thread
            .entry(from)
            .or_default()
            .entry(seen.pos)
            .or_insert(seen);
    }

    /// Whether this thread read `from`'s write at `pos` (or a write an atomic chain carried on).
    pub fn saw(&self, from: u32, pos: u32) -> bool {
        self.by_thread
            .get(&from)
            .is_some_and(|w| w.contains_key(&pos))
    }

    /// The read of `from`'s first write after its position `pos` of those this thread read.
    pub fn first_after(&self, from: u32, pos: u32) -> Option<Seen> {
        let writes = self.by_thread.get(&from)?;
        writes.range(pos + 1..).next().map(|(_, s)| *s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_read_of_the_earliest_later_write_is_found_whenever_it_was_read() {
        let mut o = Observed::new();
        let seen = |pos, fences, acquires| Seen {
            pos,
            fences,
            acquires,
        };
        o.note(7, seen(9, 1, 0)); // a later write read first
        o.note(7, seen(3, 0, 1));
        o.note(7, seen(3, 0, 2)); // read again: the first read stays
        assert_eq!(o.first_after(7, 1), Some(seen(3, 0, 1)));
        assert_eq!(o.first_after(7, 3), Some(seen(9, 1, 0)));
        assert_eq!(o.first_after(7, 9), None);
        assert_eq!(o.first_after(8, 0), None);
    }
}

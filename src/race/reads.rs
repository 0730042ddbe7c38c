//! An address's reads since its last write, as the detector keeps them (`detect.rs`): every
//! read, so that each meets every later write of its launch.

use super::scope::Scope;
use std::collections::HashMap;

/// One access as the detector keeps it at its address: its event, thread, block and launch, the
/// thread's clock and barrier count then, its strength, and where it stands in its thread.
#[derive(Clone, Copy)]
pub(super) struct Access {
    pub(super) event: u32,
    pub(super) thread: u32,
    pub(super) block: u32,
    pub(super) launch: u32,
    pub(super) clock: u32,
    pub(super) barriers: u32,
    pub(super) strong: Option<Scope>,
    /// Its place in its thread's history and the device-scope fences its thread made before.
    pub(super) pos: u32,
    pub(super) fences: u32,
}

/// An address's reads since its last write, one a thread, oldest first: the first inline, since
/// most addresses are read once and a vector each cost an allocation per address. A long list
/// (a flag every thread polls) finds a thread's read through an index, and a read that goes
/// leaves a hole until holes are half the list, so that a read costs the same at any length.
#[derive(Default)]
pub(super) struct Reads {
    first: Option<Access>,
    more: Vec<Access>,
    holes: usize,
    index: Option<HashMap<u32, usize>>,
}

/// A list this long is indexed by thread.
const INDEXED: usize = 32;
/// A read's place once it has gone.
const HOLE: u32 = u32::MAX;

impl Reads {
    pub(super) fn iter(&self) -> impl Iterator<Item = &Access> {
        self.first
            .iter()
            .chain(self.more.iter().filter(|r| r.thread != HOLE))
    }
    pub(super) fn len(&self) -> usize {
        usize::from(self.first.is_some()) + self.more.len() - self.holes
    }
    pub(super) fn clear(&mut self) {
        *self = Reads::default();
    }
    pub(super) fn push(&mut self, a: Access) {
        if self.first.is_none() && self.more.is_empty() {
            self.first = Some(a);
            return;
        }
        if let Some(index) = &mut self.index {
            index.insert(a.thread, self.more.len());
        }
        self.more.push(a);
        if self.index.is_none() && self.more.len() >= INDEXED {
            self.reindex();
        }
    }
    /// The oldest goes.
    pub(super) fn remove_oldest(&mut self) {
        if self.first.take().is_some() {
            return;
        }
        if let Some(i) = self.more.iter().position(|r| r.thread != HOLE) {
            self.remove_at(i);
        }
    }
    pub(super) fn retain_other_threads(&mut self, t: u32) {
        if self.first.is_some_and(|r| r.thread == t) {
            self.first = None;
            return; // one read a thread
        }
        let at = match &self.index {
            Some(index) => index.get(&t).copied(),
            None => self.more.iter().position(|r| r.thread == t),
        };
        if let Some(i) = at {
            self.remove_at(i);
        }
    }
    /// Drops the reads of launches other than `launch` (none of them races with its accesses);
    /// how many.
    pub(super) fn keep_launch(&mut self, launch: u32) -> u64 {
        let before = self.len();
        if self.first.is_some_and(|r| r.launch != launch) {
            self.first = None;
        }
        self.more.retain(|r| r.thread != HOLE && r.launch == launch);
        self.holes = 0;
        if self.index.is_some() {
            self.reindex();
        }
        (before - self.len()) as u64
    }
    pub(super) fn launch_differs(&self, launch: u32) -> bool {
        self.iter().next().is_some_and(|r| r.launch != launch)
    }
    fn remove_at(&mut self, i: usize) {
        if let Some(index) = &mut self.index {
            index.remove(&self.more[i].thread);
        }
        self.more[i].thread = HOLE;
        self.holes += 1;
        if self.holes * 2 > self.more.len() {
            self.more.retain(|r| r.thread != HOLE);
            self.holes = 0;
            if self.index.is_some() {
                self.reindex();
            }
        }
    }
    fn reindex(&mut self) {
        let index = self
            .more
            .iter()
            .enumerate()
            .filter(|(_, r)| r.thread != HOLE)
            .map(|(i, r)| (r.thread, i))
            .collect();
        self.index = Some(index);
    }
}

#[cfg(test)]
mod tests {
    use crate::race::detect::{Options, detect};
    use crate::race::trace::Trace;

    /// `readers` blocks read `x` (each `times` times, interleaved), then another block writes
    /// it with no synchronisation: every reader races with the write.
    fn many_readers(readers: usize, times: usize) -> Trace {
        let mut text = String::new();
        for _ in 0..times {
            for b in 0..readers {
                text += &format!("b{b}.t0 ld x 0 @1\n");
            }
        }
        text += &format!("b{readers}.t0 st x 1 @2\n");
        Trace::parse_text(&text).unwrap()
    }

    #[test]
    fn every_reader_of_an_address_meets_its_next_write() {
        // e1354e7 kept 16 reads an address: the other 24 readers' races went unchecked.
        let d = detect(&many_readers(40, 1), &Options::default());
        assert_eq!(d.stats.reads_not_checked, 0);
        let racing: u64 = d.pairs.values().map(|p| p.count).sum();
        assert_eq!(racing, 40);
    }

    #[test]
    fn a_long_list_keeps_one_read_a_thread_through_its_index_and_holes() {
        for (readers, times) in [(31, 3), (32, 2), (100, 5), (1000, 2)] {
            let d = detect(&many_readers(readers, times), &Options::default());
            let racing: u64 = d.pairs.values().map(|p| p.count).sum();
            assert_eq!(
                racing, readers as u64,
                "{readers} readers, {times} reads each"
            );
            assert_eq!(d.stats.reads_not_checked, 0);
        }
    }

    #[test]
    fn reads_of_an_earlier_launch_race_with_nothing_and_are_let_go() {
        // Launch 0's readers are ordered before launch 1 by the kernel boundary.
        let mut text = String::new();
        for b in 0..50 {
            text += &format!("k0.b{b}.t0 ld x 0 @1\n");
        }
        text += "k1.b0.t0 ld x 0 @1\nk1.b1.t0 st x 1 @2\n";
        let d = detect(&Trace::parse_text(&text).unwrap(), &Options::default());
        let racing: u64 = d.pairs.values().map(|p| p.count).sum();
        assert_eq!(racing, 1);
        assert_eq!(d.stats.reads_not_checked, 0);
    }

    #[test]
    fn a_bounded_list_counts_what_it_let_go() {
        let opts = Options {
            reads_per_address: 16,
            ..Options::default()
        };
        let d = detect(&many_readers(40, 1), &opts);
        assert_eq!(d.stats.reads_not_checked, 24);
    }
}

//! Store buffering, which no race shows: a thread stores to an address another block reads,
//! then loads a flag (a strong load) of another address that other blocks write, with no
//! device-scope fence, atomic or later strong store between. A work-stealing deque pops this way: the owner stores `tail =
//! t - 1`, then reads `head`, while a thief reads `head`, then `tail`; where both loads read
//! stale values, owner and thief take the same task. Only a fence between the store and the
//! load (`__threadfence`, a fence.sc) forbids that, and the two addresses' races are ordered by
//! no fence, so the race oracle's search cannot see that fence's need. These are the fence
//! sites of such stores, kept beside the search's set.

use super::detect::Detection;
use super::trace::{Op, Scope, Trace};
use crate::fences::id::Ids;
use foldhash::HashMap;

/// The blocks of a launch that read, or write, an address: the first, and whether others did.
#[derive(Clone, Copy)]
struct Blocks {
    first: (u32, u32),
    many: bool,
}

/// (launch, block) of a trace's thread.
type Block = (u32, u32);

/// Per address, the blocks that touched it.
#[derive(Default)]
struct ByAddress(HashMap<u64, Blocks>);

impl ByAddress {
    fn note(&mut self, addr: u64, block: Block) {
        let b = self.0.entry(addr).or_insert(Blocks {
            first: block,
            many: false,
        });
        b.many |= b.first != block;
    }

    /// Whether a block other than `block` touched `addr`.
    fn other_than(&self, addr: u64, block: Block) -> bool {
        self.0
            .get(&addr)
            .is_some_and(|b| b.many || b.first != block)
    }
}

/// The sites of stores that a strong load of another racing address follows, with no
/// device-scope fence, atomic or later strong store between, where other blocks read the
/// stored address and write the loaded one (`d`: a detection of `trace` without wmfix's fences).
pub fn fences(trace: &Trace, d: &Detection) -> Ids {
    let (mut readers, mut writers) = (ByAddress::default(), ByAddress::default());
    for e in &trace.events {
        if !e.op.is_access() || !d.addresses.contains(&e.addr) {
            continue;
        }
        let block = (e.thread.launch, e.thread.block);
        if !matches!(e.op, Op::Write { .. }) {
            readers.note(e.addr, block);
        }
        if !matches!(e.op, Op::Read { .. }) {
            writers.note(e.addr, block);
        }
    }
    let mut out = Ids::new();
    let mut open = Vec::new();
    for history in &d.prep.histories {
        open.clear();
        for &i in history {
            let e = &trace.events[i as usize];
            let block = (e.thread.launch, e.thread.block);
            match e.op {
                Op::Fence { scope } if scope >= Scope::Device => open.clear(),
                // A message sent after the stores (an unlock, a counter): readers order them
                // through it, which the race search sees.
                Op::Rmw { .. } => open.clear(),
                Op::Write { strong, .. } => {
                    // A flag store likewise, though it may itself pass a later load.
                    if strong.is_some() {
                        open.clear();
                    }
                    if let Some(site) = e.site
                        && readers.other_than(e.addr, block)
                    {
                        open.push((site, e.addr));
                    }
                }
                Op::Read {
                    strong: Some(_), ..
                } if writers.other_than(e.addr, block) => {
                    out.extend(open.iter().filter(|(_, x)| *x != e.addr).map(|(s, _)| *s));
                }
                _ => {}
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fences::id::FenceId;
    use crate::race::detect::{Options, detect};

    fn found(text: &str) -> Ids {
        let t = Trace::parse_text(text).unwrap();
        let d = detect(&t, &Options::default());
        fences(&t, &d)
    }

    #[test]
    fn a_deque_pop_keeps_the_fence_between_its_tail_store_and_its_head_load() {
        // The owner (block 0) pops: tail 2 -> 1 (site 6), then reads head (site 0) stale; a
        // thief (block 2) that read head after another thief's claim reads tail (site 12) stale.
        let pop = "b0.t0 st.volatile tail 1 @6\nb0.t0 ld.volatile head 0 @0\n";
        let thieves = "b1.t0 ld.volatile head 0 @0\nb1.t0 atom.device head 0 1 @15\n\
                       b2.t0 ld.volatile head 1 @0\nb2.t0 ld tail 2 @12\n";
        assert_eq!(found(&format!("{pop}{thieves}")), [FenceId(6)].into());
        // With a device fence between them, none.
        let fenced =
            "b0.t0 st.volatile tail 1 @6\nb0.t0 fence.device\nb0.t0 ld.volatile head 0 @0\n";
        assert!(found(&format!("{fenced}{thieves}")).is_empty());
    }

    #[test]
    fn message_passing_and_block_local_loads_need_no_store_load_fence() {
        // A writer stores data, then a flag: no load follows its store.
        assert!(found("b0.t0 st data 1 @1\nb0.t0 st.volatile flag 1 @0\nb1.t0 ld.volatile flag 1 @3\nb1.t0 ld data 1 @2\n").is_empty());
        // A lock's critical section: its stores, the unlock, then a failed try of the lock.
        assert!(found("b0.t0 st row 1 @11\nb0.t0 atom.device mutex 1 0 @2\nb0.t0 cas.fail.device mutex 1 @0\nb1.t0 atom.device mutex 0 1 @0\nb1.t0 ld row 1 @6\n").is_empty());
        // The load after the store is of an address only its own block writes.
        assert!(found("b0.t0 st x 1 @1\nb0.t0 ld.volatile y 0 @2\nb0.t1 st.volatile y 1 @3\nb1.t0 ld x 1 @4\n").is_empty());
    }
}

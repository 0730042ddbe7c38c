//! Addresses one thread alone touched in a launch: they cannot race, so the detector keeps no
//! shadow cell for them. In most traces these are nearly all (each thread's own inputs and
//! outputs), and a shadow cell costs far more than this table's eight bytes a slot.
//!
//! A slot per hash of (launch, address) holds the one thread that touched it, or "shared".
//! Two keys meeting in a slot make it shared unless one thread touched both: an address two
//! threads of a launch touched always lands in a shared slot, so a collision costs precision
//! (a private address checked anyway), never a missed race.

use super::trace::{Event, Thread};

const EMPTY: u64 = u64::MAX;
const SHARED: u64 = u64::MAX - 1;

pub struct Private {
    slots: Vec<u64>,
    shift: u32,
}

impl Private {
    pub fn of(events: &[Event]) -> Private {
        let accesses = events.iter().filter(|e| e.op.is_access()).count();
        let bits = (4 * accesses)
            .max(1024)
            .next_power_of_two()
            .trailing_zeros();
        let mut p = Private {
            slots: vec![EMPTY; 1 << bits],
            shift: 64 - bits,
        };
        for e in events.iter().filter(|e| e.op.is_access()) {
            let (slot, who) = (p.slot(e), who(&e.thread));
            let s = &mut p.slots[slot];
            if who >= SHARED {
                *s = SHARED;
            } else if *s == EMPTY {
                *s = who;
            } else if *s != who {
                *s = SHARED;
            }
        }
        p
    }

    /// Whether the access `e` is to an address no other thread of its launch touched.
    pub fn is_private(&self, e: &Event) -> bool {
        let who = who(&e.thread);
        who < SHARED && self.slots[self.slot(e)] == who
    }

    fn slot(&self, e: &Event) -> usize {
        // splitmix64's finaliser: a multiplication alone piles strided addresses into a few
        // slots.
        let mut x = e.addr ^ u64::from(e.thread.launch).rotate_left(40);
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((x ^ (x >> 31)) >> self.shift) as usize
    }
}

/// A thread within its launch; a key equal to a marker (block and thread near u32::MAX)
/// counts as shared.
fn who(t: &Thread) -> u64 {
    u64::from(t.block) << 32 | u64::from(t.thread)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::race::trace::Op;

    fn access(launch: u32, block: u32, thread: u32, addr: u64) -> Event {
        Event {
            thread: Thread {
                launch,
                block,
                thread,
            },
            op: Op::Read {
                strong: None,
                value: None,
            },
            addr,
            site: None,
        }
    }

    #[test]
    fn an_address_two_threads_of_a_launch_touch_is_never_private() {
        // Enough addresses that many share a slot: a collision may make a private address
        // look shared, never a shared one private.
        let mut events = Vec::new();
        for a in 0..20_000u64 {
            events.push(access(1, (a % 7) as u32, 0, 4 * a));
            if a % 3 == 0 {
                events.push(access(1, 9, 1, 4 * a));
            }
            // Another launch: the same address, by another thread alone.
            events.push(access(2, 5, 5, 4 * a));
        }
        let p = Private::of(&events);
        let mut private = 0;
        for e in &events {
            let shared_here = e.thread.launch == 1 && e.addr / 4 % 3 == 0;
            if shared_here {
                assert!(!p.is_private(e), "{e:?}");
            }
            private += usize::from(p.is_private(e));
        }
        // Most private accesses are seen as such (the table has four slots an access).
        assert!(private > 28_000, "{private} of 33,333 private accesses");
    }
}

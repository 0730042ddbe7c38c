//! Locks as a trace shows them: a thread holds lock `l` from its atomic that changed `l` from
//! 0 to another value until its own later write of 0 to `l` (a lock never released, a flag or
//! a counter, is none). A strong access under a lock and another thread's unordered one not
//! under it break the lock (`report.rs`: unordered strong accesses).

use super::detect::Detection;
use super::trace::{Op, Trace};

/// The locks (addresses) `e`'s thread holds at `e`.
pub fn held(trace: &Trace, d: &Detection, e: u32) -> Vec<u64> {
    let h = &d.prep.histories[d.prep.thread_of[e as usize] as usize];
    let p = d.prep.position[e as usize] as usize;
    let mut held = Vec::new();
    for &x in &h[..p] {
        let ev = &trace.events[x as usize];
        if takes(&ev.op) {
            held.push(ev.addr);
        } else if frees(&ev.op) {
            held.retain(|&l| l != ev.addr);
        }
    }
    let released = |l: u64| {
        h[p + 1..].iter().any(|&x| {
            let ev = &trace.events[x as usize];
            ev.addr == l && frees(&ev.op)
        })
    };
    held.retain(|&l| released(l));
    held
}

fn takes(op: &Op) -> bool {
    matches!(op, Op::Rmw { old: Some(0), new: Some(n), .. } if *n != 0)
}

fn frees(op: &Op) -> bool {
    matches!(
        op,
        Op::Rmw { new: Some(0), .. } | Op::Write { value: Some(0), .. }
    )
}

/// Whether one of `a` and `b` (of two threads) is under a lock the other does not hold,
/// other than the address they access.
pub fn breaks_a_lock(trace: &Trace, d: &Detection, a: u32, b: u32) -> bool {
    let addr = trace.events[a as usize].addr;
    let (ha, hb) = (held(trace, d, a), held(trace, d, b));
    ha.iter()
        .chain(&hb)
        .any(|l| *l != addr && ha.contains(l) != hb.contains(l))
}

/// Whether `b`, a read-modify-write that read the write `a`, takes a lock `a` released: `a`'s
/// thread took the word by an atomic that changed it before `a`, and `b` changes it too (a
/// lock of any values: Barnes-Hut locks a child pointer by a marker and unlocks it with the
/// new cell). A plain data word written and then read by an atomic is no lock.
pub fn hand_over(trace: &Trace, d: &Detection, a: u32, b: u32) -> bool {
    let addr = trace.events[a as usize].addr;
    let changes = |op: &Op| matches!(op, Op::Rmw { old: Some(o), new: Some(n), .. } if o != n);
    let h = &d.prep.histories[d.prep.thread_of[a as usize] as usize];
    let p = d.prep.position[a as usize] as usize;
    let took = h[..p].iter().any(|&x| {
        let ev = &trace.events[x as usize];
        ev.addr == addr && changes(&ev.op)
    });
    took && changes(&trace.events[b as usize].op)
}

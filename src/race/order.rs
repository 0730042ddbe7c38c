//! Reads-from and the order events are checked in. A thread takes its trace slot after its
//! access, so two atomics on one counter can be recorded in the other order than they hit it
//! (with hundreds of blocks taking tickets, often). Reads-from is therefore found over the
//! whole trace, by value, and events are checked in slot order except that a read waits
//! (with its thread's later events) for the write it read.

use super::trace::{Op, Thread, Trace};
use std::collections::{HashMap, VecDeque};

/// What each strong read with a known value read from: a write of that value to the address
/// (strong or weak, an atomic's new value), the latest recorded before it, else the first after
/// it from another thread. `None`: no write in the trace wrote it (an initial value).
pub fn reads_from(trace: &Trace) -> Vec<Option<u32>> {
    let mut writes: HashMap<(u64, u64), Vec<u32>> = HashMap::new();
    for (i, e) in trace.events.iter().enumerate() {
        let written = match e.op {
            Op::Write { value, .. } => value,
            Op::Rmw { new, .. } => new,
            _ => None,
        };
        if let Some(v) = written {
            writes.entry((e.addr, v)).or_default().push(i as u32);
        }
    }
    let mut rf = vec![None; trace.events.len()];
    for (i, e) in trace.events.iter().enumerate() {
        let read = match e.op {
            Op::Read {
                strong: Some(_),
                value,
            } => value,
            Op::Rmw { old, .. } => old,
            _ => None,
        };
        let Some(v) = read else { continue };
        let Some(cands) = writes.get(&(e.addr, v)) else {
            continue;
        };
        let i = i as u32;
        let at = cands.partition_point(|&w| w < i);
        rf[i as usize] = if at > 0 {
            Some(cands[at - 1])
        } else {
            cands[at..]
                .iter()
                .copied()
                .find(|&w| w != i && trace.events[w as usize].thread != e.thread)
        };
    }
    rf
}

/// The order to check events in: slot order, but a read recorded before the write it read
/// waits for it, and its thread's later events wait behind it. Events left waiting at the end
/// (reads-from that cannot be, found by value) follow in slot order; the count says how many.
pub fn causal(trace: &Trace, rf: &[Option<u32>]) -> (Vec<u32>, usize) {
    let n = trace.events.len();
    let mut order = Vec::with_capacity(n);
    let mut done = vec![false; n];
    let mut queued: HashMap<Thread, VecDeque<u32>> = HashMap::new();
    let mut waiting: HashMap<u32, Vec<Thread>> = HashMap::new();
    let blocker = |i: u32, done: &[bool]| rf[i as usize].filter(|&w| w != i && !done[w as usize]);
    // Checks j; the threads waiting for it may go on.
    let run = |j: u32,
               order: &mut Vec<u32>,
               done: &mut [bool],
               waiting: &mut HashMap<u32, Vec<Thread>>,
               drain: &mut Vec<Thread>| {
        order.push(j);
        done[j as usize] = true;
        drain.extend(waiting.remove(&j).unwrap_or_default());
    };
    let mut drain = Vec::new();
    for i in 0..n as u32 {
        let thread = trace.events[i as usize].thread;
        if let Some(q) = queued.get_mut(&thread) {
            q.push_back(i);
            continue;
        }
        if let Some(w) = blocker(i, &done) {
            queued.insert(thread, VecDeque::from([i]));
            waiting.entry(w).or_default().push(thread);
            continue;
        }
        run(i, &mut order, &mut done, &mut waiting, &mut drain);
        while let Some(t) = drain.pop() {
            // The thread's queue up to its next read of a write not yet checked.
            while let Some(&k) = queued.get(&t).and_then(|q| q.front()) {
                if let Some(w) = blocker(k, &done) {
                    waiting.entry(w).or_default().push(t);
                    break;
                }
                queued.get_mut(&t).expect("queued").pop_front();
                run(k, &mut order, &mut done, &mut waiting, &mut drain);
            }
            if queued.get(&t).is_some_and(VecDeque::is_empty) {
                queued.remove(&t);
            }
        }
    }
    let mut left: Vec<u32> = queued.into_values().flatten().collect();
    left.sort_unstable();
    let fallbacks = left.len();
    order.extend(left);
    (order, fallbacks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ticket_recorded_before_the_one_it_read_is_checked_after_it() {
        // Block 1's increment read 1, which block 0's increment wrote but recorded later.
        let t = Trace::parse_text(
            "b1.t0 atom.device c 1 2\nb1.t0 ld x\nb0.t0 atom.device c 0 1\nb2.t0 atom.device c 2 3\n",
        )
        .unwrap();
        let rf = reads_from(&t);
        assert_eq!(rf, vec![Some(2), None, None, Some(0)]);
        let (order, fallbacks) = causal(&t, &rf);
        assert_eq!(order, vec![2, 0, 1, 3]);
        assert_eq!(fallbacks, 0);
    }

    #[test]
    fn repeated_values_read_the_latest_write_recorded_before() {
        let t = Trace::parse_text(
            "b0.t0 st.volatile l 0\nb0.t0 atom.device l 0 1\nb0.t0 atom.device l 1 0\nb1.t0 atom.device l 0 1\n",
        )
        .unwrap();
        assert_eq!(reads_from(&t), vec![None, Some(0), Some(1), Some(2)]);
    }

    #[test]
    fn chains_of_late_writes_unwind_in_order_and_impossible_ones_fall_back() {
        // 2 read 4's write, 0 read 2's: both wait, then go in causal order.
        let t = Trace::parse_text(
            "b0.t0 atom.device c 2 3\nb9.t0 ld x\nb1.t0 atom.device c 1 2\nb3.t0 ld y\nb2.t0 atom.device c 0 1\n",
        )
        .unwrap();
        let rf = reads_from(&t);
        let (order, fallbacks) = causal(&t, &rf);
        assert_eq!(order, vec![1, 3, 4, 2, 0]);
        assert_eq!(fallbacks, 0);
        // Two threads each reading what the other writes later: neither can go first.
        let t = Trace::parse_text(
            "b0.t0 atom.device c 5 6\nb1.t0 atom.device d 7 8\nb0.t0 st.volatile d 7\nb1.t0 st.volatile c 5\n",
        )
        .unwrap();
        let rf = reads_from(&t);
        assert_eq!(rf, vec![Some(3), Some(2), None, None]);
        assert_eq!(causal(&t, &rf), (vec![0, 1, 2, 3], 4));
    }
}

//! Reads-from and the order events are checked in. A thread takes its trace slot after its
//! access, so two atomics on one counter can be recorded in the other order than they hit it
//! (with hundreds of blocks taking tickets, often). Reads-from is therefore found over the
//! whole trace, by value, and events are checked in slot order except that a read waits
//! (with its thread's later events) for the write it read, and a thread leaving a barrier
//! waits for every arrival of its block at that barrier.

use super::trace::{Op, Thread, Trace};
use foldhash::{HashMap, HashMapExt};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::collections::VecDeque;

/// What each strong read with a known value read from: a write of that value to the address
/// in the same launch (strong or weak, an atomic's new value), the latest recorded before it,
/// else the first after it from another thread; an atomic that changes the word skips writes
/// another such atomic read (no two read one write). `None`: no write of the launch wrote it
/// (an initial value, or one an earlier launch left, which the kernel boundary orders anyway).
pub fn reads_from(trace: &Trace) -> Vec<Option<u32>> {
    reads_from_but(trace, &Default::default())
}

/// `reads_from`, with the reads in `initial` reading what the word held before the launch.
fn reads_from_but(trace: &Trace, initial: &foldhash::HashSet<u32>) -> Vec<Option<u32>> {
    let mut writes: HashMap<(u32, u64, u64), Vec<u32>> = HashMap::new();
    for (i, e) in trace.events.iter().enumerate() {
        let written = match e.op {
            Op::Write { value, .. } => value,
            Op::Rmw { new, .. } => new,
            _ => None,
        };
        if let Some(v) = written {
            writes
                .entry((e.thread.launch, e.addr, v))
                .or_default()
                .push(i as u32);
        }
    }
    let mut rf = vec![None; trace.events.len()];
    // The writes an atomic read-modify-write has read: no other one reads them (it would have
    // read the first one's write instead). Claimed in slot order, nearest first.
    let mut claimed: foldhash::HashSet<u32> = Default::default();
    for (i, e) in trace.events.iter().enumerate() {
        // Only an atomic that changes the word claims (one that leaves it as it was, an
        // atomicAdd of 0, is read by the next as any write is).
        let (read, rmw) = match e.op {
            Op::Read {
                strong: Some(_),
                value,
            } => (value, false),
            Op::Rmw { old, new, .. } => (old, old != new),
            _ => (None, false),
        };
        let Some(v) = read else { continue };
        let Some(cands) = writes.get(&(e.thread.launch, e.addr, v)) else {
            continue;
        };
        let i = i as u32;
        if initial.contains(&i) {
            continue;
        }
        let free = |w: &u32| !rmw || !claimed.contains(w);
        let at = cands.partition_point(|&w| w < i);
        let before = cands[..at].iter().rev().copied().find(free);
        rf[i as usize] = before.or_else(|| {
            cands[at..]
                .iter()
                .copied()
                .filter(free)
                .find(|&w| w != i && trace.events[w as usize].thread != e.thread)
        });
        if let (true, Some(w)) = (rmw, rf[i as usize]) {
            claimed.insert(w);
        }
    }
    rmw_chains(trace, &mut rf);
    rf
}

/// Atomics on a word no plain write of the launch writes (a lock taken by compare-and-swap and
/// released by exchange, a ticket counter) are one modification order, each reading the one
/// before it: a chain through their old and new values. By value alone a lock's acquire could
/// read any release of 0, and picking a later holder's release left the real previous holder's
/// critical section unordered (false races). The chain starts at the value read once more than
/// written (else the earliest atomic's), and at each link takes, of the atomics that read the
/// current value and are next in their thread, the earliest recorded. A chain that gets stuck
/// keeps reads-from by value for the atomics it did not reach.
fn rmw_chains(trace: &Trace, rf: &mut [Option<u32>]) {
    let mut groups: HashMap<(u32, u64), Vec<u32>> = HashMap::new();
    let mut plain: std::collections::HashSet<(u32, u64)> = Default::default();
    for (i, e) in trace.events.iter().enumerate() {
        match e.op {
            Op::Rmw {
                old: Some(_),
                new: Some(_),
                ..
            } => groups
                .entry((e.thread.launch, e.addr))
                .or_default()
                .push(i as u32),
            Op::Write { value: Some(_), .. } | Op::Rmw { .. } => {
                plain.insert((e.thread.launch, e.addr));
            }
            _ => {}
        }
    }
    for (key, atomics) in groups {
        if !plain.contains(&key) && atomics.len() > 1 {
            chain(trace, &atomics, rf);
        }
    }
}

fn old_new(trace: &Trace, i: u32) -> (u64, u64) {
    match trace.events[i as usize].op {
        Op::Rmw {
            old: Some(o),
            new: Some(n),
            ..
        } => (o, n),
        _ => unreachable!("chains hold atomics with known values"),
    }
}

/// One word's atomics (in slot order) linked into a modification order where their values allow.
fn chain(trace: &Trace, atomics: &[u32], rf: &mut [Option<u32>]) {
    let mut balance: HashMap<u64, i64> = HashMap::new();
    let mut per_thread: HashMap<Thread, VecDeque<u32>> = HashMap::new();
    for &i in atomics {
        let (old, new) = old_new(trace, i);
        *balance.entry(old).or_default() += 1;
        *balance.entry(new).or_default() -= 1;
        per_thread
            .entry(trace.events[i as usize].thread)
            .or_default()
            .push_back(i);
    }
    let first = old_new(trace, atomics[0]).0;
    let mut cur = balance
        .iter()
        .filter(|&(_, &b)| b == 1)
        .map(|(&v, _)| v)
        .min()
        .unwrap_or(first);
    // Each thread's next atomic, by the value it read.
    let mut ready: HashMap<u64, std::collections::BTreeSet<u32>> = HashMap::new();
    for q in per_thread.values() {
        let &i = q.front().expect("a thread's queue is not empty");
        ready.entry(old_new(trace, i).0).or_default().insert(i);
    }
    let start = cur;
    let mut seq: Vec<u32> = Vec::with_capacity(atomics.len());
    while let Some(i) = ready.get_mut(&cur).and_then(|s| s.pop_first()) {
        seq.push(i);
        cur = old_new(trace, i).1;
        let q = per_thread
            .get_mut(&trace.events[i as usize].thread)
            .expect("queued");
        q.pop_front();
        if let Some(&next) = q.front() {
            ready
                .entry(old_new(trace, next).0)
                .or_default()
                .insert(next);
        }
    }
    if seq.len() == atomics.len() && cur == start {
        let cut = circuit_start(trace, &seq);
        seq.rotate_left(cut);
    }
    let mut prev = None;
    for &i in &seq {
        rf[i as usize] = prev;
        prev = Some(i);
    }
}

/// Where a chain that ends at the value it began with (a ticket counter that wraps to 0) really
/// began: values alone cannot say, so at the link recorded most out of order (the wrap, recorded
/// late, before the first ticket, recorded early), among the links no thread's atomics straddle.
fn circuit_start(trace: &Trace, seq: &[u32]) -> usize {
    let n = seq.len();
    let mut span: HashMap<Thread, (usize, usize)> = HashMap::new();
    for (k, &i) in seq.iter().enumerate() {
        let e = span
            .entry(trace.events[i as usize].thread)
            .or_insert((k, k));
        e.1 = k;
    }
    // A cut at c is blocked when some thread has atomics before c and at or after it.
    let mut depth = vec![0i32; n + 1];
    for &(first, last) in span.values() {
        depth[first + 1] += 1;
        depth[last + 1] -= 1;
    }
    let mut open = 0;
    let mut best = (0, i64::MAX);
    for c in 0..n {
        open += depth[c];
        if open > 0 {
            continue;
        }
        let jump = seq[c] as i64 - seq[(c + n - 1) % n] as i64;
        if jump < best.1 {
            best = (c, jump);
        }
    }
    best.0
}

/// What an event waits for before it is checked.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Dep {
    /// The write it read.
    Write(u32),
    /// Every arrival at a barrier of its block (it is its thread's first event after it).
    Barrier(u32),
}

/// Barriers by (launch, block, generation): each arrival's barrier, each thread's first event
/// after one, and how many arrivals each barrier has in the trace.
struct Barriers {
    arrival: Vec<Option<u32>>,
    after: Vec<Option<u32>>,
    expected: Vec<u32>,
}

fn barriers(trace: &Trace) -> Barriers {
    let n = trace.events.len();
    let mut b = Barriers {
        arrival: vec![None; n],
        after: vec![None; n],
        expected: Vec::new(),
    };
    let mut ids: HashMap<(u32, u32, u32), u32> = HashMap::new();
    let mut per_thread: HashMap<Thread, (u32, Option<u32>)> = HashMap::new();
    for (i, e) in trace.events.iter().enumerate() {
        let (passed, left) = per_thread.entry(e.thread).or_default();
        b.after[i] = left.take();
        if e.op == Op::Barrier {
            let next = ids.len() as u32;
            let key = (e.thread.launch, e.thread.block, *passed);
            let id = *ids.entry(key).or_insert(next);
            if id as usize == b.expected.len() {
                b.expected.push(0);
            }
            b.expected[id as usize] += 1;
            b.arrival[i] = Some(id);
            *passed += 1;
            *left = Some(id);
        }
    }
    b
}

/// Reads-from and the check order together. An atomic whose source is recorded after it and
/// that still waits when its launch ends is in a circle of waits (the earliest waiting event of
/// a circle always reads forward): no write of the launch can be its source, so it read what
/// the word held before (a lock's first acquire of 0, whose releases of 0 all come later). It
/// is given no source, which frees the write it had claimed for another atomic, and the order
/// is found again, so that the launch is checked in causal order rather than with those
/// threads pushed to its end. Waits still broken after that (plain strong reads among them:
/// left as they were) are counted.
pub fn settle(trace: &Trace) -> (Vec<Option<u32>>, Vec<u32>, usize) {
    let bars = barriers(trace);
    let mut initial = foldhash::HashSet::default();
    let mut rf = reads_from(trace);
    for round in 0..=SETTLE_ROUNDS {
        let (order, forced) = schedule(trace, &rf, &bars);
        let first = circle_atomics(trace, &forced);
        if first.is_empty() || round == SETTLE_ROUNDS {
            return (rf, order, forced.len());
        }
        initial.extend(first);
        rf = reads_from_but(trace, &initial);
    }
    unreachable!("the last round returns")
}

/// Of the atomics forced on with a source recorded after them, a word's earliest (the write it
/// took may be a later one's source), of those whose source was not itself forced on (a read
/// of a write recorded late that waited behind the circle, not in it).
fn circle_atomics(trace: &Trace, forced: &[(u32, Option<Dep>)]) -> Vec<u32> {
    let stuck: foldhash::HashSet<u32> = forced.iter().map(|&(k, _)| k).collect();
    let mut first: HashMap<(u32, u64), u32> = HashMap::new();
    for &(k, dep) in forced {
        if let Some(Dep::Write(w)) = dep
            && w > k
            && !stuck.contains(&w)
            && matches!(trace.events[k as usize].op, Op::Rmw { .. })
        {
            let e = &trace.events[k as usize];
            let f = first.entry((e.thread.launch, e.addr)).or_insert(k);
            *f = (*f).min(k);
        }
    }
    first.into_values().collect()
}

/// Rounds of `settle`: each gives one read a word no source; a lock's holders need one or two.
const SETTLE_ROUNDS: usize = 8;

/// The order to check events in: slot order, but a read recorded before the write it read
/// waits for it, a thread leaving a barrier waits for the block's other arrivals, and a
/// thread's later events wait behind its waiting one. Waits that cannot end (reads-from found
/// by value in a circle: a counter's first reader of 0 and its wrap to 0) are broken, earliest
/// event first, when the launch ends: launches stay in order. Returns the order and the events
/// checked without their wait (with what they waited for).
fn schedule<'a>(
    trace: &'a Trace,
    rf: &'a [Option<u32>],
    bars: &'a Barriers,
) -> (Vec<u32>, Vec<(u32, Option<Dep>)>) {
    let n = trace.events.len();
    let mut s = Schedule {
        rf,
        arrived: vec![0; bars.expected.len()],
        bars,
        order: Vec::with_capacity(n),
        done: vec![false; n],
        forced: vec![false; n],
        broken: Vec::new(),
        queued: HashMap::new(),
        waiting: HashMap::new(),
        waits_on: HashMap::new(),
        fronts: BinaryHeap::new(),
        drain: Vec::new(),
        events: &trace.events,
    };
    let mut launch = None;
    for i in 0..n as u32 {
        let thread = trace.events[i as usize].thread;
        if launch.is_some_and(|l| l != thread.launch) {
            s.flush();
        }
        launch = Some(thread.launch);
        if let Some(q) = s.queued.get_mut(&thread) {
            q.push_back(i);
            continue;
        }
        if let Some(dep) = s.blocker(i) {
            s.queued.insert(thread, VecDeque::from([i]));
            s.wait(thread, i, dep);
            continue;
        }
        s.run(i);
        s.drain();
    }
    s.flush();
    (s.order, s.broken)
}

struct Schedule<'a> {
    rf: &'a [Option<u32>],
    bars: &'a Barriers,
    arrived: Vec<u32>,
    order: Vec<u32>,
    done: Vec<bool>,
    /// Events checked without waiting any longer (`flush`).
    forced: Vec<bool>,
    broken: Vec<(u32, Option<Dep>)>,
    queued: HashMap<Thread, VecDeque<u32>>,
    /// The threads waiting for each dependency; an entry counts only while `waits_on` agrees
    /// (a thread forced on by `flush` leaves stale entries behind).
    waiting: HashMap<Dep, Vec<Thread>>,
    waits_on: HashMap<Thread, Dep>,
    /// The waiting threads' first queued events, earliest first (stale ones skipped).
    fronts: BinaryHeap<Reverse<u32>>,
    /// Threads whose wait is over.
    drain: Vec<Thread>,
    events: &'a [crate::race::trace::Event],
}

impl Schedule<'_> {
    fn blocker(&self, i: u32) -> Option<Dep> {
        if self.forced[i as usize] {
            return None;
        }
        if let Some(w) = self.rf[i as usize].filter(|&w| w != i && !self.done[w as usize]) {
            return Some(Dep::Write(w));
        }
        self.bars.after[i as usize]
            .filter(|&b| self.arrived[b as usize] < self.bars.expected[b as usize])
            .map(Dep::Barrier)
    }

    /// Thread `t`, its first queued event `k`, waits for `dep`.
    fn wait(&mut self, t: Thread, k: u32, dep: Dep) {
        self.waiting.entry(dep).or_default().push(t);
        self.waits_on.insert(t, dep);
        self.fronts.push(Reverse(k));
    }

    /// Checks j; the threads waiting for it may go on.
    fn run(&mut self, j: u32) {
        self.order.push(j);
        self.done[j as usize] = true;
        self.release(Dep::Write(j));
        if let Some(b) = self.bars.arrival[j as usize] {
            self.arrived[b as usize] += 1;
            if self.arrived[b as usize] == self.bars.expected[b as usize] {
                self.release(Dep::Barrier(b));
            }
        }
    }

    fn release(&mut self, dep: Dep) {
        for t in self.waiting.remove(&dep).unwrap_or_default() {
            if self.waits_on.get(&t) == Some(&dep) {
                self.waits_on.remove(&t);
                self.drain.push(t);
            }
        }
    }

    fn drain(&mut self) {
        while let Some(t) = self.drain.pop() {
            self.go_on(t);
        }
    }

    /// Every waiting event checked: the earliest one first, without its wait.
    fn flush(&mut self) {
        while let Some(Reverse(k)) = self.fronts.pop() {
            let t = self.events[k as usize].thread;
            if self.queued.get(&t).and_then(|q| q.front()) != Some(&k) {
                continue; // stale: that event went on since
            }
            self.forced[k as usize] = true;
            let dep = self.waits_on.remove(&t);
            self.broken.push((k, dep));
            self.go_on(t);
            self.drain();
        }
        self.waiting.clear();
        self.waits_on.clear();
    }

    /// A thread's queue up to its next event that must wait.
    fn go_on(&mut self, t: Thread) {
        while let Some(&k) = self.queued.get(&t).and_then(|q| q.front()) {
            if let Some(dep) = self.blocker(k) {
                self.wait(t, k, dep);
                return;
            }
            self.queued.get_mut(&t).expect("queued").pop_front();
            self.run(k);
        }
        self.queued.remove(&t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The check order for `rf`, and how many waits broke.
    fn causal(trace: &Trace, rf: &[Option<u32>]) -> (Vec<u32>, usize) {
        let (order, forced) = schedule(trace, rf, &barriers(trace));
        (order, forced.len())
    }

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
        // The earliest waiting event goes first without its wait, and the rest unwinds.
        assert_eq!(causal(&t, &rf), (vec![0, 2, 1, 3], 1));
    }
}

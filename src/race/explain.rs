//! Which fences would order a racing pair. The later access's thread read (strongly) something
//! the earlier one's thread wrote after its access: a message that did not synchronise. The
//! writer side lacks a fence between its access and that write, the reader side one between
//! that read and its access (or the fences there are of block scope where the threads are in
//! different blocks). Enabling an instrumented fence site in the range orders the pair.

use super::detect::{Detection, Model, ORIGINS_KEPT};
use super::locks;
use super::trace::{Op, Scope, Trace};
use crate::fences::id::FenceId;

/// A side of the message that needs a fence: the sites that would serve, in program order.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Side {
    pub sites: Vec<FenceId>,
    /// A fence is there, but of block scope where the threads are in different blocks.
    pub block_scope_fence: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "how")]
pub enum Explanation {
    /// The later thread read, at `read`, a value written at `write` after the earlier access:
    /// `writer`/`reader` are the sides that need a fence (`None`: that side is ordered).
    Message {
        write: u32,
        read: u32,
        writer: Option<Side>,
        reader: Option<Side>,
        /// Where the message went through a third thread (it read the write, then wrote what
        /// the later thread read; `read` is then the later thread's): its side between the two,
        /// where it needs a fence.
        #[serde(skip_serializing_if = "Option::is_none")]
        relay: Option<Side>,
    },
    /// No strong read of the later thread saw a write made after the earlier access: no fence
    /// orders them (a barrier, an atomic or a lock is missing, or the accesses are unrelated).
    NoMessage,
}

impl Explanation {
    /// The site a patch would take on each side: the writer's last before its write (it
    /// orders every earlier access), the reader's first after its read.
    pub fn suggested(&self) -> Vec<FenceId> {
        match self {
            Explanation::Message {
                writer,
                reader,
                relay,
                ..
            } => {
                let w = writer.as_ref().and_then(|s| s.sites.last().copied());
                let m = relay.as_ref().and_then(|s| s.sites.first().copied());
                let r = reader.as_ref().and_then(|s| s.sites.first().copied());
                w.into_iter().chain(m).chain(r).collect()
            }
            Explanation::NoMessage => Vec::new(),
        }
    }
}

/// Release sequences are followed back this far through other threads' atomics.
const CHAIN_LIMIT: usize = 1 << 16;

pub fn explain(trace: &Trace, d: &Detection, earlier: u32, later: u32) -> Explanation {
    if let Some((write, read)) = first_message(trace, d, earlier, later) {
        return message(&Source::new(trace, d, earlier), write, read, later);
    }
    let source = Source::new(trace, d, earlier);
    let t = d.prep.thread_of[later as usize];
    let tp = d.prep.position[later as usize] as usize;
    let mut mates: Option<Vec<Mate>> = None;
    let mut barriers = d.prep.histories[t as usize][..tp]
        .iter()
        .filter(|&&e| trace.events[e as usize].op == Op::Barrier)
        .count();
    for &r in d.prep.histories[t as usize][..tp].iter().rev() {
        if trace.events[r as usize].op == Op::Barrier {
            // What the block's other threads read before this barrier reached this thread
            // through it (the last block's thread 0 takes the ticket, all threads read).
            barriers -= 1;
            let mates = mates.get_or_insert_with(|| block_mates(trace, d, t));
            for m in mates.iter() {
                for &r in m.before(barriers).iter().rev() {
                    if let Some(s) = source.of(r) {
                        let writer = writer_side(&source, later, s);
                        return Explanation::Message {
                            write: s,
                            read: r,
                            writer,
                            reader: None,
                            relay: None,
                        };
                    }
                }
            }
            continue;
        }
        if let Some(s) = source.of(r) {
            return message(&source, s, r, later);
        }
    }
    relayed(&source, later).unwrap_or(Explanation::NoMessage)
}

/// A read of another block overwritten by the later write: the message of the reader thread's
/// first write after the read that the writer's thread read (`observed.rs`), where its fences
/// go.
fn first_message(trace: &Trace, d: &Detection, earlier: u32, later: u32) -> Option<(u32, u32)> {
    let (a, b) = (
        &trace.events[earlier as usize],
        &trace.events[later as usize],
    );
    let read_then_write = matches!(a.op, Op::Read { .. }) && matches!(b.op, Op::Write { .. });
    if !read_then_write || a.thread.block == b.thread.block {
        return None;
    }
    let (w, wp) = (
        d.prep.thread_of[earlier as usize],
        d.prep.position[earlier as usize],
    );
    let t = d.prep.thread_of[later as usize] as usize;
    let tp = d.prep.position[later as usize] as usize;
    let mut best: Option<(u32, u32)> = None;
    for &r in &d.prep.histories[t][..tp] {
        let mut from = d.prep.read_from[r as usize];
        let mut reader = r;
        for _ in 0..ORIGINS_KEPT {
            let Some(s) = from else { break };
            if !strong_together(trace, reader, s) {
                break;
            }
            let earlier_write =
                |(b, _): (u32, u32)| d.prep.position[s as usize] < d.prep.position[b as usize];
            if d.prep.thread_of[s as usize] == w
                && d.prep.position[s as usize] > wp
                && best.is_none_or(earlier_write)
            {
                best = Some((s, r));
            }
            if !matches!(trace.events[s as usize].op, Op::Rmw { .. }) {
                break;
            }
            reader = s;
            from = d.prep.read_from[s as usize];
        }
    }
    best
}

/// Whether a read and the write it read are strong with scopes covering both threads: else
/// no message passed between them (block-scope atomics of two blocks), whatever fences.
fn strong_together(trace: &Trace, read: u32, write: u32) -> bool {
    let (r, w) = (&trace.events[read as usize], &trace.events[write as usize]);
    match (r.op.strong(), w.op.strong()) {
        (Some(a), Some(b)) => {
            r.thread.block == w.thread.block || (a >= Scope::Device && b >= Scope::Device)
        }
        _ => false,
    }
}

/// The earlier access of a pair, and where a message from it may start: a write of its thread
/// after it, or of another thread of its block after the barrier that follows it there (the
/// block's thread 0 releases a lock for all of them). Barrier positions of the block's other
/// threads are found once each.
struct Source<'a> {
    trace: &'a Trace,
    d: &'a Detection,
    earlier: u32,
    /// Barriers of the earlier thread before its access.
    barriers_before: usize,
    mates: std::cell::RefCell<std::collections::HashMap<u32, Vec<u32>>>,
}

impl<'a> Source<'a> {
    fn new(trace: &'a Trace, d: &'a Detection, earlier: u32) -> Source<'a> {
        let (w, wp) = (
            d.prep.thread_of[earlier as usize] as usize,
            d.prep.position[earlier as usize] as usize,
        );
        let barriers_before = d.prep.histories[w][..wp]
            .iter()
            .filter(|&&e| trace.events[e as usize].op == Op::Barrier)
            .count();
        Source {
            trace,
            d,
            earlier,
            barriers_before,
            mates: Default::default(),
        }
    }

    /// The write after the earlier access that `r` read, through atomics' release sequences.
    fn of(&self, r: u32) -> Option<u32> {
        let (trace, d) = (self.trace, self.d);
        let mut from = d.prep.read_from[r as usize];
        let mut steps = 0;
        let mut reader = r;
        while let Some(s) = from {
            if !strong_together(trace, reader, s) {
                return None;
            }
            if self.start(s).is_some() {
                return Some(s);
            }
            let via_atomic = matches!(trace.events[s as usize].op, Op::Rmw { .. });
            steps += 1;
            if !via_atomic || steps > CHAIN_LIMIT {
                return None;
            }
            reader = s;
            from = d.prep.read_from[s as usize];
        }
        None
    }

    /// Where the writer side of a message through `s` starts: the earlier access, where `s`
    /// is its thread's; the barrier `s`'s thread passed after it, where `s` is a block mate's.
    fn start(&self, s: u32) -> Option<u32> {
        let d = self.d;
        let (w, wp) = (
            d.prep.thread_of[self.earlier as usize],
            d.prep.position[self.earlier as usize],
        );
        let m = d.prep.thread_of[s as usize];
        if m == w {
            return (d.prep.position[s as usize] > wp).then_some(self.earlier);
        }
        let (a, b) = (
            self.trace.events[self.earlier as usize].thread,
            self.trace.events[s as usize].thread,
        );
        if (a.launch, a.block) != (b.launch, b.block) {
            return None;
        }
        let mut mates = self.mates.borrow_mut();
        let barriers = mates.entry(m).or_insert_with(|| {
            d.prep.histories[m as usize]
                .iter()
                .copied()
                .filter(|&e| self.trace.events[e as usize].op == Op::Barrier)
                .collect()
        });
        let barrier = *barriers.get(self.barriers_before)?;
        (d.prep.position[s as usize] > d.prep.position[barrier as usize]).then_some(barrier)
    }
}

/// Whether the later write `b`, a read-modify-write, read `a` and synchronised with it (a
/// lock taken from the store that released it): ordered by the value it waited for, though
/// happens-before orders only what follows its acquire. Released: a fence of a scope covering
/// both threads before `a` (under scoped-hrf also `a` an atomic); acquired: such a fence
/// after `b` (under scoped-hrf `b` itself). Only a lock's hand-over (`locks::hand_over`): a
/// read-modify-write of data reading the write it conflicts with is the unordered pair itself,
/// whichever fences surround it.
pub fn took_in_order(trace: &Trace, d: &Detection, a: u32, b: u32) -> bool {
    if d.prep.read_from[b as usize] != Some(a) || !locks::hand_over(trace, d, a, b) {
        return false;
    }
    let hrf = d.model == Model::ScopedHrf;
    let needed = needed(trace, a, b);
    let released = (hrf && matches!(trace.events[a as usize].op, Op::Rmw { .. }))
        || fence_beside(trace, d, a, needed, true);
    released && (hrf || fence_beside(trace, d, b, needed, false))
}

/// Whether `e`'s thread makes a fence of at least `needed` scope before (or after) it.
fn fence_beside(trace: &Trace, d: &Detection, e: u32, needed: Scope, before: bool) -> bool {
    let h = &d.prep.histories[d.prep.thread_of[e as usize] as usize];
    let p = d.prep.position[e as usize] as usize;
    let range = if before { &h[..p] } else { &h[p + 1..] };
    range
        .iter()
        .any(|&x| matches!(trace.events[x as usize].op, Op::Fence { scope } if scope >= needed))
}

/// Another thread of the later access's block: its history cut at its barriers.
struct Mate<'d> {
    history: &'d [u32],
    barriers: Vec<usize>,
}

impl Mate<'_> {
    /// Its events between its barrier `k - 1` and barrier `k` (0-based), the k-th's generation.
    fn before(&self, k: usize) -> &[u32] {
        let Some(&end) = self.barriers.get(k) else {
            return &[];
        };
        let start = if k == 0 { 0 } else { self.barriers[k - 1] + 1 };
        &self.history[start..end]
    }
}

fn block_mates<'d>(trace: &Trace, d: &'d Detection, t: u32) -> Vec<Mate<'d>> {
    let thread_at = |u: usize| trace.events[d.prep.histories[u][0] as usize].thread;
    let me = thread_at(t as usize);
    (0..d.prep.histories.len())
        .filter(|&u| u != t as usize && !d.prep.histories[u].is_empty())
        .filter(|&u| {
            let o = thread_at(u);
            o.launch == me.launch && o.block == me.block
        })
        .map(|u| {
            let history = &d.prep.histories[u][..];
            let barriers = (0..history.len())
                .filter(|&k| trace.events[history[k] as usize].op == Op::Barrier)
                .collect();
            Mate { history, barriers }
        })
        .collect()
}

fn message(source: &Source, write: u32, read: u32, later: u32) -> Explanation {
    let (trace, d, earlier) = (source.trace, source.d, source.earlier);
    let writer = writer_side(source, later, write);
    let reader = side(trace, d, read, later, needed(trace, earlier, later), true);
    Explanation::Message {
        write,
        read,
        writer,
        reader,
        relay: None,
    }
}

/// Threads of the later one's reads looked at for a relay, and events of a relay's history
/// looked back through: explaining stays cheap on long traces.
const RELAY_LIMIT: usize = 4096;

/// A message through a third thread: the later thread read (at `r`) a write `s` of a relay
/// thread made after the relay read (at `r2`) a write of the earlier thread made after its
/// access. Each side needs a fence of the scope its own two threads need.
fn relayed(source: &Source, later: u32) -> Option<Explanation> {
    let (trace, d, earlier) = (source.trace, source.d, source.earlier);
    let t = d.prep.thread_of[later as usize];
    let e = d.prep.thread_of[earlier as usize];
    let tp = d.prep.position[later as usize] as usize;
    let mut tried = Vec::new();
    for &r in d.prep.histories[t as usize][..tp]
        .iter()
        .rev()
        .take(RELAY_LIMIT)
    {
        let Some(s) = d.prep.read_from[r as usize] else {
            continue;
        };
        let m = d.prep.thread_of[s as usize];
        if m == e || m == t || tried.contains(&m) || !strong_together(trace, r, s) {
            continue;
        }
        tried.push(m);
        let mp = d.prep.position[s as usize] as usize;
        let before = d.prep.histories[m as usize][..mp]
            .iter()
            .rev()
            .take(RELAY_LIMIT);
        for &r2 in before {
            if let Some(s2) = source.of(r2) {
                let (first, second) = (needed(trace, earlier, r2), needed(trace, s, later));
                let from = source
                    .start(s2)
                    .expect("a message's source starts somewhere");
                return Some(Explanation::Message {
                    write: s2,
                    read: r,
                    writer: side(trace, d, from, s2, first, false),
                    reader: side(trace, d, r, later, second, true),
                    relay: side(trace, d, r2, s, first.max(second), false),
                });
            }
        }
    }
    None
}

/// Device scope between blocks, block scope within one.
fn needed(trace: &Trace, earlier: u32, later: u32) -> Scope {
    let (a, b) = (
        &trace.events[earlier as usize],
        &trace.events[later as usize],
    );
    if a.thread.block != b.thread.block {
        Scope::Device
    } else {
        Scope::Block
    }
}

fn writer_side(source: &Source, later: u32, write: u32) -> Option<Side> {
    let (trace, earlier) = (source.trace, source.earlier);
    let from = source
        .start(write)
        .expect("a message's source starts somewhere");
    side(
        trace,
        source.d,
        from,
        write,
        needed(trace, earlier, later),
        false,
    )
}

/// The events of one thread from `from` (inclusive) to `to` (exclusive): `None` when a fence of
/// the needed scope (on the reader side also a barrier, see detect.rs) orders them.
fn side(
    trace: &Trace,
    d: &Detection,
    from: u32,
    to: u32,
    needed: Scope,
    reader: bool,
) -> Option<Side> {
    let t = d.prep.thread_of[from as usize] as usize;
    let (a, b) = (
        d.prep.position[from as usize] as usize,
        d.prep.position[to as usize] as usize,
    );
    let mut sites = Vec::new();
    let mut block_scope_fence = false;
    for &e in &d.prep.histories[t][a..b] {
        let ev = &trace.events[e as usize];
        match ev.op {
            Op::Fence { scope } if scope >= needed => return None,
            Op::Fence { .. } => block_scope_fence = true,
            Op::Barrier if reader || needed == Scope::Block => return None,
            _ => {}
        }
        if let Some(s) = ev.site.filter(|_| ev.op.at_site())
            && !sites.contains(&s)
        {
            sites.push(s);
        }
    }
    Some(Side {
        sites,
        block_scope_fence,
    })
}

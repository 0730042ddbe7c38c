//! Happens-before race detection over one trace, after the PTX memory model: vector clocks
//! (`clock.rs`) carried by release patterns (a fence, then a strong write), acquire patterns (a
//! strong read of that write or of a later atomic in its release sequence, then a fence),
//! `__syncthreads` (the block's threads), and kernel boundaries. Two accesses to one address
//! from different threads race when at least one writes, they are not both strong with scopes
//! covering both threads, and neither happens before the other. Under `Model::ScopedHrf` an
//! atomic read-modify-write is also an acquire and a release at its scope.
//!
//! One relaxation, counted in the statistics: a `__syncthreads` after a strong read completes
//! its acquire at the read's scope (`barrier_acquires`), as NVIDIA's threadFenceReduction
//! relies on (its last block reads the partial sums after a barrier, with no fence); PTX
//! itself orders that read only for the block.
//!
//! Reads-from is found by value, and events are checked in slot order but for reads recorded
//! before the write they read (`order.rs`).

use super::clock::Clock;
use super::observed::{Observed, Seen};
use super::private::Private;
use super::reads::{Access, Reads};
use super::trace::{Event, Op, Scope, Trace};
use crate::fences::id::{FenceId, Ids};
use foldhash::{HashMap, HashMapExt};
use std::rc::Rc;
use std::sync::Arc;

/// The memory model a trace is checked under.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum Model {
    /// PTX: only fences make release and acquire patterns; atomics are relaxed.
    #[default]
    Ptx,
    /// Scoped heterogeneous-race-free: an atomic read-modify-write also acquires what it
    /// reads and releases at its scope; volatile accesses stay relaxed.
    ScopedHrf,
}

impl Model {
    pub fn name(self) -> &'static str {
        match self {
            Model::Ptx => "ptx",
            Model::ScopedHrf => "scoped-hrf",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Options {
    pub model: Model,
    /// Fence sites taken as enabled: a fence of `fence_scope` right after each of their accesses
    /// (what enabling them would order, on this trace).
    pub fences: Ids,
    pub fence_scope: Scope,
    pub barrier_acquires: bool,
    /// Reads kept per address since its last write (one a thread; older ones are counted as not
    /// checked): all of them by default, so that every read meets every later write.
    pub reads_per_address: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            model: Model::Ptx,
            fences: Ids::new(),
            fence_scope: Scope::Device,
            barrier_acquires: true,
            reads_per_address: usize::MAX,
        }
    }
}

/// Which access came first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RaceKind {
    WriteRead,
    WriteWrite,
    ReadWrite,
}

impl RaceKind {
    pub fn name(self) -> &'static str {
        match self {
            RaceKind::WriteRead => "write-read",
            RaceKind::WriteWrite => "write-write",
            RaceKind::ReadWrite => "read-write",
        }
    }
}

/// Races of one pair of places: the sites of the earlier and the later access.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PairKey {
    pub first: Option<FenceId>,
    pub second: Option<FenceId>,
    pub kind: RaceKind,
}

#[derive(Clone, Debug, Default)]
pub struct Pair {
    pub count: u64,
    /// (earlier, later) event indices: the first three of a data race; of strong pairs a
    /// sample over the run (`STRONG_EXAMPLES`), since most are a flag read with no message
    /// between the threads, and the few a message explains are what the report keeps.
    pub examples: Vec<(u32, u32)>,
}

const EXAMPLES: usize = 3;
const STRONG_EXAMPLES: usize = 32;

impl Pair {
    fn add(&mut self, example: (u32, u32), strong: bool) {
        self.count += 1;
        let cap = if strong { STRONG_EXAMPLES } else { EXAMPLES };
        if self.examples.len() < cap {
            self.examples.push(example);
        } else if strong {
            // Reservoir sampling with a fixed hash of the count: the same trace, the same sample.
            let j = (splitmix(self.count) % self.count) as usize;
            if j < cap {
                self.examples[j] = example;
            }
        }
    }
}

fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Stats {
    pub events: u64,
    pub accesses: u64,
    pub threads: u64,
    /// Addresses checked: those two threads or more of a launch touched (`private.rs`).
    pub addresses: u64,
    /// Accesses to an address no other thread of the launch touched: no shadow state kept.
    pub private_accesses: u64,
    /// Reads dropped from a full per-address list: pairs with them were not checked.
    pub reads_not_checked: u64,
    /// Strong reads whose value no write in the trace wrote (initial values) or that did not
    /// say what they read: no synchronisation taken from them.
    pub reads_from_unknown: u64,
    /// Waits for a write read or a barrier's arrivals that could not end (`order.rs`): those
    /// events were checked without the write's synchronisation or all arrivals.
    pub waits_broken: u64,
    /// Acquires completed by a `__syncthreads` rather than a fence.
    pub barrier_acquires: u64,
    /// Clock entries held at the end (threads' clocks), a measure of the detector's memory.
    pub clock_entries: u64,
}

/// The detection of one trace, with what explaining its races needs.
pub struct Detection {
    pub pairs: HashMap<PairKey, Pair>,
    /// Unordered conflicting pairs of strong (volatile, atomic) accesses: not data races under
    /// PTX, but a message passed through relaxed accesses (volatile data after a volatile
    /// flag) still needs its fences. `report.rs` keeps those a message explains.
    pub strong_pairs: HashMap<PairKey, Pair>,
    /// The model it was detected under.
    pub model: Model,
    pub stats: Stats,
    /// Every address with an unordered conflicting pair (weak or strong).
    pub addresses: foldhash::HashSet<u64>,
    /// What every detection of the trace shares: explaining a pair reads its histories.
    pub prep: Arc<Prepared>,
}

/// What the detections of one trace share, whatever fences they take as enabled: reads-from,
/// the causal order events are checked in, the addresses one thread alone touched, and each
/// event's thread and place in that thread's history. Made once per trace, so that the
/// detections of a reduction's search (dozens on one trace, several at once) do not each
/// rebuild and page in per-event arrays of the trace's size.
pub struct Prepared {
    /// For a strong read, the event it read from.
    pub read_from: Vec<Option<u32>>,
    order: Vec<u32>,
    broken: usize,
    private: Private,
    /// Per event: its thread's index (numbered by first event in `order`) and its place in
    /// that thread's history.
    pub thread_of: Vec<u32>,
    pub position: Vec<u32>,
    pub histories: Vec<Vec<u32>>,
}

impl Prepared {
    pub fn of(trace: &Trace) -> Prepared {
        let (read_from, order, broken) = super::order::settle(trace);
        let n = trace.events.len();
        let (mut thread_of, mut position) = (vec![0u32; n], vec![0u32; n]);
        let mut histories: Vec<Vec<u32>> = Vec::new();
        let mut index = HashMap::new();
        for &i in &order {
            let next = histories.len() as u32;
            let t = *index.entry(trace.events[i as usize].thread).or_insert(next);
            if t == next {
                histories.push(Vec::new());
            }
            thread_of[i as usize] = t;
            position[i as usize] = histories[t as usize].len() as u32;
            histories[t as usize].push(i);
        }
        Prepared {
            read_from,
            order,
            broken,
            private: Private::of(&trace.events),
            thread_of,
            position,
            histories,
        }
    }
}

impl Detection {
    pub fn race_count(&self) -> u64 {
        self.pairs.values().map(|p| p.count).sum()
    }
}

#[derive(Clone)]
struct Release {
    clock: Rc<Clock>,
    scope: Scope,
    block: u32,
}

/// What a strong write hands to whoever reads it: the clocks released before it, merged so
/// that a release sequence through thousands of atomics (a lock, a counter) stays a handful of
/// clocks: one of device scope (from any block) and the latest few of block scope.
#[derive(Clone, Default)]
struct Sync {
    releases: Vec<Release>,
}

/// A device-scope release merged from several blocks can serve a device-scope acquire only.
const ANY_BLOCK: u32 = u32::MAX;
const BLOCK_RELEASES_KEPT: usize = 4;

impl Sync {
    fn merge(&mut self, from: &Sync) {
        for r in &from.releases {
            let same = self.releases.iter_mut().find(|m| {
                (m.scope >= Scope::Device && r.scope >= Scope::Device)
                    || (m.scope == Scope::Block && r.scope == Scope::Block && m.block == r.block)
            });
            match same {
                Some(m) if Rc::ptr_eq(&m.clock, &r.clock) => {}
                Some(m) => {
                    let mut c = (*m.clock).clone();
                    c.join(&r.clock);
                    m.clock = Rc::new(c);
                    if m.block != r.block {
                        m.block = ANY_BLOCK;
                    }
                }
                None => self.releases.push(r.clone()),
            }
        }
        let block_scoped = self
            .releases
            .iter()
            .filter(|r| r.scope == Scope::Block)
            .count();
        if block_scoped > BLOCK_RELEASES_KEPT
            && let Some(i) = self.releases.iter().position(|r| r.scope == Scope::Block)
        {
            self.releases.remove(i);
        }
    }
}

struct Written {
    block: u32,
    strong: Option<Scope>,
    sync: Rc<Sync>,
    /// Its thread's write, then (an atomic's) the writes of the release sequence it continues.
    origins: Rc<Vec<Origin>>,
}

/// A write's thread, place in its history, and device-scope fences before it.
#[derive(Clone, Copy)]
struct Origin {
    thread: u32,
    pos: u32,
    fences: u32,
}

/// Writes of a release sequence followed back for `observed.rs` (as `explain.rs` does).
pub const ORIGINS_KEPT: usize = 16;

#[derive(Default)]
struct Cell {
    write: Option<Access>,
    reads: Reads,
}

struct ThreadState {
    block: u32,
    launch: u32,
    vc: Clock,
    own: u32,
    barriers: u32,
    /// The clock at the latest fence of any scope (a barrier too), and at the latest of
    /// device scope or wider: what a strong write releases to its block and to the device.
    release_block: Option<Rc<Clock>>,
    release_device: Option<Rc<Clock>>,
    pending: Vec<(Release, Scope)>,
    waiting: Option<u32>,
    /// An enabled fence site whose accesses this thread just made: its fence comes before the
    /// thread's next event of another site.
    fence_due: Option<FenceId>,
    /// Device-scope fences made, and those with the barriers that complete an acquire.
    fences: u32,
    acquires: u32,
    observed: Observed,
}

/// Whether two strong accesses are morally strong: both strong with scopes that cover both.
fn morally_strong(a: Option<Scope>, a_block: u32, b: Option<Scope>, b_block: u32) -> bool {
    match (a, b) {
        (Some(x), Some(y)) => a_block == b_block || (x >= Scope::Device && y >= Scope::Device),
        _ => false,
    }
}

/// Whether a read of another block, ordered before this thread's write, could still be
/// reordered past the first message this thread read from the reader's thread after the read
/// (`observed.rs`): no device-scope fence between the read and that message's write, or none
/// (nor an acquiring barrier) between this thread's read of it and now.
fn read_passes_first_message(ts: &ThreadState, read: &Access) -> bool {
    if read.block == ts.block {
        return false;
    }
    ts.observed
        .first_after(read.thread, read.pos)
        .is_some_and(|seen| seen.fences <= read.fences || seen.acquires >= ts.acquires)
}

/// Per-block barrier clocks, two generations kept (no thread can be further behind).
type Barriers = HashMap<(u32, u32), Clock>;

/// One detection of `trace` (`Prepared` made for it alone).
pub fn detect(trace: &Trace, opts: &Options) -> Detection {
    detect_prepared(trace, &Arc::new(Prepared::of(trace)), opts)
}

/// One detection of `trace`, with what `Prepared::of(trace)` made.
pub fn detect_prepared(trace: &Trace, prep: &Arc<Prepared>, opts: &Options) -> Detection {
    let mut d = Detector {
        opts,
        prep,
        threads: Vec::new(),
        blocks: HashMap::new(),
        cells: HashMap::new(),
        found: Vec::new(),
        launches: Launches::default(),
        written: HashMap::new(),
        barriers: Barriers::new(),
        out: Detection {
            pairs: HashMap::new(),
            strong_pairs: HashMap::new(),
            model: opts.model,
            stats: Stats::default(),
            addresses: Default::default(),
            prep: prep.clone(),
        },
        events: &trace.events,
    };
    for &i in &prep.order {
        d.step(i);
    }
    let mut out = d.out;
    if d.launches.interleaved {
        out.stats.reads_not_checked += d.launches.dropped_reads;
    }
    out.stats.events = trace.events.len() as u64;
    out.stats.waits_broken = prep.broken as u64;
    out.stats.threads = d.threads.len() as u64;
    out.stats.addresses = d.cells.len() as u64;
    out.stats.clock_entries = d.threads.iter().map(|t| t.vc.len() as u64).sum();
    out
}

struct Detector<'a> {
    opts: &'a Options,
    prep: &'a Prepared,
    events: &'a [Event],
    threads: Vec<ThreadState>,
    blocks: HashMap<(u32, u32), u32>,
    cells: HashMap<u64, Cell>,
    /// What each strong write handed to its readers (weak ones hand nothing and are not kept).
    written: HashMap<u32, Written>,
    barriers: Barriers,
    out: Detection,
    /// The earlier accesses an access meets at its address: kept between accesses, so that
    /// checking one allocates nothing.
    found: Vec<(Access, RaceKind)>,
    /// Launches seen: the one of the latest access, and those before it. An access of an
    /// earlier one (kernels run at once, their events interleaved) means the reads of other
    /// launches dropped may have met a later write of their own: counted as not checked.
    launches: Launches,
}

#[derive(Default)]
struct Launches {
    current: Option<u32>,
    ended: std::collections::HashSet<u32>,
    interleaved: bool,
    /// Reads of other launches dropped from the lists.
    dropped_reads: u64,
}

impl Launches {
    fn see(&mut self, launch: u32) {
        if self.current == Some(launch) {
            return;
        }
        if let Some(c) = self.current.replace(launch) {
            self.ended.insert(c);
        }
        self.interleaved |= self.ended.contains(&launch);
    }
}

impl Detector<'_> {
    /// Event `i`'s thread (`e`), its state made at its first event.
    fn thread(&mut self, i: u32, e: &Event) -> u32 {
        let t = self.prep.thread_of[i as usize];
        if (t as usize) < self.threads.len() {
            return t;
        }
        let n = self.blocks.len() as u32;
        let block = *self
            .blocks
            .entry((e.thread.launch, e.thread.block))
            .or_insert(n);
        let t = self.threads.len() as u32;
        let mut vc = Clock::default();
        vc.raise_thread(t, 1);
        self.threads.push(ThreadState {
            block,
            launch: e.thread.launch,
            vc,
            own: 1,
            barriers: 0,
            release_block: None,
            release_device: None,
            pending: Vec::new(),
            waiting: None,
            fence_due: None,
            fences: 0,
            acquires: 0,
            observed: Observed::new(),
        });
        t
    }

    fn step(&mut self, i: u32) {
        let e = self.events[i as usize];
        let t = self.thread(i, &e);
        self.leave_barrier(t);
        let due = self.threads[t as usize].fence_due;
        if due.is_some() && (due != e.site || !e.op.at_site()) {
            self.threads[t as usize].fence_due = None;
            self.fence(t, self.opts.fence_scope);
        }
        match e.op {
            Op::Read { strong, .. } => {
                self.access(i, t, e.addr, false, strong);
                if strong.is_some() {
                    self.read_from(i, t, strong);
                }
            }
            Op::Write { strong, .. } => {
                self.access(i, t, e.addr, true, strong);
                // A weak write hands nothing: no entry (most writes are weak data stores).
                if strong.is_some() {
                    let sync = self.own_release(t);
                    self.written(i, t, strong, sync, None);
                }
            }
            Op::Rmw { scope, .. } => {
                self.access(i, t, e.addr, true, Some(scope));
                let pending = self.threads[t as usize].pending.len();
                let from = self.read_from(i, t, Some(scope));
                if self.opts.model == Model::ScopedHrf {
                    self.atomic_acquire(t, scope, pending);
                }
                // An atomic continues the release sequence of the write it read.
                let mut sync = (*self.own_release(t)).clone();
                if let Some(w) = from {
                    sync.merge(&w);
                }
                if self.opts.model == Model::ScopedHrf {
                    sync.merge(&self.atomic_release(t, scope));
                }
                let continued = self.prep.read_from[i as usize];
                self.written(i, t, Some(scope), Rc::new(sync), continued);
            }
            Op::Fence { scope } => self.fence(t, scope),
            Op::Barrier => self.barrier(t),
            Op::Site => {}
        }
        if let Some(site) = e.site
            && e.op.at_site()
            && self.opts.fences.contains(&site)
        {
            self.threads[t as usize].fence_due = Some(site);
        }
    }

    fn leave_barrier(&mut self, t: u32) {
        let ts = &mut self.threads[t as usize];
        if let Some(g) = ts.waiting.take() {
            if let Some(c) = self.barriers.get(&(ts.block, g)) {
                ts.vc.join(c);
            }
            ts.vc.raise_block(ts.block, g + 1);
        }
    }

    fn fence(&mut self, t: u32, scope: Scope) {
        let ts = &mut self.threads[t as usize];
        for (r, _) in std::mem::take(&mut ts.pending) {
            if r.block == ts.block || (scope >= Scope::Device && r.scope >= Scope::Device) {
                ts.vc.join(&r.clock);
            }
        }
        let snapshot = Rc::new(ts.vc.clone());
        if scope >= Scope::Device {
            ts.release_device = Some(snapshot.clone());
            ts.fences += 1;
            ts.acquires += 1;
        }
        ts.release_block = Some(snapshot);
        ts.own += 1;
        ts.vc.raise_thread(t, ts.own);
    }

    /// Scoped-HRF: an atomic acquires, at its scope, the releases its read just handed over
    /// (those pending from `from` on), not those of earlier relaxed reads.
    fn atomic_acquire(&mut self, t: u32, scope: Scope, from: usize) {
        let ts = &mut self.threads[t as usize];
        if scope >= Scope::Device {
            // What `observed.rs` counts as a reader side's fence.
            ts.acquires += 1;
        }
        let handed: Vec<(Release, Scope)> = ts.pending.drain(from..).collect();
        for (r, _) in handed {
            if r.block == ts.block || (scope >= Scope::Device && r.scope >= Scope::Device) {
                ts.vc.join(&r.clock);
            }
        }
    }

    /// Scoped-HRF: an atomic releases, at its scope, all its thread did up to it; later strong
    /// writes release nothing by it (unlike a fence).
    fn atomic_release(&mut self, t: u32, scope: Scope) -> Sync {
        let ts = &mut self.threads[t as usize];
        let release = Release {
            clock: Rc::new(ts.vc.clone()),
            scope,
            block: ts.block,
        };
        if scope >= Scope::Device {
            // What `observed.rs` counts as a writer side's fence.
            ts.fences += 1;
        }
        ts.own += 1;
        ts.vc.raise_thread(t, ts.own);
        Sync {
            releases: vec![release],
        }
    }

    fn barrier(&mut self, t: u32) {
        let barrier_acquires = self.opts.barrier_acquires;
        let ts = &mut self.threads[t as usize];
        for (r, read_scope) in std::mem::take(&mut ts.pending) {
            if r.block == ts.block {
                ts.vc.join(&r.clock);
            } else if barrier_acquires && r.scope >= Scope::Device && read_scope >= Scope::Device {
                ts.vc.join(&r.clock);
                self.out.stats.barrier_acquires += 1;
            }
        }
        ts.release_block = Some(Rc::new(ts.vc.clone()));
        if barrier_acquires {
            ts.acquires += 1;
        }
        let (block, g) = (ts.block, ts.barriers);
        let threads = &self.threads;
        // Block-mates' own entries are covered by the barrier's generation.
        self.barriers
            .entry((block, g))
            .or_default()
            .join_except(&threads[t as usize].vc, |k| {
                threads[k as usize].block == block
            });
        if g >= 2 {
            self.barriers.remove(&(block, g - 2));
        }
        let ts = &mut self.threads[t as usize];
        ts.waiting = Some(g);
        ts.barriers += 1;
        ts.own += 1;
        ts.vc.raise_thread(t, ts.own);
    }

    fn own_release(&self, t: u32) -> Rc<Sync> {
        let ts = &self.threads[t as usize];
        let scoped = [
            (&ts.release_device, Scope::Device),
            (&ts.release_block, Scope::Block),
        ];
        let releases = scoped
            .into_iter()
            .filter_map(|(c, scope)| {
                c.as_ref().map(|clock| Release {
                    clock: clock.clone(),
                    scope,
                    block: ts.block,
                })
            })
            .collect();
        Rc::new(Sync { releases })
    }

    /// A strong read: the write it read from (`order.rs`) hands over its releases, to be
    /// acquired at this thread's next fence (or barrier).
    fn read_from(&mut self, i: u32, t: u32, strong: Option<Scope>) -> Option<Rc<Sync>> {
        let block = self.threads[t as usize].block;
        let Some(w) = self.prep.read_from[i as usize] else {
            self.out.stats.reads_from_unknown += 1;
            return None;
        };
        // Not written: it read a weak write, which synchronises nothing.
        let w = self.written.get(&w)?;
        if !morally_strong(w.strong, w.block, strong, block) {
            return None;
        }
        let sync = w.sync.clone();
        let read_scope = strong.unwrap_or(Scope::Block);
        let origins = w.origins.clone();
        let ts = &mut self.threads[t as usize];
        let acquires = ts.acquires;
        for o in origins.iter().filter(|o| o.thread != t) {
            let (pos, fences) = (o.pos, o.fences);
            ts.observed.note(
                o.thread,
                Seen {
                    pos,
                    fences,
                    acquires,
                },
            );
        }
        for r in &sync.releases {
            ts.pending.push((r.clone(), read_scope));
        }
        Some(sync)
    }

    /// `continued`: the write an atomic read, whose release sequence it continues.
    fn written(
        &mut self,
        i: u32,
        t: u32,
        strong: Option<Scope>,
        sync: Rc<Sync>,
        continued: Option<u32>,
    ) {
        let ts = &self.threads[t as usize];
        let mut origins = vec![Origin {
            thread: t,
            pos: self.prep.position[i as usize],
            fences: ts.fences,
        }];
        if let Some(prev) = continued.and_then(|w| self.written.get(&w)) {
            origins.extend(prev.origins.iter().take(ORIGINS_KEPT - 1));
        }
        self.written.insert(
            i,
            Written {
                block: ts.block,
                strong,
                sync,
                origins: Rc::new(origins),
            },
        );
    }

    fn access(&mut self, i: u32, t: u32, addr: u64, write: bool, strong: Option<Scope>) {
        self.out.stats.accesses += 1;
        if self.prep.private.is_private(&self.events[i as usize]) {
            self.out.stats.private_accesses += 1;
            return;
        }
        let ts = &self.threads[t as usize];
        let me = Access {
            event: i,
            thread: t,
            block: ts.block,
            launch: ts.launch,
            clock: ts.own,
            barriers: ts.barriers,
            strong,
            pos: self.prep.position[i as usize],
            fences: ts.fences,
        };
        let cap = self.opts.reads_per_address;
        self.launches.see(me.launch);
        let cell = self.cells.entry(addr).or_default();
        if cell.reads.launch_differs(me.launch) {
            self.launches.dropped_reads += cell.reads.keep_launch(me.launch);
        }
        let mut found = std::mem::take(&mut self.found);
        found.clear();
        if let Some(w) = cell.write {
            let kind = if write {
                RaceKind::WriteWrite
            } else {
                RaceKind::WriteRead
            };
            found.push((w, kind));
        }
        if write {
            found.extend(cell.reads.iter().map(|&r| (r, RaceKind::ReadWrite)));
            cell.write = Some(me);
            cell.reads.clear();
        } else {
            cell.reads.retain_other_threads(t);
            if cell.reads.len() >= cap {
                cell.reads.remove_oldest();
                self.out.stats.reads_not_checked += 1;
            }
            cell.reads.push(me);
        }
        let ts = &self.threads[t as usize];
        for &(p, kind) in &found {
            if p.thread == t || p.launch != me.launch {
                continue;
            }
            // A strong write this thread read (through atomics that carried it on) precedes
            // its later accesses in PTX's causality order: observation, then program order.
            let seen = kind != RaceKind::ReadWrite && ts.observed.saw(p.thread, p.pos);
            let ordered =
                seen || ts.vc.thread(p.thread) >= p.clock || ts.vc.block(p.block) > p.barriers;
            if ordered && !(kind == RaceKind::ReadWrite && read_passes_first_message(ts, &p)) {
                continue;
            }
            let key = PairKey {
                first: self.events[p.event as usize].site,
                second: self.events[i as usize].site,
                kind,
            };
            // Strong pairs are no data race; they matter when a message passed between the
            // threads without ordering them (report.rs keeps only those).
            let strong = morally_strong(p.strong, p.block, me.strong, me.block);
            let pairs = if strong {
                &mut self.out.strong_pairs
            } else {
                &mut self.out.pairs
            };
            self.out.addresses.insert(addr);
            pairs.entry(key).or_default().add((p.event, i), strong);
        }
        self.found = found;
    }
}

//! Ground truth for `wmfix race`: kernels of two threads built from parts (where the threads
//! are, how the data is accessed, how they synchronise, which fences, the atomics' scope), and
//! of three (a relay thread passing a flag's message on through a second flag), each with the
//! text traces of several schedules (a small interpreter runs the threads, interleaved by a
//! seeded scheduler), its CUDA source, and its label under both models.
//!
//! The labels follow from the construction, never from the detector:
//! - Two accesses are *strong together* when both are volatile or atomic and their scopes
//!   cover both threads: the same block, or both of device scope or wider (volatile is of
//!   system scope).
//! - A synchronisation variable races (a data race on it) when it is an atomic of block scope
//!   used by threads of different blocks: those atomics are not atomic with each other.
//! - The first data access happens before the second (`ordered`): through a barrier, in one
//!   block only; through a flag, a lock or a counter whose accesses are strong together, under
//!   ptx only with a fence on each side whose scopes cover both threads (any scope in one
//!   block, device scope across blocks); under scoped-hrf also without fences where the
//!   synchronisation is by atomics (an atomic write releases and an atomic read acquires at its
//!   scope; a volatile access does neither: a lock released by a volatile store needs the
//!   fence before it, the lock's atomic acquiring); through a relay when both hops order;
//!   never without synchronisation or where the second thread bypasses the lock.
//! - A lock released by a volatile store: the store and the next lock's atomic are an unordered
//!   strong pair unless the lock's code has a fence covering both threads (it releases the
//!   store and acquires the atomic that read it).
//! - An unordered data pair is a data race unless strong together; else nothing where both are
//!   atomics (read-modify-writes are the synchronisation: counters, locks); else an unordered
//!   strong pair where the second access writes (an atomic read is a read-modify-write) or
//!   reads bypassing the lock the first holds; else a relaxed message where a message passed
//!   between the threads (flag, lock, counter; through a relay, on both hops), and nothing
//!   otherwise (a volatile read of a volatile store: store buffering, no bug alone).

use std::collections::{BTreeSet, HashMap, VecDeque};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Place {
    Warp,
    Block,
    Grid,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Data {
    Plain,
    Volatile,
    Atomic,
    /// A volatile store first, an atomic second.
    Mixed,
}

/// What the second thread does with the data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Second {
    Read,
    Write,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Sync {
    None,
    FlagVolatile,
    FlagAtomic,
    Lock,
    /// A lock released by a volatile store of 0 (not an atomic).
    LockVolatileUnlock,
    /// The first thread writes under a lock, the second without taking it.
    LockBypass,
    Barrier,
    /// Both write their slot and take a ticket; the last reads (or writes) the other's slot.
    Counter,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    Block,
    Device,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Model {
    Ptx,
    ScopedHrf,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    DataRace,
    RelaxedMessage,
    UnorderedStrong,
}

/// Where a labelled pair is: the data (`d*`) or the synchronisation variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Var {
    Data,
    Sync,
}

pub type Label = BTreeSet<(Var, Class)>;

/// A third thread between the two: the first sets flag `f`, the relay waits for it and sets
/// flag `g`, the second waits for `g` (the kernel's sync and fences are the first hop's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Relay {
    /// The second thread in the relay's block (else in a block of its own).
    pub with_relay: bool,
    /// `g`'s accesses: volatile (`None`) or atomics of this scope.
    pub atomic: Option<Scope>,
    /// A fence on each side of the second hop.
    pub fence: Option<Scope>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Kernel {
    pub place: Place,
    pub data: Data,
    pub second: Second,
    pub sync: Sync,
    /// The writer side's fence (after the first access; before the unlock) and the reader
    /// side's (before the second access; after the lock is taken).
    pub writer_fence: Option<Scope>,
    pub reader_fence: Option<Scope>,
    pub scope: Scope,
    pub relay: Option<Relay>,
}

const PLACES: [Place; 3] = [Place::Warp, Place::Block, Place::Grid];
const DATA: [Data; 4] = [Data::Plain, Data::Volatile, Data::Atomic, Data::Mixed];
const SYNCS: [Sync; 8] = [
    Sync::None,
    Sync::FlagVolatile,
    Sync::FlagAtomic,
    Sync::Lock,
    Sync::LockVolatileUnlock,
    Sync::LockBypass,
    Sync::Barrier,
    Sync::Counter,
];
const FENCES: [Option<Scope>; 3] = [None, Some(Scope::Block), Some(Scope::Device)];

/// Every kernel, each once: the atomics' scope varies only where an atomic is used.
pub fn kernels() -> Vec<Kernel> {
    let mut out = Vec::new();
    for place in PLACES {
        for data in DATA {
            for second in [Second::Read, Second::Write] {
                for sync in SYNCS {
                    for writer_fence in FENCES {
                        for reader_fence in FENCES {
                            for scope in [Scope::Block, Scope::Device] {
                                let k = Kernel {
                                    place,
                                    data,
                                    second,
                                    sync,
                                    writer_fence,
                                    reader_fence,
                                    scope,
                                    relay: None,
                                };
                                if k.uses_atomics() || scope == Scope::Device {
                                    out.push(k);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    out.extend(relayed());
    out
}

const FLAGS: [Option<Scope>; 3] = [None, Some(Scope::Block), Some(Scope::Device)];

/// Three threads: message passing through a relay, each hop a volatile or atomic flag with a
/// fence on both sides or none.
fn relayed() -> Vec<Kernel> {
    let mut out = Vec::new();
    for place in PLACES {
        for data in [Data::Plain, Data::Volatile] {
            for second in [Second::Read, Second::Write] {
                for first in FLAGS {
                    for fence in FENCES {
                        for with_relay in [true, false] {
                            for atomic in FLAGS {
                                for relay_fence in FENCES {
                                    out.push(Kernel {
                                        place,
                                        data,
                                        second,
                                        sync: first
                                            .map_or(Sync::FlagVolatile, |_| Sync::FlagAtomic),
                                        writer_fence: fence,
                                        reader_fence: fence,
                                        scope: first.unwrap_or(Scope::Device),
                                        relay: Some(Relay {
                                            with_relay,
                                            atomic,
                                            fence: relay_fence,
                                        }),
                                    });
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

/// Whether two strong accesses (`None`: weak) are strong together, the threads in one block
/// (`same`) or not.
fn strong_pair(same: bool, a: Option<Scope>, b: Option<Scope>) -> bool {
    match (a, b) {
        (Some(x), Some(y)) => same || (x == Scope::Device && y == Scope::Device),
        _ => false,
    }
}

/// A fence whose scope covers both threads.
fn covers(same: bool, fence: Option<Scope>) -> bool {
    fence.is_some_and(|f| same || f == Scope::Device)
}

/// A hop through a flag (volatile, or atomics of a scope) with fences: whether a message
/// passes (its accesses strong together) and whether it orders what came before the flag's
/// setting before what follows its reading.
fn flag_hop(
    same: bool,
    atomic: Option<Scope>,
    fences: (Option<Scope>, Option<Scope>),
    model: Model,
) -> (bool, bool) {
    let passes = atomic.is_none_or(|s| strong_pair(same, Some(s), Some(s)));
    let fenced = covers(same, fences.0) && covers(same, fences.1);
    let hrf = atomic.is_some() && model == Model::ScopedHrf;
    (passes, passes && (fenced || hrf))
}

fn scope_name(s: Option<Scope>) -> &'static str {
    match s {
        None => "none",
        Some(Scope::Block) => "block",
        Some(Scope::Device) => "device",
    }
}

impl Kernel {
    pub fn uses_atomics(&self) -> bool {
        matches!(self.data, Data::Atomic | Data::Mixed)
            || matches!(
                self.sync,
                Sync::FlagAtomic
                    | Sync::Lock
                    | Sync::LockVolatileUnlock
                    | Sync::LockBypass
                    | Sync::Counter
            )
    }

    /// A C identifier naming every part.
    pub fn name(&self) -> String {
        format!(
            "{:?}_{:?}_{:?}_{:?}_w{}_r{}_{:?}",
            self.place,
            self.data,
            self.second,
            self.sync,
            scope_name(self.writer_fence),
            scope_name(self.reader_fence),
            self.scope
        )
        .to_lowercase()
            + &self.relay.map_or(String::new(), |r| {
                let g = r
                    .atomic
                    .map_or("volatile".to_string(), |s| format!("atomic{s:?}"));
                let at = if r.with_relay { "with" } else { "apart" };
                format!("_relay_{at}_{g}_{}", scope_name(r.fence)).to_lowercase()
            })
    }

    /// The relay's hop: in one block or not, whether a message passes and whether it orders.
    fn relay_hop(&self, model: Model) -> Option<(bool, bool)> {
        let r = self.relay?;
        let same = r.with_relay;
        Some(flag_hop(same, r.atomic, (r.fence, r.fence), model))
    }

    /// Whether the first and the second thread are in one block.
    fn ends_same_block(&self) -> bool {
        self.same_block() && self.relay.is_none_or(|r| r.with_relay)
    }

    fn same_block(&self) -> bool {
        self.place != Place::Grid
    }

    /// Whether two strong accesses of the first hop (`None`: weak) are strong together.
    fn strong_together(&self, a: Option<Scope>, b: Option<Scope>) -> bool {
        strong_pair(self.same_block(), a, b)
    }

    /// The data accesses' strength: volatile is of system scope (device or wider).
    fn data_scopes(&self) -> (Option<Scope>, Option<Scope>) {
        let atomic = Some(self.scope);
        let volatile = Some(Scope::Device);
        match self.data {
            Data::Plain => (None, None),
            Data::Volatile => (volatile, volatile),
            Data::Atomic => (atomic, atomic),
            Data::Mixed => (volatile, atomic),
        }
    }

    fn sync_by_atomics(&self) -> bool {
        matches!(
            self.sync,
            Sync::FlagAtomic | Sync::Lock | Sync::LockVolatileUnlock | Sync::Counter
        )
    }

    /// Whether the synchronisation's own accesses are strong together (a message passes).
    fn message_passes(&self) -> bool {
        match self.sync {
            Sync::FlagVolatile => true,
            Sync::FlagAtomic | Sync::Lock | Sync::LockVolatileUnlock | Sync::Counter => {
                self.strong_together(Some(self.scope), Some(self.scope))
            }
            Sync::None | Sync::LockBypass | Sync::Barrier => false,
        }
    }

    /// A fence whose scope covers both threads.
    fn covers(&self, fence: Option<Scope>) -> bool {
        covers(self.same_block(), fence)
    }

    /// A fence on each side whose scopes cover both threads.
    fn fenced(&self) -> bool {
        self.covers(self.writer_fence) && self.covers(self.reader_fence)
    }

    /// A lock released by a volatile store: the unlock and the next lock's atomic are ordered
    /// where the store is released (a covering fence before it: either fence of the lock's
    /// code) and the atomic acquired (such a fence after it, or under scoped-hrf the atomic
    /// itself): a covering fence in the lock's code, under either model.
    fn unlock_taken_in_order(&self) -> bool {
        self.covers(self.writer_fence) || self.covers(self.reader_fence)
    }

    /// Whether the first data access happens before the second under `model`.
    pub fn ordered(&self, model: Model) -> bool {
        let relayed = self.relay_hop(model).is_none_or(|(_, ordered)| ordered);
        relayed && self.first_hop_ordered(model)
    }

    fn first_hop_ordered(&self, model: Model) -> bool {
        match self.sync {
            Sync::None | Sync::LockBypass => false,
            Sync::Barrier => self.same_block(),
            Sync::FlagVolatile => self.fenced(),
            Sync::FlagAtomic | Sync::Lock | Sync::Counter => {
                self.message_passes() && (self.fenced() || model == Model::ScopedHrf)
            }
            // Under scoped-hrf the lock's atomic acquires; the volatile store releases nothing.
            Sync::LockVolatileUnlock => {
                let acquired = self.covers(self.reader_fence) || model == Model::ScopedHrf;
                self.message_passes() && self.covers(self.writer_fence) && acquired
            }
        }
    }

    /// The pairs that are bugs under `model`, by construction.
    pub fn label(&self, model: Model) -> Label {
        let mut out = Label::new();
        let relay = self.relay_hop(model);
        let relay_atomic = self.relay.is_some_and(|r| r.atomic.is_some());
        let relay_breaks = relay_atomic && relay.is_some_and(|(passes, _)| !passes);
        if (self.sync_by_atomics() && !self.message_passes()) || relay_breaks {
            out.insert((Var::Sync, Class::DataRace));
        }
        let volatile_unlock = self.sync == Sync::LockVolatileUnlock && self.message_passes();
        if volatile_unlock && !self.unlock_taken_in_order() {
            out.insert((Var::Sync, Class::UnorderedStrong));
        }
        if self.ordered(model) {
            return out;
        }
        let (a, b) = self.data_scopes();
        // An atomic read is a read-modify-write: it writes too.
        let second_writes =
            self.second == Second::Write || b.is_some() && self.data != Data::Volatile;
        let message = self.message_passes() && relay.is_none_or(|(passes, _)| passes);
        let class = if !strong_pair(self.ends_same_block(), a, b) {
            Some(Class::DataRace)
        } else if self.data == Data::Atomic {
            None
        } else if second_writes || self.sync == Sync::LockBypass {
            Some(Class::UnorderedStrong)
        } else {
            message.then_some(Class::RelaxedMessage)
        };
        out.extend(class.map(|c| (Var::Data, c)));
        out
    }
}

/// One step of a thread's program.
#[derive(Clone, Debug)]
enum Instr {
    Store {
        addr: String,
        volatile: bool,
        value: u64,
    },
    Load {
        addr: String,
        volatile: bool,
    },
    /// `atomicExch`.
    Exch {
        addr: String,
        scope: Scope,
        value: u64,
    },
    /// `atomicAdd(p, 0)`: an atomic read.
    Peek {
        addr: String,
        scope: Scope,
    },
    /// Wait for a flag: volatile loads (`None`) or atomic reads.
    Spin {
        addr: String,
        atomic: Option<Scope>,
    },
    Lock(Scope),
    Unlock(Scope),
    /// `*(volatile int *)l = 0`.
    VolatileUnlock,
    Fence(Scope),
    Barrier,
    /// `if (atomicAdd(c, 1) == 1) { then }`.
    Ticket {
        scope: Scope,
        then: Vec<Instr>,
    },
}

impl Kernel {
    fn first_access(&self, addr: &str, value: u64) -> Instr {
        let addr = addr.to_string();
        match self.data {
            Data::Plain | Data::Volatile | Data::Mixed => Instr::Store {
                addr,
                volatile: self.data != Data::Plain,
                value,
            },
            Data::Atomic => Instr::Exch {
                addr,
                scope: self.scope,
                value,
            },
        }
    }

    fn second_access(&self, addr: &str) -> Instr {
        let addr = addr.to_string();
        let volatile = self.data == Data::Volatile;
        match (self.data, self.second) {
            (Data::Plain | Data::Volatile, Second::Read) => Instr::Load { addr, volatile },
            (Data::Plain | Data::Volatile, Second::Write) => Instr::Store {
                addr,
                volatile,
                value: 3,
            },
            (Data::Atomic | Data::Mixed, Second::Read) => Instr::Peek {
                addr,
                scope: self.scope,
            },
            (Data::Atomic | Data::Mixed, Second::Write) => Instr::Exch {
                addr,
                scope: self.scope,
                value: 3,
            },
        }
    }

    fn wf(&self) -> Vec<Instr> {
        self.writer_fence.map(Instr::Fence).into_iter().collect()
    }

    fn rf(&self) -> Vec<Instr> {
        self.reader_fence.map(Instr::Fence).into_iter().collect()
    }

    /// Each thread's program: the first (role 0) and the second (role 1).
    fn programs(&self) -> Vec<Vec<Instr>> {
        let mut p = self.pair_programs().to_vec();
        if let Some(r) = self.relay {
            // The second thread now waits for `g`; the relay waits for `f` and sets `g`.
            let rf = self.rf();
            let second = p.pop().expect("two threads");
            let after_f: Vec<Instr> = second[1 + rf.len()..].to_vec();
            let fence: Vec<Instr> = r.fence.map(Instr::Fence).into_iter().collect();
            let set_g = flag_set("g", r.atomic);
            let relay = [
                vec![flag_wait("f", self.flag_scope())],
                rf,
                fence.clone(),
                vec![set_g],
            ];
            p.push(relay.concat());
            p.push([vec![flag_wait("g", r.atomic)], fence, after_f].concat());
        }
        p
    }

    /// The first hop's flag: atomics of the kernel's scope, or volatile.
    fn flag_scope(&self) -> Option<Scope> {
        (self.sync == Sync::FlagAtomic).then_some(self.scope)
    }

    fn pair_programs(&self) -> [Vec<Instr>; 2] {
        let s = self.scope;
        let first = self.first_access("d0", 1);
        let second = self.second_access("d0");
        let cat = |parts: Vec<Vec<Instr>>| parts.concat();
        let locked = |access: Instr| {
            cat(vec![
                vec![Instr::Lock(s)],
                self.rf(),
                vec![access],
                self.wf(),
                vec![Instr::Unlock(s)],
            ])
        };
        match self.sync {
            Sync::None => [
                cat(vec![vec![first], self.wf()]),
                cat(vec![self.rf(), vec![second]]),
            ],
            Sync::FlagVolatile | Sync::FlagAtomic => {
                let atomic = self.flag_scope();
                [
                    cat(vec![vec![first], self.wf(), vec![flag_set("f", atomic)]]),
                    cat(vec![vec![flag_wait("f", atomic)], self.rf(), vec![second]]),
                ]
            }
            Sync::Lock => [locked(first), locked(second)],
            Sync::LockVolatileUnlock => {
                let unlock_by_store = |mut p: Vec<Instr>| {
                    p.pop();
                    p.push(Instr::VolatileUnlock);
                    p
                };
                [
                    unlock_by_store(locked(first)),
                    unlock_by_store(locked(second)),
                ]
            }
            Sync::LockBypass => [locked(first), vec![second]],
            Sync::Barrier => [
                cat(vec![vec![first], self.wf(), vec![Instr::Barrier]]),
                cat(vec![vec![Instr::Barrier], self.rf(), vec![second]]),
            ],
            Sync::Counter => [0, 1].map(|me: u64| {
                let other = format!("d{}", 1 - me);
                let then = cat(vec![self.rf(), vec![self.second_access(&other)]]);
                cat(vec![
                    vec![self.first_access(&format!("d{me}"), me + 1)],
                    self.wf(),
                    vec![Instr::Ticket { scope: s, then }],
                ])
            }),
        }
    }

    /// The threads as (block, thread): the first, the second, and the relay if any (then
    /// the programs' second and the second the last).
    fn threads(&self) -> Vec<(u32, u32)> {
        let next = match self.place {
            Place::Warp => (0, 1),
            Place::Block => (0, 32),
            Place::Grid => (1, 0),
        };
        match self.relay {
            None => vec![(0, 0), next],
            Some(r) if r.with_relay => vec![(0, 0), next, (next.0, next.1 + 64)],
            Some(_) => vec![(0, 0), next, (2, 0)],
        }
    }

    /// The text trace of one schedule: `bias` is the chance the first thread runs next.
    pub fn trace(&self, seed: u64, bias: f64) -> String {
        Machine::new(self).run(seed, bias)
    }

    /// Schedules of this kernel: the first thread always ahead when it can run (as a GPU
    /// runs a warp's two branches: the first to the end, then the second), mostly ahead,
    /// even, mostly behind.
    pub fn traces(&self) -> Vec<String> {
        [(4, 1.0), (1, 0.8), (2, 0.5), (3, 0.2)]
            .iter()
            .map(|&(seed, bias)| self.trace(seed, bias))
            .collect()
    }
}

fn scope_word(s: Scope) -> &'static str {
    match s {
        Scope::Block => "block",
        Scope::Device => "device",
    }
}

fn flag_set(addr: &str, atomic: Option<Scope>) -> Instr {
    let addr = addr.to_string();
    match atomic {
        None => Instr::Store {
            addr,
            volatile: true,
            value: 1,
        },
        Some(scope) => Instr::Exch {
            addr,
            scope,
            value: 1,
        },
    }
}

fn flag_wait(addr: &str, atomic: Option<Scope>) -> Instr {
    Instr::Spin {
        addr: addr.to_string(),
        atomic,
    }
}

/// Runs the programs interleaved, writing each event as a trace line.
struct Machine {
    programs: Vec<VecDeque<(Instr, u32)>>,
    /// Each thread's block and thread.
    threads: Vec<(u32, u32)>,
    barriers: Vec<u32>,
    memory: HashMap<String, u64>,
    lines: Vec<String>,
}

impl Machine {
    fn new(k: &Kernel) -> Machine {
        let programs: Vec<VecDeque<(Instr, u32)>> = k
            .programs()
            .into_iter()
            .enumerate()
            .map(|(role, p)| {
                let site = |i: usize| (role * 32 + i) as u32;
                p.into_iter()
                    .enumerate()
                    .map(|(i, ins)| (ins, site(i)))
                    .collect()
            })
            .collect();
        Machine {
            barriers: vec![0; programs.len()],
            programs,
            threads: k.threads(),
            memory: HashMap::new(),
            lines: Vec::new(),
        }
    }

    fn runnable(&self, role: usize) -> bool {
        // At a barrier, a thread waits for its block-mates to arrive.
        let block = self.threads[role].0;
        let waits = (0..self.threads.len())
            .any(|o| self.threads[o].0 == block && self.barriers[o] < self.barriers[role]);
        !(self.programs[role].is_empty() || waits)
    }

    /// `bias`: the chance that the first thread runs next, when it can; the others share the
    /// rest evenly.
    fn run(mut self, seed: u64, bias: f64) -> String {
        let mut rng = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut draw = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        for _ in 0..100_000 {
            let ready: Vec<usize> = (0..self.programs.len())
                .filter(|&r| self.runnable(r))
                .collect();
            let role = match ready.as_slice() {
                [] => return self.lines.join("\n") + "\n",
                [one] => *one,
                [0, rest @ ..] if ((draw() % 1000) as f64) < bias * 1000.0 || rest.is_empty() => 0,
                [0, rest @ ..] => rest[(draw() % rest.len() as u64) as usize],
                all => all[(draw() % all.len() as u64) as usize],
            };
            self.step(role);
        }
        panic!("a schedule that does not end")
    }

    fn emit(&mut self, role: usize, text: String, site: Option<u32>) {
        let at = site.map_or(String::new(), |s| format!(" @{s}"));
        let (b, t) = self.threads[role];
        self.lines.push(format!("b{b}.t{t} {text}{at}"));
    }

    fn rmw(&mut self, addr: &str, new: impl Fn(u64) -> u64) -> (u64, u64) {
        let old = self.memory.get(addr).copied().unwrap_or(0);
        self.memory.insert(addr.to_string(), new(old));
        (old, new(old))
    }

    /// Runs the next event of `role`'s program.
    fn step(&mut self, role: usize) {
        let (ins, site) = self.programs[role].pop_front().expect("runnable");
        let mut done = true;
        match &ins {
            Instr::Store {
                addr,
                volatile,
                value,
            } => {
                self.memory.insert(addr.clone(), *value);
                let op = if *volatile { "st.volatile" } else { "st" };
                self.emit(role, format!("{op} {addr} {value}"), Some(site));
            }
            Instr::Load { addr, volatile } => {
                let v = self.memory.get(addr).copied().unwrap_or(0);
                let op = if *volatile { "ld.volatile" } else { "ld" };
                self.emit(role, format!("{op} {addr} {v}"), Some(site));
            }
            Instr::Exch { addr, scope, value } => {
                let (old, new) = self.rmw(addr, |_| *value);
                self.emit(
                    role,
                    format!("atom.{} {addr} {old} {new}", scope_word(*scope)),
                    Some(site),
                );
            }
            Instr::Peek { addr, scope } => {
                let (old, _) = self.rmw(addr, |v| v);
                self.emit(
                    role,
                    format!("atom.{} {addr} {old} {old}", scope_word(*scope)),
                    Some(site),
                );
            }
            Instr::Spin { addr, atomic } => {
                let v = self.memory.get(addr).copied().unwrap_or(0);
                let text = match atomic {
                    None => format!("ld.volatile {addr} {v}"),
                    Some(s) => format!("atom.{} {addr} {v} {v}", scope_word(*s)),
                };
                self.emit(role, text, Some(site));
                done = v != 0;
            }
            Instr::Lock(s) => {
                let v = self.memory.get("l").copied().unwrap_or(0);
                let text = if v == 0 {
                    self.memory.insert("l".into(), 1);
                    format!("atom.{} l 0 1", scope_word(*s))
                } else {
                    format!("cas.fail.{} l {v}", scope_word(*s))
                };
                self.emit(role, text, Some(site));
                done = v == 0;
            }
            Instr::Unlock(s) => {
                let (old, _) = self.rmw("l", |_| 0);
                self.emit(
                    role,
                    format!("atom.{} l {old} 0", scope_word(*s)),
                    Some(site),
                );
            }
            Instr::VolatileUnlock => {
                self.memory.insert("l".into(), 0);
                self.emit(role, "st.volatile l 0".into(), Some(site));
            }
            Instr::Fence(s) => self.emit(role, format!("fence.{}", scope_word(*s)), None),
            Instr::Barrier => {
                self.barriers[role] += 1;
                self.emit(role, "bar".into(), None);
            }
            Instr::Ticket { scope, then } => {
                let (old, new) = self.rmw("c", |v| v + 1);
                self.emit(
                    role,
                    format!("atom.{} c {old} {new}", scope_word(*scope)),
                    Some(site),
                );
                if old == 1 {
                    for (i, ins) in then.iter().enumerate().rev() {
                        self.programs[role].push_front((ins.clone(), site + 16 + i as u32));
                    }
                }
            }
        }
        if !done {
            self.programs[role].push_front((ins, site));
        }
    }
}

/// The CUDA source of a kernel: `d` the data, `f` the flag, lock or counter, `out` the reads.
pub fn cuda(k: &Kernel) -> String {
    let programs = k.programs();
    let threads = k.threads();
    let mut s = format!(
        "__global__ void {}(int *d, int *f, int *out) {{\n",
        k.name()
    );
    for (role, (b, t)) in threads.iter().enumerate() {
        s.push_str(&format!(
            "  const bool t{role} = blockIdx.x == {b} && threadIdx.x == {t};\n"
        ));
    }
    // Each thread's program cut at its barriers: every thread of the block passes them.
    let parts: Vec<Vec<&[Instr]>> = programs
        .iter()
        .map(|p| p.split(|i| matches!(i, Instr::Barrier)).collect())
        .collect();
    for n in 0..parts[0].len() {
        if n > 0 {
            s.push_str("  __syncthreads();\n");
        }
        for (role, p) in parts.iter().enumerate() {
            if let Some(part) = p.get(n).filter(|part| !part.is_empty()) {
                s.push_str(&format!(
                    "  if (t{role}) {{\n{}  }}\n",
                    c_lines(part, role, 4)
                ));
            }
        }
    }
    s.push_str("}\n");
    s
}

fn suffix(s: Scope) -> &'static str {
    match s {
        Scope::Block => "_block",
        Scope::Device => "",
    }
}

/// `d0`, `d1` as C: `d[0]`, `d[1]`; the synchronisation variable is `f[0]`, the relay's `f[1]`.
fn c_addr(addr: &str) -> String {
    match addr.strip_prefix('d') {
        Some(i) => format!("d + {i}"),
        None if addr == "g" => "f + 1".to_string(),
        None => "f".to_string(),
    }
}

fn c_lines(part: &[Instr], role: usize, indent: usize) -> String {
    let pad = " ".repeat(indent);
    let mut s = String::new();
    for ins in part {
        let line = match ins {
            Instr::Store {
                addr,
                volatile: true,
                value,
            } => {
                format!("*(volatile int *)({}) = {value};", c_addr(addr))
            }
            Instr::Store { addr, value, .. } => format!("*({}) = {value};", c_addr(addr)),
            Instr::Load {
                addr,
                volatile: true,
            } => {
                format!("out[{role}] = *(volatile int *)({});", c_addr(addr))
            }
            Instr::Load { addr, .. } => format!("out[{role}] = *({});", c_addr(addr)),
            Instr::Exch { addr, scope, value } => {
                format!("atomicExch{}({}, {value});", suffix(*scope), c_addr(addr))
            }
            Instr::Peek { addr, scope } => {
                format!(
                    "out[{role}] = atomicAdd{}({}, 0);",
                    suffix(*scope),
                    c_addr(addr)
                )
            }
            Instr::Spin { addr, atomic: None } => {
                format!("while (*(volatile int *)({}) == 0) {{}}", c_addr(addr))
            }
            Instr::Spin {
                addr,
                atomic: Some(sc),
            } => format!(
                "while (atomicAdd{}({}, 0) == 0) {{}}",
                suffix(*sc),
                c_addr(addr)
            ),
            Instr::Lock(sc) => format!("while (atomicCAS{}(f, 0, 1) != 0) {{}}", suffix(*sc)),
            Instr::Unlock(sc) => format!("atomicExch{}(f, 0);", suffix(*sc)),
            Instr::VolatileUnlock => "*(volatile int *)(f) = 0;".to_string(),
            Instr::Fence(Scope::Block) => "__threadfence_block();".to_string(),
            Instr::Fence(Scope::Device) => "__threadfence();".to_string(),
            Instr::Barrier => "__syncthreads();".to_string(),
            Instr::Ticket { scope, then } => format!(
                "if (atomicAdd{}(f, 1) == 1) {{\n{}{pad}}}",
                suffix(*scope),
                c_lines(then, role, indent + 2)
            ),
        };
        s.push_str(&format!("{pad}{line}\n"));
    }
    s
}

/// Blocks and threads a block every kernel is launched with: room for every placement.
pub const LAUNCH: (u32, u32) = (3, 128);

/// Kernels a source file of the suite holds: files compile in parallel (`BUILD`).
pub const PER_FILE: usize = 160;

/// A whole program for the GPU, as (file name, text): `main.cu` launches each kernel (or those
/// named on the command line) once, in turn, on zeroed buffers, exit 1 on a CUDA error; the
/// kernels are in `part_NN.cu`, `PER_FILE` a file.
pub fn suite(kernels: &[Kernel]) -> Vec<(String, String)> {
    let head = "// wmfix race ground truth (tests/ground_truth/mod.rs): each kernel's label is in\n\
                // labels.json beside this file.\n";
    let mut files: Vec<(String, String)> = kernels
        .chunks(PER_FILE)
        .enumerate()
        .map(|(n, part)| {
            let text: String = part.iter().map(cuda).collect();
            (format!("part_{n:02}.cu"), format!("{head}{text}"))
        })
        .collect();
    files.push(("main.cu".to_string(), format!("{head}{}", main_cu(kernels))));
    files
}

fn main_cu(kernels: &[Kernel]) -> String {
    let mut s = String::from("#include <cstdio>\n#include <cstring>\n\n");
    for k in kernels {
        s.push_str(&format!(
            "__global__ void {}(int *d, int *f, int *out);\n",
            k.name()
        ));
    }
    s.push_str("\ntypedef void (*Kernel)(int *, int *, int *);\nstruct Case {\n  const char *name;\n  Kernel k;\n};\nstatic const Case cases[] = {\n");
    for k in kernels {
        s.push_str(&format!("    {{\"{0}\", {0}}},\n", k.name()));
    }
    let (blocks, threads) = LAUNCH;
    s.push_str(&format!(
        "}};\n\nint main(int argc, char **argv) {{\n  int *buf;\n  if (cudaMalloc(&buf, 12 * sizeof(int)) != cudaSuccess) return 1;\n  for (const Case &c : cases) {{\n    bool asked = argc < 2;\n    for (int i = 1; i < argc; ++i) asked |= strcmp(argv[i], c.name) == 0;\n    if (!asked) continue;\n    cudaMemset(buf, 0, 12 * sizeof(int));\n    c.k<<<{blocks}, {threads}>>>(buf, buf + 4, buf + 8);\n    cudaError_t e = cudaDeviceSynchronize();\n    if (e != cudaSuccess) {{\n      fprintf(stderr, \"%s: %s\\n\", c.name, cudaGetErrorString(e));\n      return 1;\n    }}\n  }}\n  return 0;\n}}\n"
    ));
    s
}

/// The suite's build command: the parts on all cores, then the program.
pub const BUILD: &str = "ls part_*.cu | xargs -P \"$(nproc)\" -I{} nvcc -O3 -arch=sm_90 -c {} -o {}.o && nvcc -O3 -arch=sm_90 -o suite main.cu part_*.cu.o";

/// The suite's `wmfix.toml`: `wmfix race DIR [--model M]` builds and runs it.
pub fn wmfix_toml(files: &[(String, String)]) -> String {
    let sources: Vec<String> = files.iter().map(|(n, _)| format!("\"{n}\"")).collect();
    format!(
        "# The generated race ground truth (tests/ground_truth/mod.rs): `wmfix race` on this folder,\n\
         # then `python3 scripts/race_ground_truth.py wmfix-out labels.json`.\n\
         sources = [{}]\nbuild = '{BUILD}'\nrun = \"./suite\"\ntimeout_s = 600\n",
        sources.join(", ")
    )
}

/// Every kernel's labels as JSON: `{"name": {"ptx": [["data", "data-race"]], "scoped-hrf": []}}`.
pub fn labels_json(kernels: &[Kernel]) -> String {
    let words = |l: Label| -> Vec<[&'static str; 2]> {
        l.into_iter()
            .map(|(v, c)| {
                let var = if v == Var::Data { "data" } else { "sync" };
                let class = match c {
                    Class::DataRace => "data-race",
                    Class::RelaxedMessage => "relaxed-message",
                    Class::UnorderedStrong => "unordered-strong",
                };
                [var, class]
            })
            .collect()
    };
    let all: serde_json::Map<String, serde_json::Value> = kernels
        .iter()
        .map(|k| {
            let v = serde_json::json!({
                "ptx": words(k.label(Model::Ptx)),
                "scoped-hrf": words(k.label(Model::ScopedHrf)),
            });
            (k.name(), v)
        })
        .collect();
    serde_json::to_string_pretty(&all).expect("labels serialise")
}

//! Ground truth for `wmfix race`: kernels of two threads built from parts (where the threads
//! are, how the data is accessed, how they synchronise, which fences, the atomics' scope), each
//! with the text traces of several schedules (a small interpreter runs the two threads,
//! interleaved by a seeded scheduler), its CUDA source, and its label under both models.
//!
//! The labels follow from the construction, never from the detector:
//! - Two accesses are *strong together* when both are volatile or atomic and their scopes
//!   cover both threads: the same block, or both of device scope or wider (volatile is of
//!   system scope).
//! - The synchronisation variable races (a data race on it) when it is an atomic of block
//!   scope used by threads of different blocks: those atomics are not atomic with each other.
//! - The first data access happens before the second (`ordered`): through a barrier, in one
//!   block only; through a flag, a lock or a counter whose accesses are strong together, under
//!   ptx only with a fence on each side whose scopes cover both threads (any scope in one
//!   block, device scope across blocks); under scoped-hrf also without fences where the
//!   synchronisation is by atomics (an atomic write releases and an atomic read acquires at its
//!   scope; a volatile access does neither); never without synchronisation or where the second
//!   thread bypasses the lock.
//! - An unordered data pair is a data race unless strong together; else nothing where both are
//!   atomics (read-modify-writes are the synchronisation: counters, locks); else an unordered
//!   strong pair where the second access writes (an atomic read is a read-modify-write) or
//!   reads bypassing the lock the first holds; else a relaxed message where a message passed
//!   between the threads (flag, lock, counter), and nothing otherwise (a volatile read of a
//!   volatile store: store buffering, no bug alone).

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
    out
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
    }

    fn same_block(&self) -> bool {
        self.place != Place::Grid
    }

    /// Whether two strong accesses of these scopes (`None`: weak) are strong together.
    fn strong_together(&self, a: Option<Scope>, b: Option<Scope>) -> bool {
        match (a, b) {
            (Some(x), Some(y)) => self.same_block() || (x == Scope::Device && y == Scope::Device),
            _ => false,
        }
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
        fence.is_some_and(|f| self.same_block() || f == Scope::Device)
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
        if self.sync_by_atomics() && !self.message_passes() {
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
        let class = if !self.strong_together(a, b) {
            Some(Class::DataRace)
        } else if self.data == Data::Atomic {
            None
        } else if second_writes || self.sync == Sync::LockBypass {
            Some(Class::UnorderedStrong)
        } else {
            self.message_passes().then_some(Class::RelaxedMessage)
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
    /// Wait for the flag: volatile loads (`None`) or atomic reads.
    Spin {
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
    fn programs(&self) -> [Vec<Instr>; 2] {
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
                let atomic = (self.sync == Sync::FlagAtomic).then_some(s);
                let set = match atomic {
                    None => Instr::Store {
                        addr: "f".into(),
                        volatile: true,
                        value: 1,
                    },
                    Some(scope) => Instr::Exch {
                        addr: "f".into(),
                        scope,
                        value: 1,
                    },
                };
                [
                    cat(vec![vec![first], self.wf(), vec![set]]),
                    cat(vec![vec![Instr::Spin { atomic }], self.rf(), vec![second]]),
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

    /// The two threads' names in the trace.
    fn threads(&self) -> [&'static str; 2] {
        match self.place {
            Place::Warp => ["b0.t0", "b0.t1"],
            Place::Block => ["b0.t0", "b0.t32"],
            Place::Grid => ["b0.t0", "b1.t0"],
        }
    }

    /// The text trace of one schedule: `bias` is the chance the first thread runs next.
    pub fn trace(&self, seed: u64, bias: f64) -> String {
        Machine::new(self).run(seed, bias)
    }

    /// Schedules of this kernel: the first thread mostly ahead, even, mostly behind.
    pub fn traces(&self) -> Vec<String> {
        [(1, 0.8), (2, 0.5), (3, 0.2)]
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

/// Runs the two programs interleaved, writing each event as a trace line.
struct Machine {
    programs: [VecDeque<(Instr, u32)>; 2],
    names: [&'static str; 2],
    same_block: bool,
    barriers: [u32; 2],
    memory: HashMap<String, u64>,
    lines: Vec<String>,
}

impl Machine {
    fn new(k: &Kernel) -> Machine {
        let programs = k.programs();
        let numbered = |role: usize| {
            programs[role]
                .iter()
                .cloned()
                .enumerate()
                .map(|(i, ins)| (ins, (role * 32 + i) as u32))
                .collect()
        };
        Machine {
            programs: [numbered(0), numbered(1)],
            names: k.threads(),
            same_block: k.same_block(),
            barriers: [0, 0],
            memory: HashMap::new(),
            lines: Vec::new(),
        }
    }

    fn runnable(&self, role: usize) -> bool {
        // At a barrier, a thread waits for its block-mate to arrive.
        let waits = self.same_block && self.barriers[role] > self.barriers[1 - role];
        let done = self.programs[role].is_empty();
        !(done || waits)
    }

    fn run(mut self, seed: u64, bias: f64) -> String {
        let mut rng = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        for _ in 0..100_000 {
            let ready: Vec<usize> = (0..2).filter(|&r| self.runnable(r)).collect();
            let role = match ready.as_slice() {
                [] => return self.lines.join("\n") + "\n",
                [one] => *one,
                _ => {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    usize::from((rng % 1000) as f64 >= bias * 1000.0)
                }
            };
            self.step(role);
        }
        panic!("a schedule that does not end")
    }

    fn emit(&mut self, role: usize, text: String, site: Option<u32>) {
        let at = site.map_or(String::new(), |s| format!(" @{s}"));
        self.lines.push(format!("{} {text}{at}", self.names[role]));
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
            Instr::Spin { atomic } => {
                let v = self.memory.get("f").copied().unwrap_or(0);
                let text = match atomic {
                    None => format!("ld.volatile f {v}"),
                    Some(s) => format!("atom.{} f {v} {v}", scope_word(*s)),
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
    let [w, r] = k.programs();
    let (rb, rt) = match k.place {
        Place::Warp => (0, 1),
        Place::Block => (0, 32),
        Place::Grid => (1, 0),
    };
    let mut s = format!(
        "__global__ void {}(int *d, int *f, int *out) {{\n  const bool w = blockIdx.x == 0 && threadIdx.x == 0;\n  const bool r = blockIdx.x == {rb} && threadIdx.x == {rt};\n",
        k.name()
    );
    let split = |p: &[Instr]| -> Vec<Vec<Instr>> {
        p.split(|i| matches!(i, Instr::Barrier))
            .map(|x| x.to_vec())
            .collect()
    };
    let (ws, rs) = (split(&w), split(&r));
    for (n, (wpart, rpart)) in ws.iter().zip(&rs).enumerate() {
        if n > 0 {
            s.push_str("  __syncthreads();\n");
        }
        for (who, part, role) in [("w", wpart, 0), ("r", rpart, 1)] {
            if !part.is_empty() {
                s.push_str(&format!(
                    "  if ({who}) {{\n{}  }}\n",
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

/// `d0`, `d1` as C: `d[0]`, `d[1]`; the synchronisation variable is `f[0]`.
fn c_addr(addr: &str) -> String {
    match addr.strip_prefix('d') {
        Some(i) => format!("d + {i}"),
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
            Instr::Spin { atomic: None } => "while (*(volatile int *)(f) == 0) {}".to_string(),
            Instr::Spin { atomic: Some(sc) } => {
                format!("while (atomicAdd{}(f, 0) == 0) {{}}", suffix(*sc))
            }
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

//! An access trace: what the detection runtime records on the GPU (a binary file, read here
//! with the fence sites' kinds from `fences.json`) or what a test writes by hand (the text
//! form). Both become the same `Trace` of `Event`s, in the order the GPU handed out slots.

use super::sites::SiteKind;
use crate::fences::id::FenceId;
use anyhow::{Context, Result, bail};
use std::collections::HashMap;

pub use super::scope::Scope;

/// A GPU thread of one launch: the hardware block and thread (linear), not wmfix's remapped ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Thread {
    pub launch: u32,
    pub block: u32,
    pub thread: u32,
}

impl std::fmt::Display for Thread {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "block {} thread {}", self.block, self.thread)
    }
}

/// What an event did. `strong` is the scope of a strong (volatile or atomic) access; `None` is
/// a weak (plain) one. A failed compare-and-swap is a strong read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Read {
        strong: Option<Scope>,
        value: Option<u64>,
    },
    Write {
        strong: Option<Scope>,
        value: Option<u64>,
    },
    Rmw {
        scope: Scope,
        old: Option<u64>,
        new: Option<u64>,
    },
    Fence {
        scope: Scope,
    },
    Barrier,
    /// Where a fence site sits that names no access (after a call, a loop, a value): what
    /// enabling it would order, and where a fence could go.
    Site,
}

impl Op {
    pub fn is_access(&self) -> bool {
        !matches!(self, Op::Fence { .. } | Op::Barrier | Op::Site)
    }

    /// Whether the event stands where its fence site sits (an access, or a mark).
    pub fn at_site(&self) -> bool {
        self.is_access() || *self == Op::Site
    }

    /// The scope of a strong access; `None` for a weak one, a fence or a barrier.
    pub fn strong(&self) -> Option<Scope> {
        match *self {
            Op::Read { strong, .. } | Op::Write { strong, .. } => strong,
            Op::Rmw { scope, .. } => Some(scope),
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    pub thread: Thread,
    pub op: Op,
    pub addr: u64,
    /// The fence site right after this access (an instrumented access), if any.
    pub site: Option<FenceId>,
}

#[derive(Clone, Debug, Default)]
pub struct Trace {
    pub events: Vec<Event>,
    /// Events the GPU could not record (the buffer was full): what was not checked.
    pub dropped: u64,
    /// Recorded events of the launch a full buffer cut short, left out (`drop_cut_launch`).
    pub cut: u64,
    /// Why the run's records are not here at all (the runtime could not copy or write them, or
    /// the run wrote no trace): nothing of it was checked.
    pub lost: Option<String>,
    /// Launches after the runtime wrote the trace (a `cudaDeviceReset`, then more kernels):
    /// recorded nothing, so not checked.
    pub unrecorded_launches: u64,
    /// Names of the text form's addresses, for messages.
    pub names: HashMap<u64, String>,
    /// The detection run it came from (0 the first); a run's launches may be traces of their
    /// own (`launches::split`).
    pub run: usize,
}

use super::format::{MAGIC, NO_SITE, RECORD_BYTES, Record, flag, kind};

impl Trace {
    /// Reads the runtime's file. `sites` gives the kind of the access each fence id names
    /// (from `fences.json`): an access event is a read or a write by its site (the statement's
    /// other accesses say their kind); the site after an atomic names the atomic event its
    /// thread recorded just before (a libcu++ acquire's fence between them).
    pub fn from_bytes(bytes: &[u8], sites: &[SiteKind]) -> Result<Trace> {
        let header_end = bytes
            .iter()
            .position(|&b| b == b'\n')
            .context("a race trace without its header line")?;
        let header = std::str::from_utf8(&bytes[..header_end]).unwrap_or("");
        let Some(fields) = header.strip_prefix(MAGIC) else {
            bail!("not a wmfix race trace (header {header:?})");
        };
        let body = &bytes[header_end + 1..];
        let mut trace = Trace::default();
        let (mut records, mut handed, mut capacity) = (None, None, None);
        for field in fields.split_whitespace() {
            let number = |name: &str| -> Result<Option<u64>> {
                field
                    .strip_prefix(name)
                    .map(|v| v.parse().with_context(|| format!("the trace's {name}")))
                    .transpose()
            };
            if let Some(v) = number("dropped=")? {
                trace.dropped = v;
            } else if let Some(v) = number("records=")? {
                records = Some(v);
            } else if let Some(v) = number("handed=")? {
                handed = Some(v);
            } else if let Some(v) = number("capacity=")? {
                capacity = Some(v);
            } else if let Some(v) = number("unrecorded_launches=")? {
                trace.unrecorded_launches = v;
            } else if field == "lost=1" {
                return Ok(Trace::lost(
                    "the runtime could not copy or write its records at exit (a cudaDeviceReset outside instrumented code, a kernel fault, a full disk)",
                ));
            }
        }
        let whole = body.len() / RECORD_BYTES;
        if !body.len().is_multiple_of(RECORD_BYTES) || records.is_some_and(|r| r != whole as u64) {
            return Ok(Trace::lost(&format!(
                "the trace file is cut short ({} bytes of records, {} expected)",
                body.len(),
                records.map_or("whole records".to_string(), |r| format!("{r} records"))
            )));
        }
        // Slots handed out but never written (a kernel that died mid-record) are not checked.
        if let (Some(h), Some(c), Some(r)) = (handed, capacity, records) {
            trace.dropped += h.min(c).saturating_sub(r);
        }
        // Each thread's last event, when it is an atomic that no site named yet.
        let mut last_atomic: HashMap<Thread, usize> = HashMap::new();
        for rec in body.chunks_exact(RECORD_BYTES) {
            let r = Record::decode(rec);
            if r.kind == 0 {
                continue; // a slot handed out but never written (a killed kernel)
            }
            let thread = Thread {
                launch: r.launch,
                block: r.block,
                thread: u32::from(r.thread),
            };
            let (addr, kind, flags) = (r.addr, r.kind, r.flags);
            let value = (flags & flag::VALUE != 0).then_some(r.a);
            let scope = Scope::from_bits(flags);
            let site = (r.site != NO_SITE).then_some(FenceId(r.site as usize));
            let recorded_strong =
                (flags & flag::STRONG != 0).then_some(if flags & flag::SCOPED != 0 {
                    scope
                } else {
                    Scope::System
                });
            let op = match kind {
                kind::ACCESS => match site.and_then(|s| sites.get(s.0)) {
                    Some(SiteKind::Store) => Op::Write {
                        strong: recorded_strong,
                        value,
                    },
                    Some(&SiteKind::StrongStore { scope, release }) => {
                        if release {
                            trace.push_fence(thread, scope);
                        }
                        Op::Write {
                            strong: Some(scope),
                            value,
                        }
                    }
                    Some(&SiteKind::StrongLoad { scope, acquire }) => {
                        trace.events.push(Event {
                            thread,
                            op: Op::Read {
                                strong: Some(scope),
                                value,
                            },
                            addr,
                            site,
                        });
                        last_atomic.remove(&thread);
                        if acquire {
                            trace.push_fence(thread, scope);
                        }
                        continue;
                    }
                    Some(SiteKind::Atomic) => {
                        // The atomic itself was recorded with its values: name its site.
                        if let Some(&i) = last_atomic.get(&thread) {
                            let e: &mut Event = &mut trace.events[i];
                            if e.addr == addr {
                                e.site = site;
                                last_atomic.remove(&thread);
                                continue;
                            }
                        }
                        Op::Rmw {
                            scope: Scope::Device,
                            old: None,
                            new: None,
                        }
                    }
                    _ => Op::Read {
                        strong: recorded_strong,
                        value,
                    },
                },
                kind::RMW => Op::Rmw {
                    scope,
                    old: value,
                    new: value.map(|_| r.b),
                },
                kind::LOAD => Op::Read {
                    strong: recorded_strong,
                    value,
                },
                kind::STORE => Op::Write {
                    strong: recorded_strong,
                    value,
                },
                kind::CAS_FAILED => Op::Read {
                    strong: Some(scope),
                    value,
                },
                kind::FENCE => Op::Fence { scope },
                kind::BARRIER => Op::Barrier,
                kind::SITE => {
                    // Right after an atomic (a loop on one, a value): the site is the atomic's.
                    if let Some(i) = last_atomic.remove(&thread) {
                        trace.events[i].site = site;
                        continue;
                    }
                    Op::Site
                }
                other => bail!("a race trace record of unknown kind {other}"),
            };
            // libcu++'s operations (runtime-cu/wmfix_race.cuh) are recorded without a site too:
            // their loads and stores are the only strong ones without one, and the fence an
            // acquire brings after one carries its address, so that the site still names it.
            let atomic = matches!(op, Op::Rmw { .. })
                || kind == kind::CAS_FAILED
                || (matches!(kind, kind::LOAD | kind::STORE) && site.is_none());
            let after = |i: &usize| trace.events[*i].addr == addr;
            let acquire =
                kind == kind::FENCE && addr != 0 && last_atomic.get(&thread).is_some_and(after);
            if atomic {
                last_atomic.insert(thread, trace.events.len());
            } else if !acquire {
                last_atomic.remove(&thread);
            }
            trace.events.push(Event {
                thread,
                op,
                addr: if kind == kind::FENCE { 0 } else { addr },
                site,
            });
        }
        trace.drop_cut_launch();
        trace.mend_reread_stores();
        Ok(trace)
    }

    /// A run whose records are not there, and why: nothing of it can be checked.
    pub fn lost(why: &str) -> Trace {
        Trace {
            lost: Some(why.to_string()),
            ..Trace::default()
        }
    }

    /// Whether every event of every launch of the run is in the trace.
    pub fn complete(&self) -> bool {
        self.dropped == 0 && self.cut == 0 && self.lost.is_none() && self.unrecorded_launches == 0
    }

    /// The fence an acquiring load implies after it, or a releasing store before it.
    fn push_fence(&mut self, thread: Thread, scope: Scope) {
        self.events.push(Event {
            thread,
            op: Op::Fence { scope },
            addr: 0,
            site: None,
        });
    }

    /// A strong store's value is read back after the store (the runtime has only its lvalue),
    /// so another thread's atomic in between is what it records: a lock released by a volatile
    /// store of 0 and taken again at once shows a release of 1. An atomic read the nearest
    /// source of its value: where another thread's strong store that recorded the value the
    /// atomic wrote is nearer (in slot order: before it and after the last write of the value
    /// read, else after it and before the next such write) than any write of the value read,
    /// the store wrote what the atomic read. Nearer, not "no write wrote it": in a lock taken
    /// by several waiters, the last holder's release is recorded with 0 and would else be
    /// taken as every earlier acquire's source. No two atomics that change the word read one
    /// write: a store or write one took, in slot order, is not another's.
    fn mend_reread_stores(&mut self) {
        type Key = (u32, u64, u64);
        let mut stores: HashMap<Key, Vec<usize>> = HashMap::new();
        for (i, e) in self.events.iter().enumerate() {
            if let Op::Write {
                strong: Some(_),
                value: Some(v),
            } = e.op
            {
                stores
                    .entry((e.thread.launch, e.addr, v))
                    .or_default()
                    .push(i);
            }
        }
        if stores.is_empty() {
            return;
        }
        let words: std::collections::HashSet<(u32, u64)> =
            stores.keys().map(|&(l, a, _)| (l, a)).collect();
        let mut writes: HashMap<Key, Vec<usize>> = HashMap::new();
        for (i, e) in self.events.iter().enumerate() {
            let value = match e.op {
                Op::Write { value, .. } => value,
                Op::Rmw { new, .. } => new,
                _ => None,
            };
            if let Some(v) = value.filter(|_| words.contains(&(e.thread.launch, e.addr))) {
                writes
                    .entry((e.thread.launch, e.addr, v))
                    .or_default()
                    .push(i);
            }
        }
        let mut mended: HashMap<usize, u64> = HashMap::new();
        // An atomic reads its word's value just before it: no two read the same write.
        let mut claimed: std::collections::HashSet<usize> = Default::default();
        for (i, e) in self.events.iter().enumerate() {
            let Op::Rmw {
                old: Some(old),
                new: Some(new),
                ..
            } = e.op
            else {
                continue;
            };
            if old == new {
                continue; // it changed nothing: any write of the value, no store to mend
            }
            let (launch, addr) = (e.thread.launch, e.addr);
            let Some(cands) = stores.get(&(launch, addr, new)) else {
                continue;
            };
            let free = |w: &&usize| !claimed.contains(*w);
            let other = |w: &&usize| self.events[**w].thread != e.thread && free(w);
            let olds: &[usize] = writes.get(&(launch, addr, old)).map_or(&[], |v| v);
            let store_before = cands.iter().rev().find(|w| **w < i && other(w));
            let old_before = olds.iter().rev().find(|w| **w < i && free(w));
            // The nearest source: a write of the value read, or a store that recorded the
            // value this atomic wrote.
            let source = match (store_before, old_before) {
                (Some(s), o) if o.is_none_or(|o| o < s) => Some((s, true)),
                (_, Some(o)) => Some((o, false)),
                (_, None) => {
                    let store_after = cands.iter().find(|w| **w > i && other(w));
                    let old_after = olds.iter().find(|w| **w > i && other(w));
                    match (store_after, old_after) {
                        (Some(s), o) if o.is_none_or(|o| s < o) => Some((s, true)),
                        (_, o) => o.map(|o| (o, false)),
                    }
                }
            };
            if let Some((&w, reread)) = source {
                claimed.insert(w);
                if reread {
                    mended.insert(w, old);
                }
            }
        }
        for (w, old) in mended {
            if let Op::Write { value, .. } = &mut self.events[w].op {
                *value = Some(old);
            }
        }
    }

    /// A full buffer cut the last launch short: an atomic it read from may be among the
    /// records lost, so its synchronisation is unknown and its races would be false. Its events
    /// are counted as not checked; launches before it ended and are checked as they are.
    fn drop_cut_launch(&mut self) {
        if self.dropped == 0 {
            return;
        }
        let Some(last) = self.events.last().map(|e| e.thread.launch) else {
            return;
        };
        let before = self.events.len();
        self.events.retain(|e| e.thread.launch != last);
        self.cut = (before - self.events.len()) as u64;
    }

    /// The text form, one event a line: `b1.t0 ld.volatile flag 1 @3` (launch 0; `k2.b1.t0` for
    /// launch 2). Operations: `ld`, `st` (weak), `.volatile` (strong, system scope),
    /// `.relaxed.block|device|system`; `atom[.SCOPE] ADDR OLD NEW`; `cas.fail[.SCOPE] ADDR
    /// VALUE`; `fence.block|device|system`; `bar`; `mark @N` (a site naming no access). `@N`
    /// names the fence site after an access.
    /// `#` starts a comment.
    pub fn parse_text(text: &str) -> Result<Trace> {
        let mut trace = Trace::default();
        let mut addrs: HashMap<String, u64> = HashMap::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let event = parse_line(line, &mut addrs)
                .with_context(|| format!("trace line {}: {line:?}", n + 1))?;
            trace.events.push(event);
        }
        trace.names = addrs.into_iter().map(|(k, v)| (v, k)).collect();
        trace.mend_reread_stores();
        Ok(trace)
    }

    /// An address as a message shows it: its name in the text form, else hex.
    pub fn addr_name(&self, addr: u64) -> String {
        self.names
            .get(&addr)
            .cloned()
            .unwrap_or_else(|| format!("{addr:#x}"))
    }
}

fn parse_line(line: &str, addrs: &mut HashMap<String, u64>) -> Result<Event> {
    let mut words = line.split_whitespace();
    let who = words.next().context("no thread")?;
    let thread = parse_thread(who)?;
    let op = words.next().context("no operation")?;
    let mut rest: Vec<&str> = words.collect();
    let site = match rest.last() {
        Some(w) if w.starts_with('@') => {
            let id = w[1..].parse().context("a fence site after @")?;
            rest.pop();
            Some(FenceId(id))
        }
        _ => None,
    };
    let mut addr = |name: &str| {
        let next = addrs.len() as u64 * 8 + 0x1000;
        *addrs.entry(name.to_string()).or_insert(next)
    };
    let num = |i: usize| -> Result<u64> {
        rest.get(i)
            .context("a value is missing")?
            .parse::<u64>()
            .context("a value")
    };
    let (base, suffix) = op.split_once('.').unwrap_or((op, ""));
    let scope_of = |s: &str| -> Result<Scope> {
        Ok(match s {
            "block" | "cta" => Scope::Block,
            "device" | "gpu" | "" => Scope::Device,
            "system" | "sys" => Scope::System,
            other => bail!("unknown scope {other:?}"),
        })
    };
    let strength = |s: &str| -> Result<Option<Scope>> {
        Ok(match s {
            "" => None,
            "volatile" => Some(Scope::System),
            _ => match s.strip_prefix("relaxed") {
                Some(rest) => Some(scope_of(rest.trim_start_matches('.'))?),
                None => bail!("unknown strength {s:?}"),
            },
        })
    };
    let accessed = || -> Result<&str> { rest.first().copied().context("no address") };
    let op = match base {
        "ld" => Op::Read {
            strong: strength(suffix)?,
            value: rest.get(1).map(|_| num(1)).transpose()?,
        },
        "st" => Op::Write {
            strong: strength(suffix)?,
            value: rest.get(1).map(|_| num(1)).transpose()?,
        },
        "atom" => Op::Rmw {
            scope: scope_of(suffix)?,
            old: Some(num(1)?),
            new: Some(num(2)?),
        },
        "cas" => Op::Read {
            strong: Some(scope_of(
                suffix.trim_start_matches("fail").trim_start_matches('.'),
            )?),
            value: Some(num(1)?),
        },
        "fence" => Op::Fence {
            scope: scope_of(suffix)?,
        },
        "bar" => Op::Barrier,
        "mark" => Op::Site,
        other => bail!("unknown operation {other:?}"),
    };
    let at = if op.is_access() { addr(accessed()?) } else { 0 };
    Ok(Event {
        thread,
        op,
        addr: at,
        site,
    })
}

fn parse_thread(s: &str) -> Result<Thread> {
    let mut t = Thread {
        launch: 0,
        block: 0,
        thread: 0,
    };
    let (mut block, mut thread) = (false, false);
    for part in s.split('.') {
        let (key, n) = part.split_at(1);
        let n: u32 = n.parse().with_context(|| format!("thread {s:?}"))?;
        match key {
            "k" => t.launch = n,
            "b" => (t.block, block) = (n, true),
            "t" => (t.thread, thread) = (n, true),
            _ => bail!("thread {s:?}: want k<launch>.b<block>.t<thread>"),
        }
    }
    if !block || !thread {
        bail!("thread {s:?}: want b<block>.t<thread>");
    }
    Ok(t)
}

#[cfg(test)]
#[path = "trace_tests.rs"]
mod tests;

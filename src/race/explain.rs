//! Which fences would order a racing pair. The later access's thread read (strongly) something
//! the earlier one's thread wrote after its access: a message that did not synchronise. The
//! writer side lacks a fence between its access and that write, the reader side one between
//! that read and its access (or the fences there are of block scope where the threads are in
//! different blocks). Enabling an instrumented fence site in the range orders the pair.

use super::detect::Detection;
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
            Explanation::Message { writer, reader, .. } => {
                let w = writer.as_ref().and_then(|s| s.sites.last().copied());
                let r = reader.as_ref().and_then(|s| s.sites.first().copied());
                w.into_iter().chain(r).collect()
            }
            Explanation::NoMessage => Vec::new(),
        }
    }
}

/// Release sequences are followed back this far through other threads' atomics.
const CHAIN_LIMIT: usize = 1 << 16;

pub fn explain(trace: &Trace, d: &Detection, earlier: u32, later: u32) -> Explanation {
    let (w, t) = (d.thread_of[earlier as usize], d.thread_of[later as usize]);
    let (wp, tp) = (d.position[earlier as usize], d.position[later as usize]);
    let reader_history = &d.histories[t as usize];
    for &r in reader_history[..tp as usize].iter().rev() {
        let mut from = d.read_from[r as usize];
        let mut steps = 0;
        while let Some(s) = from {
            if d.thread_of[s as usize] == w && d.position[s as usize] > wp {
                return message(trace, d, earlier, s, r, later);
            }
            let via_atomic = matches!(trace.events[s as usize].op, Op::Rmw { .. });
            steps += 1;
            if !via_atomic || steps > CHAIN_LIMIT {
                break;
            }
            from = d.read_from[s as usize];
        }
    }
    Explanation::NoMessage
}

fn message(
    trace: &Trace,
    d: &Detection,
    earlier: u32,
    write: u32,
    read: u32,
    later: u32,
) -> Explanation {
    let blocks_differ = {
        let (a, b) = (
            &trace.events[earlier as usize],
            &trace.events[later as usize],
        );
        a.thread.block != b.thread.block
    };
    let needed = if blocks_differ {
        Scope::Device
    } else {
        Scope::Block
    };
    let writer = side(trace, d, earlier, write, needed, false);
    let reader = side(trace, d, read, later, needed, true);
    Explanation::Message {
        write,
        read,
        writer,
        reader,
    }
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
    let t = d.thread_of[from as usize] as usize;
    let (a, b) = (
        d.position[from as usize] as usize,
        d.position[to as usize] as usize,
    );
    let mut sites = Vec::new();
    let mut block_scope_fence = false;
    for &e in &d.histories[t][a..b] {
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

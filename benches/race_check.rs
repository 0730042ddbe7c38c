//! The race detector's host check on a synthetic trace shaped like cub-scan-nf's on an H100
//! (22 M events, 65,536 threads, 3.1 M accesses; most events are the barriers of its block scan,
//! 288 a thread): each thread loads its input, the block passes its scan's barriers, thread 0
//! spins on the previous block's volatile flag, reads its volatile prefix and publishes its own
//! (no fences: a relaxed message), a barrier, and each thread stores its output. Prints events a
//! second of one detection and of `reduce --oracle race`'s search.
//! Run: `cargo bench --bench race_check [-- BLOCKS THREADS ITEMS BARRIERS]` (default 256 256 24 288).

use std::time::Instant;
use wmfix::fences::id::FenceId;
use wmfix::race::detect::{self, Options};
use wmfix::race::format::{NO_SITE, Record, flag, kind};
use wmfix::race::sites::SiteKind;
use wmfix::race::trace::Trace;

const LOAD: u8 = kind::LOAD;
const STORE: u8 = kind::STORE;
const BARRIER: u8 = kind::BARRIER;
const STRONG: u8 = flag::STRONG;
const VALUE: u8 = flag::VALUE;
const IN: u64 = 0x1000_0000;
const OUT: u64 = 0x4000_0000;
const FLAG: u64 = 0x7000_0000;
const PREFIX: u64 = 0x7100_0000;

#[allow(clippy::too_many_arguments)]
fn rec(
    out: &mut Vec<u8>,
    kind: u8,
    flags: u8,
    addr: u64,
    value: u64,
    site: u32,
    block: u32,
    thread: u16,
) {
    Record {
        addr,
        a: value,
        launch: 1,
        block,
        site,
        thread,
        kind,
        flags,
        ..Record::default()
    }
    .encode(out);
}

fn synthetic(blocks: u32, threads: u16, items: u64, barriers: u32) -> Vec<u8> {
    let mut t = wmfix::race::format::header(0);
    let strong = STRONG | VALUE;
    for b in 0..blocks {
        for th in 0..threads {
            let base = (u64::from(b) * u64::from(threads) + u64::from(th)) * items;
            for i in 0..items {
                rec(&mut t, LOAD, 0, IN + 4 * (base + i), 0, 0, b, th);
            }
            rec(&mut t, BARRIER, 0, 0, 0, NO_SITE, b, th);
        }
        for _ in 0..barriers {
            for th in 0..threads {
                rec(&mut t, BARRIER, 0, 0, 0, NO_SITE, b, th);
            }
        }
        if b > 0 {
            let prev = u64::from(b - 1);
            rec(&mut t, LOAD, strong, FLAG + 4 * prev, 1, 2, b, 0);
            rec(&mut t, LOAD, strong, PREFIX + 4 * prev, prev, 3, b, 0);
        }
        rec(
            &mut t,
            STORE,
            strong,
            PREFIX + 4 * u64::from(b),
            u64::from(b),
            4,
            b,
            0,
        );
        rec(&mut t, STORE, strong, FLAG + 4 * u64::from(b), 1, 5, b, 0);
        for th in 0..threads {
            rec(&mut t, BARRIER, 0, 0, 0, NO_SITE, b, th);
            let base = (u64::from(b) * u64::from(threads) + u64::from(th)) * items;
            for i in 0..items {
                rec(&mut t, STORE, 0, OUT + 4 * (base + i), 0, 1, b, th);
            }
        }
    }
    t
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let (blocks, threads, items, barriers) = match args[..] {
        [b, t, i, g] => (b as u32, t as u16, i, g as u32),
        _ => (256, 256, 24, 288),
    };
    let kinds = [SiteKind::Load; 6];
    let t0 = Instant::now();
    let trace = Trace::from_bytes(&synthetic(blocks, threads, items, barriers), &kinds).unwrap();
    let n = trace.events.len();
    println!(
        "{blocks} blocks x {threads} threads x {items} items, {barriers} barriers: {n} events, read in {:.2} s",
        t0.elapsed().as_secs_f64()
    );
    let t0 = Instant::now();
    let prep = std::sync::Arc::new(detect::Prepared::of(&trace));
    let p = t0.elapsed().as_secs_f64();
    let t0 = Instant::now();
    let d = detect::detect_prepared(&trace, &prep, &Options::default());
    let s = t0.elapsed().as_secs_f64();
    println!(
        "what the detections share (reads-from, order, threads): {p:.2} s; one detection then: {s:.2} s, {:.2} M events/s, {} racing pairs, {} strong pairs, {} clock entries, {} addresses checked, {} private accesses",
        n as f64 / s / 1e6,
        d.race_count(),
        d.strong_pairs.len(),
        d.stats.clock_entries,
        d.stats.addresses,
        d.stats.private_accesses
    );
    drop((d, prep));
    let all = FenceId::all(6);
    let t0 = Instant::now();
    let r =
        wmfix::reduce::by_race::minimise(std::slice::from_ref(&trace), &Options::default(), &all);
    println!(
        "reduce --oracle race's search: {:.2} s, {} detections, start set {:?}",
        t0.elapsed().as_secs_f64(),
        r.detections,
        r.fences
    );
}

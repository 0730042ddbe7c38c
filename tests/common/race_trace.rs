//! The race stand-in's trace (`fixtures/race-standin/kernel.cu`'s message passing), written
//! as the detection runtime writes one, for the tests that have a stand-in leave it.

use wmfix::race::format::{NO_SITE, Record, flag, kind};
pub const D: u64 = 0x7000_0000;
pub const F: u64 = 0x7000_0100;
pub const OUT: u64 = 0x7000_0200;

/// One record of launch 9, thread 0 of `block`.
pub fn rec(kind: u8, flags: u8, addr: u64, value: u64, site: u32, block: u32) -> Vec<u8> {
    rec_in(9, kind, flags, addr, value, site, block)
}

/// One record of `launch`, thread 0 of `block`.
pub fn rec_in(
    launch: u32,
    kind: u8,
    flags: u8,
    addr: u64,
    value: u64,
    site: u32,
    block: u32,
) -> Vec<u8> {
    let mut r = Vec::new();
    Record {
        addr,
        a: value,
        launch,
        block,
        site,
        kind,
        flags,
        ..Record::default()
    }
    .encode(&mut r);
    r
}

/// The stand-in's kernel run: block 0 stores d (fence site 0) and the flag (1); block 1 waits
/// for the flag (2) and copies d to out (3). `fenced`: __threadfence() on both sides.
pub fn trace(fenced: bool, dropped: u64) -> Vec<u8> {
    let mut t = format!("wmfix-race-trace 1 capacity=100 dropped={dropped}\n").into_bytes();
    t.extend(rec(kind::ACCESS, 0, D, 0, 0, 0));
    if fenced {
        t.extend(rec(kind::FENCE, flag::DEVICE, 0, 0, NO_SITE, 0));
    }
    t.extend(rec(kind::ACCESS, flag::STRONG | flag::VALUE, F, 1, 1, 0));
    t.extend(rec(kind::LOAD, flag::STRONG | flag::VALUE, F, 1, 2, 1));
    if fenced {
        t.extend(rec(kind::FENCE, flag::DEVICE, 0, 0, NO_SITE, 1));
    }
    t.extend(rec(kind::LOAD, 0, D, 0, 3, 1));
    t.extend(rec(kind::ACCESS, 0, OUT, 0, 3, 1));
    t
}

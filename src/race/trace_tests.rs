//! Tests of `trace.rs`: the text form, and binary traces as the detection runtime writes them.

use super::*;

#[test]
fn the_text_form_reads_every_operation() {
    let t = Trace::parse_text(
        "b0.t1 st x 5 @2\nk1.b3.t0 ld.relaxed.block f 1\nb0.t0 atom.device c 0 1 @4 # x\n\
         b0.t0 cas.fail.system l 1\nb0.t0 fence.block\nb0.t0 bar\n",
    )
    .unwrap();
    assert_eq!(t.events.len(), 6);
    assert_eq!(
        t.events[0].op,
        Op::Write {
            strong: None,
            value: Some(5)
        }
    );
    assert_eq!(t.events[0].site, Some(FenceId(2)));
    assert_eq!(t.events[1].thread.launch, 1);
    assert_eq!(t.events[1].op.strong(), Some(Scope::Block));
    assert_eq!(t.events[3].op.strong(), Some(Scope::System));
    assert_eq!(t.addr_name(t.events[0].addr), "x");
    assert!(Trace::parse_text("b0 ld x").is_err());
    assert!(Trace::parse_text("b0.t0 ld.weird x").is_err());
}

fn record(kind: u8, flags: u8, addr: u64, a: u64, b: u64, site: u32, thread: u16) -> Vec<u8> {
    record_in(0, kind, flags, addr, a, b, site, thread)
}

#[allow(clippy::too_many_arguments)]
fn record_in(
    launch: u32,
    kind: u8,
    flags: u8,
    addr: u64,
    a: u64,
    b: u64,
    site: u32,
    thread: u16,
) -> Vec<u8> {
    let mut r = Vec::new();
    Record {
        addr,
        a,
        b,
        launch,
        block: 7,
        site,
        thread,
        kind,
        flags,
    }
    .encode(&mut r);
    r
}

#[test]
fn cache_operator_loads_are_weak_reads_and_cub_acquire_loads_bring_their_fence() {
    // fences.json calls `__ldcg(p)` an atomic; read as one, two blocks' loads of an address
    // were a write-write race (ct-octree's reduced sets).
    let mut bytes = b"wmfix-race-trace 1 dropped=0\n".to_vec();
    bytes.extend(record(kind::ACCESS, 0, 0x10, 0, 0, 0, 1));
    bytes.extend(record(kind::ACCESS, flag::VALUE, 0x20, 1, 0, 1, 1));
    bytes.extend(record(kind::ACCESS, flag::VALUE, 0x30, 2, 0, 2, 1));
    let sites = [
        SiteKind::of_call("__ldcg(&src[i])"),
        SiteKind::of_call("detail::load_acquire(f)"),
        SiteKind::of_call("detail::store_release(g, 2)"),
    ];
    let t = Trace::from_bytes(&bytes, &sites).unwrap();
    let ops: Vec<Op> = t.events.iter().map(|e| e.op).collect();
    let device = Some(Scope::Device);
    let fence = Op::Fence {
        scope: Scope::Device,
    };
    assert_eq!(
        ops,
        [
            Op::Read {
                strong: None,
                value: None
            },
            Op::Read {
                strong: device,
                value: Some(1)
            },
            fence,
            fence,
            Op::Write {
                strong: device,
                value: Some(2)
            },
        ]
    );
    assert_eq!(t.events[0].site, Some(FenceId(0)));
}

#[test]
fn a_full_buffer_drops_the_launch_it_cut_short() {
    let mut bytes = b"wmfix-race-trace 1 dropped=5\n".to_vec();
    bytes.extend(record_in(1, kind::ACCESS, 0, 0x10, 0, 0, 0, 1));
    bytes.extend(record_in(2, kind::ACCESS, 0, 0x10, 0, 0, 0, 2));
    bytes.extend(record_in(2, kind::FENCE, 1, 0, 0, 0, NO_SITE, 2));
    let t = Trace::from_bytes(&bytes, &[SiteKind::Store]).unwrap();
    assert_eq!(t.events.len(), 1);
    assert_eq!(t.events[0].thread.launch, 1);
    assert_eq!((t.dropped, t.cut), (5, 2));
    assert!(!t.complete());
}

#[test]
fn a_trace_whose_records_were_lost_is_incomplete_not_a_clean_run() {
    let bytes = b"wmfix-race-trace 1 capacity=4 dropped=0 lost=1\n".to_vec();
    let t = Trace::from_bytes(&bytes, &[]).unwrap();
    assert!(
        t.lost.as_deref().unwrap().contains("could not copy"),
        "{t:?}"
    );
    assert!(!t.complete());
}

#[test]
fn a_trace_file_shorter_than_its_header_says_is_lost() {
    // The runtime's padded header, then one record of the two it says it wrote.
    let mut bytes = format!(
        "{:<159}\n",
        "wmfix-race-trace 1 capacity=8 dropped=0 handed=2 records=2"
    )
    .into_bytes();
    bytes.extend(record(kind::ACCESS, 0, 0x10, 0, 0, 0, 1));
    let t = Trace::from_bytes(&bytes, &[SiteKind::Store]).unwrap();
    assert!(t.lost.as_deref().unwrap().contains("cut short"), "{t:?}");
    assert!(t.events.is_empty() && !t.complete());
    bytes.extend(record(kind::ACCESS, 0, 0x18, 0, 0, 0, 1));
    let t = Trace::from_bytes(&bytes, &[SiteKind::Store]).unwrap();
    assert!(t.complete() && t.events.len() == 2, "{t:?}");
    // Three slots handed out, two written: the third is not checked.
    bytes[..159].copy_from_slice(
        format!(
            "{:<159}",
            "wmfix-race-trace 1 capacity=8 dropped=0 handed=3 records=2"
        )
        .as_bytes(),
    );
    let t = Trace::from_bytes(&bytes, &[SiteKind::Store]).unwrap();
    assert!(t.dropped == 1 && !t.complete(), "{t:?}");
}

#[test]
fn launches_after_the_trace_was_written_leave_it_incomplete() {
    let bytes = format!(
        "{:<159}\n",
        "wmfix-race-trace 1 capacity=8 dropped=0 handed=0 records=0 unrecorded_launches=3"
    )
    .into_bytes();
    let t = Trace::from_bytes(&bytes, &[]).unwrap();
    assert_eq!(t.unrecorded_launches, 3);
    assert!(!t.complete());
}

#[test]
fn a_scoped_strong_load_or_store_keeps_its_scope_a_volatile_one_is_of_system_scope() {
    // libcu++'s atomic_ref (runtime-cu/wmfix_race.cuh) records its scope with SCOPED; a
    // volatile access has none, whatever its low bits.
    let mut bytes = b"wmfix-race-trace 1 dropped=0\n".to_vec();
    let strong = flag::STRONG | flag::VALUE;
    bytes.extend(record(
        kind::STORE,
        strong | flag::SCOPED | flag::DEVICE,
        0x10,
        1,
        0,
        NO_SITE,
        1,
    ));
    bytes.extend(record(
        kind::LOAD,
        strong | flag::SCOPED,
        0x10,
        1,
        0,
        NO_SITE,
        2,
    ));
    bytes.extend(record(kind::LOAD, strong, 0x10, 1, 0, NO_SITE, 3));
    let t = Trace::from_bytes(&bytes, &[]).unwrap();
    let scopes: Vec<Option<Scope>> = t.events.iter().map(|e| e.op.strong()).collect();
    assert_eq!(
        scopes,
        [Some(Scope::Device), Some(Scope::Block), Some(Scope::System)]
    );
}

#[test]
fn binary_records_take_their_kind_from_the_site_and_atomics_their_site_from_the_next_record() {
    let mut bytes = b"wmfix-race-trace 1 dropped=0\n".to_vec();
    bytes.extend(record(kind::ACCESS, 0, 0x10, 0, 0, 0, 1));
    bytes.extend(record(kind::RMW, 1 | flag::VALUE, 0x20, 4, 5, NO_SITE, 1));
    bytes.extend(record(kind::ACCESS, 0, 0x20, 0, 0, 1, 1));
    bytes.extend(record(
        kind::ACCESS,
        flag::STRONG | flag::VALUE,
        0x30,
        9,
        0,
        2,
        2,
    ));
    bytes.extend(record(0, 0, 0, 0, 0, 0, 0));
    bytes.extend(record(kind::FENCE, 1, 0, 0, 0, NO_SITE, 2));
    // A site naming no access: the atomic's just before it, else a mark of its own.
    bytes.extend(record(
        kind::CAS_FAILED,
        1 | flag::VALUE,
        0x40,
        1,
        0,
        NO_SITE,
        3,
    ));
    bytes.extend(record(kind::SITE, 0, 0, 0, 0, 5, 3));
    bytes.extend(record(kind::SITE, 0, 0, 0, 0, 6, 3));
    let sites = [SiteKind::Store, SiteKind::Atomic, SiteKind::Load];
    let t = Trace::from_bytes(&bytes, &sites).unwrap();
    assert_eq!(t.dropped, 0);
    assert!(matches!(t.events[0].op, Op::Write { strong: None, .. }));
    assert_eq!(
        t.events[1].op,
        Op::Rmw {
            scope: Scope::Device,
            old: Some(4),
            new: Some(5)
        }
    );
    assert_eq!(t.events[1].site, Some(FenceId(1)));
    assert_eq!(
        t.events[2].op,
        Op::Read {
            strong: Some(Scope::System),
            value: Some(9)
        }
    );
    assert_eq!(t.events[2].thread.block, 7);
    assert_eq!(
        t.events[3].op,
        Op::Fence {
            scope: Scope::Device
        }
    );
    assert!(Trace::from_bytes(b"something else\n", &sites).is_err());
}

#[test]
fn a_libcuxx_operation_takes_the_site_after_it_past_its_acquire_fence() {
    // runtime-cu/wmfix_race.cuh records libcu++'s operations with no site, an acquire as the
    // access then a fence that carries its word; the site after the statement records an access
    // at that word (`WMFIX_FENCE_PTR(id, WMFIX_ATOMIC_WORD(flag))`), a loop's names none.
    let mut bytes = b"wmfix-race-trace 1 dropped=0\n".to_vec();
    let scoped = flag::STRONG | flag::VALUE | flag::SCOPED | flag::DEVICE;
    // `flag.store(1, release)`: its release fence, the store, the site's access.
    bytes.extend(record(kind::FENCE, 1, 0, 0, 0, NO_SITE, 1));
    bytes.extend(record(kind::STORE, scoped, 0x40, 1, 0, NO_SITE, 1));
    bytes.extend(record(kind::ACCESS, 0, 0x40, 0, 0, 0, 1));
    // `while (flag.load(acquire) == 0)`: the load, its acquire, the loop's site.
    bytes.extend(record(kind::LOAD, scoped, 0x40, 1, 0, NO_SITE, 2));
    bytes.extend(record(kind::FENCE, 1, 0x40, 0, 0, NO_SITE, 2));
    bytes.extend(record(kind::SITE, 0, 0, 0, 0, 1, 2));
    // `lock.compare_exchange_strong(e, 1, acquire)` that took the lock, then its statement's site.
    bytes.extend(record(kind::RMW, 1 | flag::VALUE, 0x50, 0, 1, NO_SITE, 3));
    bytes.extend(record(kind::FENCE, 1, 0x50, 0, 0, NO_SITE, 3));
    bytes.extend(record(kind::ACCESS, 0, 0x50, 0, 0, 2, 3));
    // A load, then the application's own fence: the site after that names no access before it.
    bytes.extend(record(kind::LOAD, scoped, 0x40, 1, 0, NO_SITE, 4));
    bytes.extend(record(kind::FENCE, 1, 0, 0, 0, NO_SITE, 4));
    bytes.extend(record(kind::SITE, 0, 0, 0, 0, 1, 4));
    let sites = [SiteKind::Atomic; 3];
    let t = Trace::from_bytes(&bytes, &sites).unwrap();
    let of = |thread: u32| -> Vec<(Op, u64, Option<FenceId>)> {
        let mine = t.events.iter().filter(|e| e.thread.thread == thread);
        mine.map(|e| (e.op, e.addr, e.site)).collect()
    };
    let device = Scope::Device;
    let fence = (Op::Fence { scope: device }, 0, None);
    let (read, write) = (
        Op::Read {
            strong: Some(device),
            value: Some(1),
        },
        Op::Write {
            strong: Some(device),
            value: Some(1),
        },
    );
    assert_eq!(of(1), [fence, (write, 0x40, Some(FenceId(0)))]);
    assert_eq!(of(2), [(read, 0x40, Some(FenceId(1))), fence]);
    let rmw = Op::Rmw {
        scope: device,
        old: Some(0),
        new: Some(1),
    };
    assert_eq!(of(3), [(rmw, 0x50, Some(FenceId(2))), fence]);
    assert_eq!(
        of(4),
        [(read, 0x40, None), fence, (Op::Site, 0, Some(FenceId(1)))]
    );
}

//! Tests of the litmus engine's host side: layout, sizes, scratchpad, sources.

use super::*;
use crate::litmus::profile::Stress;

#[test]
fn the_scratchpad_starts_on_a_4_kib_boundary() {
    assert_eq!(align_up(0x7f00_0000_0100, 4096), 0x7f00_0000_1000);
    assert_eq!(align_up(0x7f00_0000_1000, 4096), 0x7f00_0000_1000);
    // The extra words cover the largest shift.
    assert!(4 * SCRATCH_ALIGN_WORDS as u64 >= 4096 - 256);
}

#[test]
fn stressing_blocks_run_the_runtimes_stress_loop() {
    // Not a copy: the runtime's header itself, its entry point, a sys-str table.
    assert!(SOURCE.contains("#include \"wmfix_stress.cuh\""));
    assert!(SOURCE.contains("wmfix::run_stress(&table"));
    assert!(SOURCE.contains("table.stress_kind = wmfix::kSysStress;"));
    assert!(
        !SOURCE.contains("volatile unsigned *loc"),
        "a loop of its own"
    );
    let runtime = crate::rewrite::runtime_headers::RUNTIME_FILES;
    for (name, text) in &SOURCES[1..] {
        assert!(runtime.contains(&(*name, *text)), "{name} differs");
    }
}

#[test]
fn auto_instances_fill_the_gpu_beside_the_stress() {
    // 132 SMs x 8 blocks: 1,056 resident blocks.
    assert_eq!(fitting_instances(1056, 8, 2), 1 << 17); // 1,024 test blocks + 8
    assert_eq!(fitting_instances(1056, 512, 2), 1 << 16); // 512 + 512
    assert_eq!(fitting_instances(1056, 1056, 2), BLOCK); // nothing fits: the engine says so
    assert_eq!(fitting_instances(u32::MAX, 0, 2), MAX_AUTO_INSTANCES);
    // --dual: one thread per instance, twice the instances in the same blocks.
    assert_eq!(fitting_instances(1056, 8, 1), 1 << 18);
    for (resident, stress) in [(1056, 8), (900, 100), (64, 1)] {
        let n = fitting_instances(resident, stress, 2);
        assert!(n.is_power_of_two());
        assert!(
            2 * n / BLOCK + stress <= resident,
            "{resident} {stress}: {n}"
        );
        assert!(
            4 * n / BLOCK + stress > resident,
            "{resident} {stress}: {n} is not the largest"
        );
    }
}

#[test]
fn sequences_are_encoded_as_the_runtime_parses_them() {
    // wmfix_profile.h's parse_sequence: bit i set = access i is a store.
    let b = |s: &str| sequence_bits(&Sequence::parse(s).unwrap());
    assert_eq!(b("ld"), (0, 1));
    assert_eq!(b("st"), (1, 1));
    assert_eq!(b("ld st st ld"), (0x6, 4));
    assert_eq!(b("st4"), (0xf, 4));
    assert_eq!(b("ld st ld st ld st"), (0b101010, 6));
}

#[test]
fn the_default_profile_parses() {
    let p = Stress::parse(DEFAULT_PROFILE, "default").unwrap();
    assert_eq!(p.sequence.text(), "ld st st ld");
    match locations(&p) {
        Locations::Random { from, count } => {
            assert_eq!(count, p.spread);
            assert_eq!(from[1], p.patch_size as u32);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn weak_outcomes_are_the_forbidden_ones_under_sc() {
    assert_eq!(weak_outcome(Test::Mp), 0b10);
    assert_eq!(weak_outcome(Test::Lb), 0b11);
    assert_eq!(weak_outcome(Test::Sb), 0b00);
}

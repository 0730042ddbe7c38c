//! The analysis on synthetic tables: patch finding, sequence and spread choice, raw counts,
//! profiles.

use super::analysis::*;
use super::choice::*;
use super::patch::*;
use super::raw::*;
use super::report::*;
use crate::litmus::profile::*;
use crate::litmus::vocabulary::*;
use std::collections::BTreeMap;
use std::path::Path;

/// xorshift64*: a deterministic generator for synthetic tables, no crate needed.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn percent(&mut self, p: u64) -> bool {
        self.below(100) < p
    }
}

/// One test's synthetic patch table `[d][l]` and its ground truth.
struct Table {
    counts: Vec<Vec<u64>>,
    /// `[d][region]`: which P-word regions are hot at distance d.
    hot: Vec<Vec<bool>>,
    /// Isolated hot locations planted in cold regions (one-location epsilon-patches).
    spurious: usize,
}

/// How a synthetic table is filled.
struct Shape {
    distances: usize,
    locations: usize,
    /// Region size (the chip's patch size).
    p: usize,
    /// Percent of cold locations that show noise, and its largest value (kept at or below
    /// the epsilon of the test, 3).
    noise: (u64, u64),
    /// Percent of cold regions whose middle location shows an isolated spike above epsilon.
    spikes: u64,
}

/// Fills a table: at each distance the regions `pattern(block)` are hot, where the block is
/// `d / p` (so the hot regions change every p distances, as on Titan). Hot locations show a
/// rate that is consistent within a region (+-25%) and varies between regions.
fn table(rng: &mut Rng, s: &Shape, pattern: &dyn Fn(&mut Rng, usize) -> Vec<bool>) -> Table {
    let regions = s.locations / s.p;
    let mut counts = vec![vec![0u64; s.locations]; s.distances];
    let mut hot = Vec::new();
    let mut spurious = 0;
    let mut block_pattern = Vec::new();
    for (d, row) in counts.iter_mut().enumerate() {
        if d % s.p == 0 {
            block_pattern = pattern(rng, d / s.p);
            assert_eq!(block_pattern.len(), regions);
        }
        hot.push(block_pattern.clone());
        for (cells, &is_hot) in row.chunks_mut(s.p).zip(&block_pattern) {
            let base = 20 + rng.below(180);
            for (i, c) in cells.iter_mut().enumerate() {
                *c = if is_hot {
                    base * (75 + rng.below(51)) / 100
                } else if i == s.p / 2 && rng.percent(s.spikes) {
                    spurious += 1;
                    5 + rng.below(20)
                } else if s.noise.0 > 0 && rng.percent(s.noise.0) {
                    rng.below(s.noise.1 + 1)
                } else {
                    0
                };
            }
        }
    }
    Table {
        counts,
        hot,
        spurious,
    }
}

/// The epsilon-patch histogram the ground truth implies: each maximal run of k hot regions
/// is one patch of k * p locations (a run over every region is a universal row), and each
/// spike is a patch of one location.
fn expected(t: &Table, p: usize) -> (BTreeMap<usize, usize>, usize) {
    let mut sizes = BTreeMap::new();
    let mut universal = 0;
    for row in &t.hot {
        let mut runs = Vec::new();
        let mut k = 0;
        for &h in row.iter().chain([false].iter()) {
            if h {
                k += 1;
            } else if k > 0 {
                runs.push(k);
                k = 0;
            }
        }
        if runs == [row.len()] {
            universal += 1;
        } else {
            for k in runs {
                *sizes.entry(k * p).or_insert(0) += 1;
            }
        }
    }
    if t.spurious > 0 {
        *sizes.entry(1).or_insert(0) += t.spurious;
    }
    (sizes, universal)
}

/// Titan (Fig. 3a): nothing for d < 32, then each 32-word region hot with probability 40%,
/// the choice changing every 32 distances; noise at or below 3 and a few isolated spikes.
fn titan_shape(distances: usize, locations: usize) -> Shape {
    Shape {
        distances,
        locations,
        p: 32,
        noise: (10, 3),
        spikes: 3,
    }
}

/// Each region hot with probability 40% (neighbours may both be hot and merge), or with
/// `scattered`, 50% unless its left neighbour is hot (no merging). At least one region.
fn titan_pattern(rng: &mut Rng, block: usize, regions: usize, scattered: bool) -> Vec<bool> {
    if block == 0 {
        return vec![false; regions];
    }
    let mut v = vec![false; regions];
    for r in 0..regions {
        v[r] = if scattered {
            (r == 0 || !v[r - 1]) && rng.percent(50)
        } else {
            rng.percent(40)
        };
    }
    if !v.contains(&true) {
        v[rng.below(regions as u64) as usize] = true;
    }
    v
}

fn titan(seed: u64, distances: usize, locations: usize, scattered: bool) -> PerTest<Table> {
    let mut rng = Rng::new(seed);
    let shape = titan_shape(distances, locations);
    let regions = locations / 32;
    PerTest::from_fn(|_| {
        table(&mut rng, &shape, &|r, b| {
            titan_pattern(r, b, regions, scattered)
        })
    })
}

/// 64-word patches that never touch: one region, or two apart.
fn scattered_64(rng: &mut Rng) -> Vec<bool> {
    const PATTERNS: [[bool; 4]; 7] = [
        [true, false, false, false],
        [false, true, false, false],
        [false, false, true, false],
        [false, false, false, true],
        [true, false, true, false],
        [true, false, false, true],
        [false, true, false, true],
    ];
    PATTERNS[rng.below(7) as usize].to_vec()
}

/// GTX 980 (Fig. 3c), D = L = 256: MP shows a little noise (0 to 3) everywhere and nothing
/// else; LB is silent for d < 64, hot everywhere for 64 <= d < 128 and shows 64-word
/// patches from d = 128; SB shows 64-word patches from d = 64.
fn gtx980(seed: u64) -> PerTest<Table> {
    let mut rng = Rng::new(seed);
    let quiet = |noise| Shape {
        distances: 256,
        locations: 256,
        p: 64,
        noise,
        spikes: 0,
    };
    let mp = table(&mut rng, &quiet((100, 3)), &|_, _| vec![false; 4]);
    let lb = table(&mut rng, &quiet((0, 0)), &|r, b| match b {
        0 => vec![false; 4],
        1 => vec![true; 4],
        _ => scattered_64(r),
    });
    let sb = table(&mut rng, &quiet((0, 0)), &|r, b| match b {
        0 => vec![false; 4],
        _ => scattered_64(r),
    });
    PerTest { mp, lb, sb }
}

fn counts_of(t: &PerTest<Table>) -> PerTest<Vec<Vec<u64>>> {
    t.map(|_, t| t.counts.clone())
}

fn scores(mp: u64, lb: u64, sb: u64) -> PerTest<u64> {
    PerTest { mp, lb, sb }
}

fn seq(s: &str) -> Sequence {
    Sequence::parse(s).unwrap()
}

// --- patch finding -------------------------------------------------------------------

#[test]
fn epsilon_patches_are_maximal_runs_above_epsilon() {
    assert_eq!(
        epsilon_patches(&[0, 5, 5, 0, 4, 4, 4], 3),
        vec![(1, 2), (4, 3)]
    );
    // More than epsilon: a count equal to epsilon is noise.
    assert_eq!(epsilon_patches(&[3, 3, 4, 3], 3), vec![(2, 1)]);
    assert_eq!(epsilon_patches(&[9, 9, 0, 9], 0), vec![(0, 2), (3, 1)]);
    assert_eq!(epsilon_patches(&[0, 0], 0), vec![]);
}

#[test]
fn neighbouring_hot_regions_merge_and_alignment_is_reported() {
    let row = |hot: std::ops::Range<usize>| -> Vec<u64> {
        (0..128)
            .map(|l| if hot.contains(&l) { 50 } else { 0 })
            .collect()
    };
    // Two neighbouring aligned 32-word regions, one aligned region, one unaligned run, and a
    // row hot everywhere.
    let table = vec![row(0..64), row(32..64), row(40..72), row(0..128)];
    let quiet = vec![vec![0; 128]; 4];
    let a = critical_patch_size(
        &PerTest {
            mp: table,
            lb: quiet.clone(),
            sb: quiet,
        },
        3,
    )
    .unwrap();
    let mp = &a.tests.mp;
    assert_eq!(mp.sizes, BTreeMap::from([(32, 2), (64, 1)]));
    assert_eq!(mp.patches, 3);
    assert_eq!(mp.universal_rows, 1);
    assert_eq!(mp.most, vec![32]);
    assert_eq!(mp.size, Some(32));
    assert_eq!(mp.aligned, 1, "32..64 is aligned, 40..72 is not");
    assert_eq!(a.critical, Some(32));
    assert_eq!(a.abstained, vec![Test::Lb, Test::Sb]);
}

#[test]
fn titan_style_tables_give_critical_patch_size_32() {
    let t = titan(7, 256, 256, false);
    let a = critical_patch_size(&counts_of(&t), 3).unwrap();
    for test in Test::ALL {
        let (sizes, universal) = expected(t.get(test), 32);
        let tp = a.tests.get(test);
        assert_eq!(tp.sizes, sizes, "{test}");
        assert_eq!(tp.universal_rows, universal, "{test}");
        assert_eq!(tp.size, Some(32), "{test}: {:?}", tp.sizes);
        // Every 32-word patch sits on a region boundary.
        assert_eq!(tp.aligned, tp.sizes[&32], "{test}");
        // Merged neighbours and spikes exist, so the vote is not trivial.
        assert!(tp.sizes.keys().any(|&s| s > 32), "{test}: {:?}", tp.sizes);
        assert!(tp.sizes.contains_key(&1), "{test}: {:?}", tp.sizes);
    }
    // Below d = 32 only isolated spikes.
    assert!(
        t.mp.counts[..32]
            .iter()
            .all(|r| epsilon_patches(r, 3).iter().all(|&(_, n)| n == 1))
    );
    assert_eq!(a.critical, Some(32));
    assert_eq!(a.fallback, None);
    assert!(a.abstained.is_empty());
    assert_eq!(a.chosen(), Some(32));
    assert!(
        a.verdict()
            .starts_with("critical patch size: 32 (MP 32, LB 32, SB 32")
    );
}

#[test]
fn gtx980_style_tables_give_64_once_epsilon_filters_the_noise() {
    let t = gtx980(11);
    let counts = counts_of(&t);
    let a = critical_patch_size(&counts, 3).unwrap();
    assert_eq!(a.tests.mp.patches, 0, "MP's noise never exceeds 3");
    assert_eq!(a.abstained, vec![Test::Mp]);
    assert_eq!(
        a.tests.lb.universal_rows, 64,
        "LB is hot everywhere for 64 <= d < 128"
    );
    for test in [Test::Lb, Test::Sb] {
        let (sizes, universal) = expected(t.get(test), 64);
        assert_eq!(a.tests.get(test).sizes, sizes);
        assert_eq!(a.tests.get(test).universal_rows, universal);
        assert_eq!(a.tests.get(test).size, Some(64));
    }
    assert_eq!(a.critical, Some(64));
    assert!(
        a.verdict().contains("MP showed no epsilon-patch"),
        "{}",
        a.verdict()
    );

    // Without a threshold the noise makes MP's patches one location long: no agreement.
    let a0 = critical_patch_size(&counts, 0).unwrap();
    assert_eq!(a0.tests.mp.size, Some(1), "{:?}", a0.tests.mp.most);
    assert_eq!(a0.tests.lb.size, Some(64));
    assert_eq!(a0.critical, None);
    // LB and SB outvote MP.
    assert_eq!(a0.fallback, Some(64));
    assert_eq!(a0.chosen(), Some(64));
    assert!(a0.verdict().contains("disagree"), "{}", a0.verdict());
}

#[test]
fn disagreeing_tests_give_no_critical_size_and_a_fallback() {
    let t = titan(5, 256, 256, false);
    let mut rng = Rng::new(99);
    let sb = table(
        &mut rng,
        &Shape {
            distances: 256,
            locations: 256,
            p: 64,
            noise: (10, 3),
            spikes: 0,
        },
        &|r, b| {
            if b == 0 {
                vec![false; 4]
            } else {
                scattered_64(r)
            }
        },
    );
    let counts = PerTest {
        mp: t.mp.counts.clone(),
        lb: t.lb.counts.clone(),
        sb: sb.counts,
    };
    let a = critical_patch_size(&counts, 3).unwrap();
    assert_eq!(
        [a.tests.mp.size, a.tests.lb.size, a.tests.sb.size],
        [Some(32), Some(32), Some(64)]
    );
    assert_eq!(a.critical, None);
    assert_eq!(a.fallback, Some(32), "two tests name 32");
    let v = a.verdict();
    assert!(
        v.starts_with("no critical patch size: the tests disagree (MP 32, LB 32, SB 64)"),
        "{v}"
    );
}

#[test]
fn ties_within_a_test_and_fallback_tie_breaks() {
    let row = |runs: &[(usize, usize)]| -> Vec<u64> {
        (0..256)
            .map(|l| {
                if runs.iter().any(|&(s, n)| l >= s && l < s + n) {
                    9
                } else {
                    0
                }
            })
            .collect()
    };
    let quiet = vec![vec![0; 256]; 2];
    // MP: one patch of 32 and one of 64 (tied); LB and SB: 64.
    let mp = vec![row(&[(0, 32), (128, 64)]), row(&[])];
    let lb = vec![row(&[(64, 64)]), row(&[])];
    let a = critical_patch_size(
        &PerTest {
            mp: mp.clone(),
            lb: lb.clone(),
            sb: lb.clone(),
        },
        3,
    )
    .unwrap();
    assert_eq!(a.tests.mp.most, vec![32, 64]);
    assert_eq!(a.tests.mp.size, None);
    assert_eq!(a.critical, None, "a tied test names no single size");
    assert_eq!(a.fallback, Some(64), "64: three votes, 32: one");
    assert!(a.verdict().contains("MP tied (32, 64)"), "{}", a.verdict());

    // MP: two 32s; LB: two 64s; SB silent: one vote each, two patches each -> the smaller.
    let a = critical_patch_size(
        &PerTest {
            mp: vec![row(&[(0, 32), (64, 32)]), row(&[])],
            lb: vec![row(&[(0, 64)]), row(&[(128, 64)])],
            sb: quiet.clone(),
        },
        3,
    )
    .unwrap();
    assert_eq!(a.critical, None);
    assert_eq!(a.fallback, Some(32));
    // The same, but LB has three 64s: more patches win the tie of votes.
    let a = critical_patch_size(
        &PerTest {
            mp: vec![row(&[(0, 32), (64, 32)]), row(&[])],
            lb: vec![row(&[(0, 64), (128, 64)]), row(&[(128, 64)])],
            sb: quiet.clone(),
        },
        3,
    )
    .unwrap();
    assert_eq!(a.fallback, Some(64));

    // No patch anywhere: no size at all.
    let a = critical_patch_size(
        &PerTest {
            mp: quiet.clone(),
            lb: quiet.clone(),
            sb: quiet,
        },
        3,
    )
    .unwrap();
    assert_eq!((a.critical, a.fallback, a.chosen()), (None, None, None));
    assert_eq!(a.abstained.len(), 3);
    assert!(a.verdict().contains("no epsilon-patch in any test"));
}

#[test]
fn malformed_patch_tables_are_errors() {
    let ok = vec![vec![0u64; 4]; 2];
    let ragged = vec![vec![0u64; 4], vec![0u64; 3]];
    let e = critical_patch_size(
        &PerTest {
            mp: ok.clone(),
            lb: ragged,
            sb: ok.clone(),
        },
        3,
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("LB[1] has 3 entries, expected 4"),
        "{e}"
    );
    assert!(
        critical_patch_size(
            &PerTest {
                mp: vec![],
                lb: vec![],
                sb: vec![]
            },
            3
        )
        .is_err()
    );
}

// --- sequences -----------------------------------------------------------------------

#[test]
fn there_are_62_sequences_of_length_1_to_5() {
    let all = all_sequences(5);
    assert_eq!(all.len(), 62);
    for n in 1..=10 {
        assert_eq!(all_sequences(n).len(), (1 << (n + 1)) - 2);
    }
    let texts: Vec<String> = all.iter().take(7).map(Sequence::text).collect();
    assert_eq!(
        texts,
        ["ld", "st", "ld ld", "ld st", "st ld", "st st", "ld ld ld"]
    );
    assert!(all.windows(2).all(|w| w[0] < w[1]), "sorted and distinct");
    assert_eq!(all.last().unwrap().text(), "st st st st st");
    for len in 1..=5 {
        assert_eq!(all.iter().filter(|s| s.len() == len).count(), 1 << len);
    }
    // Table 2's sequences are among them.
    for s in ["ld4 st", "ld3 st ld", "ld st2 ld", "st2 ld2", "ld st"] {
        assert!(all.contains(&seq(s)), "{s}");
    }
}

#[test]
fn sequence_text_and_compact_forms() {
    let s = seq("ld st st ld");
    assert_eq!(s.compact(), "ld st2 ld");
    assert_eq!(s.to_string(), "ld st2 ld");
    assert_eq!(seq("ld st2 ld"), s);
    assert_eq!(seq("  ld4   st ").text(), "ld ld ld ld st");
    assert_eq!(seq("st2 ld2").text(), "st st ld ld");
    assert_eq!(seq("ld1 ld1").compact(), "ld2");
    for s in all_sequences(5) {
        assert_eq!(seq(&s.text()), s);
        assert_eq!(seq(&s.compact()), s);
    }
    for bad in [
        "",
        "  ",
        "lx",
        "ld st x",
        "ld0",
        "ld-1",
        "ldx",
        "st33",
        "ld16 st16 ld",
    ] {
        assert!(Sequence::parse(bad).is_err(), "{bad:?}");
    }
    assert_eq!(seq("ld16 st16").len(), 32);
    assert_eq!(
        serde_json::to_string(&seq("ld3 st")).unwrap(),
        "\"ld ld ld st\""
    );
    let back: Sequence = serde_json::from_str("\"st2 ld\"").unwrap();
    assert_eq!(back, seq("st st ld"));
    assert!(serde_json::from_str::<Sequence>("\"ld lt\"").is_err());
}

// --- Pareto choice -------------------------------------------------------------------

#[test]
fn dominated_candidates_drop_out() {
    let c = choose(&[
        (1, scores(5, 5, 5)),
        (2, scores(5, 5, 4)),
        (3, scores(1, 1, 1)),
    ])
    .unwrap();
    assert_eq!(c.pareto.len(), 1);
    assert_eq!((c.chosen, c.decided_by), (1, Decision::Unique));
    // Equal scores do not dominate each other: both stay, the first in order wins.
    let c = choose(&[(4, scores(5, 5, 5)), (2, scores(5, 5, 5))]).unwrap();
    assert_eq!(c.pareto.iter().map(|x| x.key).collect::<Vec<_>>(), [2, 4]);
    assert_eq!((c.chosen, c.decided_by), (2, Decision::FirstInOrder));
    assert!(choose::<usize>(&[]).is_err());
    assert!(choose(&[(1, scores(1, 1, 1)), (1, scores(2, 2, 2))]).is_err());
}

#[test]
fn a_tie_is_broken_by_the_two_of_three_rule() {
    let a = seq("ld st");
    let b = seq("st ld");
    let c = best_sequence(&[
        (a.clone(), scores(10, 8, 5)),
        (b.clone(), scores(7, 9, 6)),
        (seq("ld"), scores(6, 7, 4)),
    ])
    .unwrap();
    assert_eq!(
        c.pareto
            .iter()
            .map(|x| (&x.key, x.wins))
            .collect::<Vec<_>>(),
        [(&a, 0), (&b, 1)]
    );
    assert_eq!(c.chosen, b, "st ld is more effective for LB and SB");
    assert_eq!(c.decided_by, Decision::TwoOfThree);
}

/// Titan's Tab. 3: each test has its own champion, the chosen ld st2 ld is best for none
/// but beats each champion on the two tests it is not champion of. 58 other sequences
/// score below 50k everywhere.
fn titan_sequence_scores(seed: u64) -> Vec<(Sequence, PerTest<u64>)> {
    let planted = [
        ("ld3 st ld", scores(153_000, 40_000, 50_000)),
        ("st2 ld3", scores(60_000, 98_000, 55_000)),
        ("st2 ld", scores(70_000, 45_000, 138_000)),
        ("ld st2 ld", scores(104_000, 64_000, 93_000)),
    ];
    let mut rng = Rng::new(seed);
    all_sequences(5)
        .into_iter()
        .map(|s| {
            let p = planted.iter().find(|(t, _)| seq(t) == s);
            let sc = match p {
                Some((_, sc)) => sc.clone(),
                // Stores-only sequences are the weakest, as the paper observes.
                None if s.accesses().iter().all(|&a| a == Access::St) => {
                    PerTest::from_fn(|_| 80 + rng.below(600))
                }
                None => PerTest::from_fn(|_| 1_000 + rng.below(49_000)),
            };
            (s, sc)
        })
        .collect()
}

#[test]
fn titan_style_sequence_choice_is_the_balanced_one() {
    let c = best_sequence(&titan_sequence_scores(3)).unwrap();
    let keys: Vec<String> = c.pareto.iter().map(|x| x.key.compact()).collect();
    // In sequence order: shorter first, then ld before st.
    assert_eq!(keys, ["st2 ld", "ld st2 ld", "ld3 st ld", "st2 ld3"]);
    assert_eq!(c.chosen, seq("ld st2 ld"));
    assert_eq!(c.decided_by, Decision::TwoOfThree);
    for t in Test::ALL {
        let r = c.ranking(t);
        assert_eq!(r.len(), 62);
        assert_ne!(r[0].1, c.chosen, "best for no single test");
        assert!(r.windows(2).all(|w| w[0].2 >= w[1].2));
        // The bottom is stores only.
        assert!(r[61].1.accesses().iter().all(|&a| a == Access::St));
    }
    assert_eq!(c.ranking(Test::Mp)[0].1, seq("ld3 st ld"));
    assert_eq!(c.ranking(Test::Lb)[0].1, seq("st2 ld3"));
    assert_eq!(c.ranking(Test::Sb)[0].1, seq("st2 ld"));
}

#[test]
fn cycles_fall_back_to_most_wins_then_balance_then_order() {
    // (9,7,1) beats two others for two tests but not (3,9,1): no two-of-three winner.
    let c = choose(&[
        (1, scores(3, 9, 1)),
        (2, scores(7, 2, 3)),
        (3, scores(1, 6, 8)),
        (4, scores(9, 7, 1)),
    ])
    .unwrap();
    assert_eq!(c.pareto.len(), 4);
    assert_eq!(
        c.pareto.iter().map(|x| x.wins).collect::<Vec<_>>(),
        [1, 1, 1, 2]
    );
    assert_eq!((c.chosen, c.decided_by), (4, Decision::MostTwoOfThreeWins));

    // A three-cycle, one win each; relative to each test's best, 2 has the most. SB counts
    // are larger: by raw sums 3 would win.
    let c = choose(&[
        (1, scores(9, 2, 100)),
        (2, scores(1, 9, 200)),
        (3, scores(2, 1, 800)),
    ])
    .unwrap();
    assert!(c.pareto.iter().all(|x| x.wins == 1));
    assert_eq!((c.chosen, c.decided_by), (2, Decision::Balanced));

    // A symmetric cycle: all equal on every rule, the first in order.
    let c = choose(&[
        (3, scores(3, 2, 1)),
        (2, scores(1, 3, 2)),
        (5, scores(2, 1, 3)),
    ])
    .unwrap();
    assert_eq!((c.chosen, c.decided_by), (2, Decision::FirstInOrder));
}

// --- spread --------------------------------------------------------------------------

/// Score per spread, m = 1..64: a peak of 10000 at `peak`, `second` (if any) at 9000, and
/// a U-shape well below elsewhere (higher at small and at large spreads).
fn spread_scores(rng: &mut Rng, peak: usize, second: Option<usize>) -> Vec<u64> {
    (1..=64)
        .map(|m| {
            if m == peak {
                10_000
            } else if Some(m) == second {
                9_000
            } else {
                6_000 / (m.abs_diff(2) as u64 + 1) + 40 * m as u64 + rng.below(100)
            }
        })
        .collect()
}

#[test]
fn gtx980_style_spread_is_2() {
    let mut rng = Rng::new(4);
    let s = PerTest::from_fn(|_| spread_scores(&mut rng, 2, None));
    let c = best_spread(&s).unwrap();
    assert_eq!((c.chosen, c.decided_by), (2, Decision::Unique));
    assert_eq!(c.all.len(), 64);
    assert_eq!(c.all[0].0, 1);
}

#[test]
fn k20_style_spread_tie_is_broken_two_of_three() {
    let mut rng = Rng::new(5);
    // 2 is best for MP and LB, 3 for SB (2 second there).
    let s = PerTest {
        mp: spread_scores(&mut rng, 2, None),
        lb: spread_scores(&mut rng, 2, None),
        sb: spread_scores(&mut rng, 3, Some(2)),
    };
    let c = best_spread(&s).unwrap();
    assert_eq!(c.pareto.iter().map(|x| x.key).collect::<Vec<_>>(), [2, 3]);
    assert_eq!((c.chosen, c.decided_by), (2, Decision::TwoOfThree));
    // And the other way round.
    let s = PerTest {
        mp: spread_scores(&mut rng, 3, Some(2)),
        lb: spread_scores(&mut rng, 3, Some(2)),
        sb: spread_scores(&mut rng, 2, None),
    };
    assert_eq!(best_spread(&s).unwrap().chosen, 3);
    let bad = PerTest {
        mp: vec![1, 2],
        lb: vec![1],
        sb: vec![1, 2],
    };
    assert!(best_spread(&bad).is_err());
}

// --- raw counts, analysis, profile ---------------------------------------------------

fn params(distances: usize, locations: usize, max_spread: usize) -> Params {
    Params {
        gpu: "Synthetic \"Titan\"".into(),
        driver: "0.0".into(),
        date: "2026-11-22".into(),
        command: "synthetic (tests)".into(),
        distances,
        locations,
        executions: 1000,
        epsilon: 3,
        max_sequence_length: 5,
        max_spread,
    }
}

/// A Titan-style run with all three phases (D, L as given, P = 32, M = 16).
fn titan_raw(seed: u64, distances: usize, locations: usize) -> RawCounts {
    let t = titan(seed, distances, locations, true);
    let entries = titan_sequence_scores(seed);
    let mut rng = Rng::new(seed + 1);
    let mut spread = PerTest::from_fn(|_| spread_scores(&mut rng, 2, None));
    for v in [&mut spread.mp, &mut spread.lb, &mut spread.sb] {
        v.truncate(16);
    }
    RawCounts {
        format: FORMAT,
        params: params(distances, locations, 16),
        patch: Some(PatchPhase {
            sequence: seq("st ld"),
            seconds: Some(12.5),
            counts: counts_of(&t),
        }),
        sequence: Some(SequencePhase {
            patch_size: 32,
            locations: (0..locations).step_by(32).collect(),
            sequences: entries.iter().map(|e| e.0.clone()).collect(),
            scores: PerTest::from_fn(|t| entries.iter().map(|e| *e.1.get(t)).collect()),
            counts: None,
            seconds: None,
        }),
        spread: Some(SpreadPhase {
            patch_size: 32,
            sequence: seq("ld st2 ld"),
            scores: spread,
            counts: None,
            seconds: None,
        }),
    }
}

#[test]
fn raw_counts_round_trip_with_one_line_per_row() {
    let raw = titan_raw(2, 64, 128);
    raw.validate().unwrap();
    let json = raw.to_json();
    let back: RawCounts = serde_json::from_str(&json).unwrap();
    assert_eq!(back, raw);
    // One line per distance in each patch table.
    let rows = json
        .lines()
        .filter(|l| {
            let l = l.trim().trim_end_matches(',');
            l.starts_with('[') && l.ends_with(']') && l.matches(',').count() == 127
        })
        .count();
    assert_eq!(rows, 3 * 64, "{}", &json[..2000]);
    assert!(json.contains("\"sequences\": [\"ld\",\"st\",\"ld ld\","));
    assert!(json.contains("\"gpu\": \"Synthetic \\\"Titan\\\"\""));
    // Strings with brackets and commas are left alone.
    let odd = inline_flat_arrays(
        "{\n  \"a\": [\n    \"x, [y]\",\n    \"z\"\n  ],\n  \"b\": [\n    [\n      1,\n      2\n    ]\n  ]\n}",
    );
    assert_eq!(
        odd,
        "{\n  \"a\": [\"x, [y]\",\"z\"],\n  \"b\": [\n    [1,2]\n  ]\n}"
    );
}

#[test]
fn validation_names_what_is_wrong() {
    let good = titan_raw(2, 64, 128);
    let check = |f: &dyn Fn(&mut RawCounts), want: &str| {
        let mut raw = good.clone();
        f(&mut raw);
        let e = raw.validate().unwrap_err();
        assert!(e.contains(want), "{e} does not contain {want}");
    };
    check(&|r| r.format = 2, "format 2 is not supported");
    check(
        &|r| {
            r.patch.as_mut().unwrap().counts.lb[3].pop();
        },
        "patch.counts.LB[3] has 127 entries, expected 128",
    );
    check(
        &|r| {
            r.patch.as_mut().unwrap().counts.sb.pop();
        },
        "patch.counts.SB has 63 rows, expected 64",
    );
    check(
        &|r| {
            let s = r.sequence.as_mut().unwrap();
            s.sequences[1] = s.sequences[0].clone();
        },
        "\"ld\" appears twice",
    );
    check(
        &|r| {
            r.sequence.as_mut().unwrap().scores.mp.pop();
        },
        "sequence.scores.MP has 61 scores for 62 sequences",
    );
    check(
        &|r| r.params.max_sequence_length = 4,
        "longer than params.max_sequence_length = 4",
    );
    check(
        &|r| r.sequence.as_mut().unwrap().locations.push(128),
        "sequence.locations: 128",
    );
    check(
        &|r| {
            r.spread.as_mut().unwrap().scores.sb.push(1);
        },
        "spread.scores.SB has 17 scores, expected params.max_spread = 16",
    );
    check(
        &|r| r.params.max_spread = 65,
        "the runtime stresses 1 to 64",
    );
    check(
        &|r| {
            r.patch = None;
            r.sequence = None;
            r.spread = None;
        },
        "no phase",
    );
    check(
        &|r| r.spread.as_mut().unwrap().patch_size = 0,
        "spread.patch_size = 0",
    );

    // Per-(d, l) counts must add up to the scores.
    let mut raw = good.clone();
    let ph = raw.sequence.as_mut().unwrap();
    ph.counts = Some(PerTest::from_fn(|t| {
        ph.scores
            .get(t)
            .iter()
            .map(|&s| {
                let mut table = vec![vec![0u64; 4]; 64];
                table[5][2] = s;
                table
            })
            .collect()
    }));
    raw.validate().unwrap();
    raw.sequence.as_mut().unwrap().counts.as_mut().unwrap().lb[7][0][0] += 1;
    let e = raw.validate().unwrap_err();
    assert!(
        e.contains("sequence.counts.LB[7] (\"ld ld st\") sums to"),
        "{e}"
    );
    let mut raw = good.clone();
    let ph = raw.spread.as_mut().unwrap();
    ph.counts = Some(ph.scores.map(|_, v| {
        v.iter()
            .map(|&s| {
                let mut row = vec![0; 64];
                row[0] = s;
                row
            })
            .collect()
    }));
    raw.validate().unwrap();
    raw.spread.as_mut().unwrap().counts.as_mut().unwrap().mp[1][3] = 1;
    let e = raw.validate().unwrap_err();
    assert!(e.contains("spread.counts.MP[1] (spread 2) sums to"), "{e}");

    // Unknown keys are refused (a typo would otherwise lose a phase).
    let mut v: serde_json::Value = serde_json::from_str(&good.to_json()).unwrap();
    v["spreads"] = serde_json::json!({});
    let e = serde_json::from_value::<RawCounts>(v).unwrap_err();
    assert!(e.to_string().contains("unknown field `spreads`"), "{e}");
}

#[test]
fn analysis_of_a_titan_style_run() {
    let raw = titan_raw(2, 256, 256);
    let a = analyse(&raw, None).unwrap();
    assert_eq!(a.patch.as_ref().unwrap().critical, Some(32));
    assert_eq!(a.sequence.as_ref().unwrap().chosen, seq("ld st2 ld"));
    assert_eq!(a.spread.as_ref().unwrap().chosen, 2);
    assert!(a.warnings.is_empty(), "{:?}", a.warnings);
    let p = &a.profile;
    assert_eq!(
        (p.patch_size, p.sequence.clone(), p.spread),
        (Some(32), Some(seq("ld st st ld")), Some(2))
    );
    assert_eq!(p.name, "synthetic-titan");

    let r = report(&raw, &a);
    assert!(
        r.contains("critical patch size: 32 (MP 32, LB 32, SB 32)"),
        "{r}"
    );
    assert!(
        r.contains("chosen sequence: ld st2 ld (\"ld st st ld\"): more effective than each other"),
        "{r}"
    );
    assert!(
        r.contains("chosen spread: 2: the only Pareto-optimal one"),
        "{r}"
    );
    // Tab. 3: the champions at rank 1, the chosen one marked, the last rank 62.
    assert!(r.contains("  1 ld3 st ld      153k"), "{r}");
    assert!(r.contains("  1 st2 ld3         98k"), "{r}");
    assert!(r.contains(" 62 st"), "{r}");
    assert!(r.contains("ld st2 ld      104k *"), "{r}");
    assert_eq!(r.matches("k *").count(), 3, "once per column:\n{r}");
    assert!(r.contains("    2     10000     10000     10000 *\n"), "{r}");
}

#[test]
fn warnings_for_phases_run_with_other_parameters() {
    let mut raw = titan_raw(2, 64, 128);
    raw.sequence.as_mut().unwrap().patch_size = 64;
    raw.spread.as_mut().unwrap().sequence = seq("ld st");
    let a = analyse(&raw, None).unwrap();
    assert_eq!(a.warnings.len(), 2, "{:?}", a.warnings);
    assert!(a.warnings[0].contains("sequence phase was run with patch size 64"));
    assert!(a.warnings[1].contains("spread phase was run with sequence ld st"));
    assert!(report(&raw, &a).contains("\nwmfix: warning: the sequence phase"));
}

#[test]
fn partial_runs_fill_what_they_can() {
    // Sequence finding only: the patch size it was run with, no spread.
    let mut raw = titan_raw(2, 64, 128);
    raw.patch = None;
    raw.spread = None;
    let a = analyse(&raw, None).unwrap();
    assert_eq!(a.profile.patch_size, Some(32));
    assert!(
        a.profile.notes[0]
            .contains("patch finding was not run; the patch size the sequence phase was run with")
    );
    assert_eq!(a.profile.spread, None);
    let toml = a.profile.to_toml();
    assert!(toml.contains("# spread: not measured"));
    assert!(!toml.contains("\nspread ="));
    // Patch finding only, with a high epsilon: no size at all.
    let mut raw = titan_raw(2, 64, 128);
    raw.sequence = None;
    raw.spread = None;
    let a = analyse(&raw, Some(1_000_000)).unwrap();
    assert_eq!(a.profile.patch_size, None);
    assert!(a.profile.to_toml().contains("# patch_size: not measured"));
    // All-zero sequence scores: a warning that the choice means nothing.
    let mut raw = titan_raw(2, 64, 128);
    let s = raw.sequence.as_mut().unwrap();
    s.scores = s.scores.map(|_, v| vec![0; v.len()]);
    let a = analyse(&raw, None).unwrap();
    assert_eq!(a.sequence.unwrap().chosen, seq("ld"));
    assert!(
        a.warnings
            .iter()
            .any(|w| w.contains("no weak behaviour at all in the sequence phase"))
    );
}

#[test]
fn epsilon_override_on_a_980_style_run() {
    let t = gtx980(11);
    let raw = RawCounts {
        format: FORMAT,
        params: params(256, 256, 64),
        patch: Some(PatchPhase {
            sequence: seq("st ld"),
            seconds: None,
            counts: counts_of(&t),
        }),
        sequence: None,
        spread: None,
    };
    let a = analyse(&raw, None).unwrap();
    assert_eq!(a.profile.patch_size, Some(64));
    assert!(a.profile.notes[0].starts_with("epsilon = 3; critical patch size: 64"));
    let a = analyse(&raw, Some(0)).unwrap();
    assert_eq!(a.profile.patch_size, Some(64));
    assert!(
        a.profile.notes[0].starts_with("FALLBACK"),
        "{}",
        a.profile.notes[0]
    );
}

/// The keys and values of a profile, read the way runtime-cu's parser reads them: every
/// line is empty, a comment, or `key = value` with an integer or a string without quotes
/// inside; a comment is cut at a `#` outside a string.
fn runtime_parse(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let mut in_str = false;
        let mut cut = line.len();
        for (i, c) in line.char_indices() {
            if c == '"' {
                in_str = !in_str;
            }
            if c == '#' && !in_str {
                cut = i;
                break;
            }
        }
        let line = line[..cut].trim();
        if line.is_empty() {
            continue;
        }
        let (k, v) = line.split_once('=').expect("key = value");
        let (k, v) = (k.trim(), v.trim());
        assert!(
            ["name", "description", "patch_size", "sequence", "spread"].contains(&k),
            "{k}"
        );
        let quoted = v.len() >= 2 && v.starts_with('"') && v.ends_with('"');
        if quoted {
            assert!(!v[1..v.len() - 1].contains(['"', '\\']), "{v}");
        } else {
            assert!(v.parse::<u64>().is_ok(), "{k} = {v}");
        }
        out.insert(k.to_string(), v.trim_matches('"').to_string());
    }
    out
}

#[test]
fn profile_toml_is_in_the_runtimes_subset_and_valid_toml() {
    let raw = titan_raw(2, 64, 128);
    let a = analyse(&raw, None).unwrap();
    let text = a.profile.to_toml();
    let kv = runtime_parse(&text);
    assert_eq!(kv["patch_size"], "32");
    assert_eq!(kv["sequence"], "ld st st ld");
    assert_eq!(kv["spread"], "2");
    assert_eq!(kv["name"], "synthetic-titan");
    assert!(kv["description"].contains("Synthetic 'Titan'"), "{text}");
    let t: toml::Table = text.parse().unwrap();
    assert_eq!(t["patch_size"].as_integer(), Some(32));
    assert_eq!(t["sequence"].as_str(), Some("ld st st ld"));
    assert_eq!(t["spread"].as_integer(), Some(2));
    assert!(
        text.contains("# critical patch size")
            || text.contains("# epsilon = 3; critical patch size: 32"),
        "{text}"
    );
    // The runtime's default profile reads the same way.
    let default = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("runtime-cu/profiles/hopper-default.toml"),
    )
    .unwrap();
    let d = runtime_parse(&default);
    assert_eq!(seq(&d["sequence"]), seq("ld st2 ld"));
}

#[test]
fn slugs() {
    assert_eq!(slug("NVIDIA H200"), "nvidia-h200");
    assert_eq!(
        slug("  NVIDIA GeForce GTX 980 (rev. 2) "),
        "nvidia-geforce-gtx-980-rev-2"
    );
    assert_eq!(slug("***"), "unknown-gpu");
}

#[test]
fn human_counts() {
    assert_eq!(
        [342, 9_999, 10_000, 131_400, 9_999_000, 12_500_000].map(human),
        ["342", "9999", "10k", "131k", "9999k", "12.5M"]
    );
}

/// The CLI test's fixture is this generator's output; `WMFIX_UPDATE_FIXTURES=1` rewrites it.
#[test]
fn cli_fixture_is_current() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tune/titan.json");
    let mut raw = titan_raw(2, 64, 128);
    raw.params.gpu = "Synthetic Titan".into();
    raw.params.command = "generated by tune::tests::cli_fixture_is_current".into();
    let json = raw.to_json();
    if std::env::var_os("WMFIX_UPDATE_FIXTURES").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &json).unwrap();
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == json,
        "{} is stale; run with WMFIX_UPDATE_FIXTURES=1",
        path.display()
    );
}

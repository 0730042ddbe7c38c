//! Patch finding (Sorensen & Donaldson, PLDI 2016, Sec. 3.2): epsilon-patches and the critical patch size.

use crate::litmus::vocabulary::{PerTest, Test};
use crate::tune::raw::check_table;
use anyhow::Result;
use serde::Serialize;
use std::collections::BTreeMap;

// ---------------------------------------------------------------------------------------------
// Patch finding (Sec. 3.2)

/// The epsilon-patches of one row `counts[l]` (one test, one distance): the maximal runs of
/// consecutive locations that each show more than `epsilon` weak behaviours, as `(start, size)`.
///
/// This is the paper's definition taken literally: "a maximal contiguous sequence of P
/// locations, each yielding more than epsilon weak behaviours". So when two neighbouring
/// P-aligned regions are both hot, they show as ONE patch of size 2P, not two of size P. We do
/// not split runs at P-word boundaries because P is what is being measured: splitting at the
/// boundaries of each candidate size would credit every candidate that divides the run (a
/// 64-word run holds two aligned 32-word regions, four 16-word ones, ...), so the smallest
/// candidate would always win. With hot regions scattered, as in the paper's Fig. 3, runs of
/// exactly P are still the most frequent; merged runs (2P, 3P, ...) and noise (short runs) are
/// counted under their own sizes and lose the vote. Whether the patches sit on P-word
/// boundaries is reported separately ([`TestPatches::aligned`]), not used to count them.
pub fn epsilon_patches(row: &[u64], epsilon: u64) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (l, &c) in row.iter().enumerate() {
        match (c > epsilon, start) {
            (true, None) => start = Some(l),
            (false, Some(s)) => {
                out.push((s, l - s));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, row.len() - s));
    }
    out
}

/// The epsilon-patches of one test over all distances.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TestPatches {
    /// Number of epsilon-patches, over all distances (universal rows not included).
    pub patches: usize,
    /// Patch size -> number of epsilon-patches of that size.
    pub sizes: BTreeMap<usize, usize>,
    /// Distances at which every location is hot. Such a row is one run over the whole measured
    /// range and shows no boundary at all, so it is not counted as a patch of size L: the paper
    /// reads its 980 data the same way ("LB weak behaviours universally for 64 <= d < 128 ...
    /// patches of length 64 emerge for LB at d = 128").
    pub universal_rows: usize,
    /// The sizes with the most epsilon-patches (several when tied; empty without patches).
    pub most: Vec<usize>,
    /// The test's patch size: `most` when it holds exactly one size.
    pub size: Option<usize>,
    /// Of the patches of `size`, those starting at a multiple of `size` (patch-aligned).
    pub aligned: usize,
}

/// The result of patch finding.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PatchAnalysis {
    pub epsilon: u64,
    pub tests: PerTest<TestPatches>,
    /// The critical patch size: the size that every test showing epsilon-patches names.
    pub critical: Option<usize>,
    /// Tests without any epsilon-patch, which have no say (the paper's 980: "critical patches
    /// for MP did not appear", and the size was taken from the other tests).
    pub abstained: Vec<Test>,
    /// Only when there is no critical size but there are patches: the size to use anyway (see
    /// [`critical_patch_size`]).
    pub fallback: Option<usize>,
}

impl PatchAnalysis {
    /// The patch size to stress with: the critical size, else the fallback.
    pub fn chosen(&self) -> Option<usize> {
        self.critical.or(self.fallback)
    }

    /// One line saying how the patch size was decided.
    pub fn verdict(&self) -> String {
        let answers = Test::ALL
            .iter()
            .map(|&t| {
                let tp = self.tests.get(t);
                match (tp.size, tp.most.len()) {
                    (Some(p), _) => format!("{t} {p}"),
                    (None, 0) => format!("{t} none"),
                    (None, _) => format!(
                        "{t} tied ({})",
                        tp.most
                            .iter()
                            .map(|p| p.to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                }
            })
            .collect::<Vec<_>>()
            .join(", ");
        let abstained = if self.abstained.is_empty() {
            String::new()
        } else {
            format!(
                "; {} showed no epsilon-patch and had no say",
                self.abstained
                    .iter()
                    .map(|t| t.name())
                    .collect::<Vec<_>>()
                    .join(" and ")
            )
        };
        match (self.critical, self.fallback) {
            (Some(p), _) => format!("critical patch size: {p} ({answers}{abstained})"),
            (None, Some(p)) => format!(
                "no critical patch size: the tests disagree ({answers}{abstained}); \
                 fallback {p}, the size most tests name, then the one with the most patches"
            ),
            (None, None) => format!(
                "no critical patch size: no epsilon-patch in any test ({answers}); \
                 epsilon = {} may be too high, or D too small",
                self.epsilon
            ),
        }
    }
}

/// The critical patch size (Sec. 3.2) of `counts[test][d][l]` with noise threshold `epsilon`.
///
/// For each test, the epsilon-patches of every distance ([`epsilon_patches`]) are counted by
/// size, and the test's size is the one with the most patches. The paper calls P the critical
/// patch size when all of MP, LB and SB agree on it. Two explicit departures, both from the
/// paper's own reading of its 980 data:
/// - a test with no epsilon-patch at all abstains (it is listed in `abstained`); the critical
///   size is the one every other test names, if at least one test shows patches;
/// - rows hot at every location are not patches (see [`TestPatches::universal_rows`]).
///
/// When a test's most frequent size is tied, or the tests name different sizes, there is no
/// critical size: `critical` is `None`, each test's answer is in `tests`, and `fallback` holds
/// the size named by most tests (a test tied between sizes names each of them), ties broken by
/// the total number of epsilon-patches of that size over all tests, then by the smaller size
/// (stressing at multiples of the smaller size also stresses the start of every larger patch
/// that it divides). The fallback is what the later phases can run with; the report says that
/// it is one.
///
/// Errors when the tables are empty or not rectangular, or the tests' tables differ in shape.
pub fn critical_patch_size(counts: &PerTest<Vec<Vec<u64>>>, epsilon: u64) -> Result<PatchAnalysis> {
    let rows = counts.mp.len();
    let cols = counts.mp.first().map_or(0, Vec::len);
    if rows == 0 || cols == 0 {
        anyhow::bail!("patch counts are empty");
    }
    for (t, table) in counts.iter() {
        check_table(&format!("patch counts of {t}"), table, rows, cols)
            .map_err(anyhow::Error::msg)?;
    }
    let tests = counts.map(|_, table| {
        let mut sizes = BTreeMap::new();
        let mut universal_rows = 0;
        let mut starts: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for row in table {
            let patches = epsilon_patches(row, epsilon);
            if patches == [(0, cols)] {
                universal_rows += 1;
                continue;
            }
            for (start, size) in patches {
                *sizes.entry(size).or_insert(0) += 1;
                starts.entry(size).or_default().push(start);
            }
        }
        let best = sizes.values().copied().max().unwrap_or(0);
        let most: Vec<usize> = sizes
            .iter()
            .filter(|&(_, &n)| n == best && best > 0)
            .map(|(&s, _)| s)
            .collect();
        let size = (most.len() == 1).then(|| most[0]);
        let aligned = size.map_or(0, |p| starts[&p].iter().filter(|&&s| s % p == 0).count());
        TestPatches {
            patches: sizes.values().sum(),
            sizes,
            universal_rows,
            most,
            size,
            aligned,
        }
    });
    let abstained: Vec<Test> = Test::ALL
        .into_iter()
        .filter(|&t| tests.get(t).patches == 0)
        .collect();
    let voters: Vec<&TestPatches> = tests
        .iter()
        .filter(|(_, tp)| tp.patches > 0)
        .map(|(_, tp)| tp)
        .collect();
    let critical = match voters.first().and_then(|v| v.size) {
        Some(p) if voters.iter().all(|v| v.size == Some(p)) => Some(p),
        _ => None,
    };
    let fallback = if critical.is_some() || voters.is_empty() {
        None
    } else {
        let mut votes: BTreeMap<usize, (usize, usize)> = BTreeMap::new();
        for v in &voters {
            for &p in &v.most {
                votes.entry(p).or_insert((0, 0)).0 += 1;
            }
        }
        for (p, e) in votes.iter_mut() {
            e.1 = voters
                .iter()
                .map(|v| v.sizes.get(p).copied().unwrap_or(0))
                .sum();
        }
        // Most votes, then most patches, then the smaller size (the first in the map).
        votes
            .iter()
            .fold(
                None,
                |best: Option<(usize, (usize, usize))>, (&p, &e)| match best {
                    Some((_, be)) if be >= e => best,
                    _ => Some((p, e)),
                },
            )
            .map(|(p, _)| p)
    };
    Ok(PatchAnalysis {
        epsilon,
        tests,
        critical,
        abstained,
        fallback,
    })
}

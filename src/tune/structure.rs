//! What the patch-phase counts depend on: the stressed location (the paper's patches) or the
//! distance between the two communication locations.
//!
//! The paper reads a critical patch size from how weak behaviours vary with the stressed
//! scratchpad location l (Sec. 3.2). On the H200 the per-location totals are flat: hot cells
//! are isolated noise, and any epsilon gives "patches" of size 1 or 2. What does vary is the
//! distance d: MP and LB show no weak behaviour below d = 64 words and many from 64 on. So we
//! test for location structure first, and when there is none, use the size of the aligned
//! blocks of distances in which weak behaviours come and go as the patch size (stressing locations that far apart stresses distinct
//! regions of the memory system, which is what a patch size is for).

use serde::Serialize;

use crate::litmus::vocabulary::{PerTest, Test};

/// Whether neighbouring stressed locations behave alike, as patches make them.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LocationStructure {
    /// Lag-1 autocorrelation of the per-location totals (summed over distances).
    pub r: f64,
    /// What independent noise stays under (3 / sqrt(L)): patches of two or more locations
    /// make neighbours alike and r large; isolated noise leaves it near 0.
    pub threshold: f64,
    pub present: bool,
}

/// Per test: location structure, and the distance at which weak behaviours step up.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Structure {
    pub location: PerTest<LocationStructure>,
    pub blocks: PerTest<Option<usize>>,
}

impl Structure {
    pub fn of(counts: &PerTest<Vec<Vec<u64>>>) -> Structure {
        Structure {
            location: counts.map(|_, t| location_structure(t)),
            blocks: counts.map(|_, t| distance_blocks(t)),
        }
    }

    /// The patch size to use when no test shows location structure and the tests that step up
    /// agree on where: that distance. `None` otherwise.
    pub fn patch_from_distance(&self) -> Option<usize> {
        if self.location.iter().any(|(_, l)| l.present) {
            return None;
        }
        let sizes: Vec<usize> = self.blocks.iter().filter_map(|(_, b)| *b).collect();
        let first = *sizes.first()?;
        sizes.iter().all(|&b| b == first).then_some(first)
    }

    /// One line per test, for the report.
    pub fn lines(&self) -> Vec<String> {
        Test::ALL
            .iter()
            .map(|&t| {
                let l = self.location.get(t);
                let blocks = match self.blocks.get(t) {
                    Some(d) => format!("weak behaviours change in aligned blocks of {d} distances"),
                    None => "no block structure in distance".to_string(),
                };
                format!(
                    "  {t}: location structure {} (lag-1 r = {:.3}, noise < {:.3}); {blocks}",
                    if l.present { "yes" } else { "no" },
                    l.r,
                    l.threshold
                )
            })
            .collect()
    }
}

/// `table[d][l]`: is there structure along l?
pub fn location_structure(table: &[Vec<u64>]) -> LocationStructure {
    let cols = table.first().map_or(0, Vec::len);
    let totals: Vec<f64> = (0..cols)
        .map(|l| table.iter().map(|row| row[l] as f64).sum())
        .collect();
    let r = lag1_autocorrelation(&totals);
    let threshold = 3.0 / (cols.max(1) as f64).sqrt();
    LocationStructure {
        r,
        threshold,
        present: r > threshold,
    }
}

fn lag1_autocorrelation(x: &[f64]) -> f64 {
    if x.len() < 3 {
        return 0.0;
    }
    let mean = x.iter().sum::<f64>() / x.len() as f64;
    let var: f64 = x.iter().map(|v| (v - mean).powi(2)).sum();
    if var == 0.0 {
        return 0.0;
    }
    let cov: f64 = x.windows(2).map(|w| (w[0] - mean) * (w[1] - mean)).sum();
    cov / var
}

/// `table[d][l]`: the largest power of two P such that aligned blocks of P distances explain
/// at least 90% of the variance of the per-distance totals, with the busiest block at least
/// four times the quietest and above one weak behaviour per distance. It finds a step (none
/// below 64, many from 64) as well as the H200's alternation (weak only where d mod 128 >= 64).
pub fn distance_blocks(table: &[Vec<u64>]) -> Option<usize> {
    let t: Vec<f64> = table
        .iter()
        .map(|row| row.iter().sum::<u64>() as f64)
        .collect();
    let n = t.len();
    let mean = t.iter().sum::<f64>() / n.max(1) as f64;
    let total: f64 = t.iter().map(|v| (v - mean).powi(2)).sum();
    if total == 0.0 {
        return None;
    }
    let mut p = 1usize << (usize::BITS - 1 - (n / 2).max(1).leading_zeros());
    while p >= 2 {
        let means: Vec<f64> = t
            .chunks(p)
            .map(|c| c.iter().sum::<f64>() / c.len() as f64)
            .collect();
        let explained: f64 = t
            .chunks(p)
            .zip(&means)
            .map(|(c, m)| c.len() as f64 * (m - mean).powi(2))
            .sum::<f64>()
            / total;
        let (lo, hi) = means
            .iter()
            .fold((f64::MAX, 0f64), |(lo, hi), &m| (lo.min(m), hi.max(m)));
        if explained >= 0.9 && hi >= 4.0 * lo && hi >= 1.0 {
            return Some(p);
        }
        p /= 2;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic pseudo-random count in 0..n (an LCG; no crate needed for test noise).
    fn noise(seed: &mut u64, n: u64) -> u64 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (*seed >> 33) % n
    }

    fn table(d: usize, l: usize, f: impl Fn(usize, usize, &mut u64) -> u64) -> Vec<Vec<u64>> {
        let mut seed = 7;
        (0..d)
            .map(|di| (0..l).map(|li| f(di, li, &mut seed)).collect())
            .collect()
    }

    #[test]
    fn patches_of_32_locations_are_location_structure() {
        // Titan-style: every 32-location patch has its own level, some none.
        let t = table(64, 256, |_, l, s| [0, 9, 3, 14][(l / 32) % 4] + noise(s, 2));
        let ls = location_structure(&t);
        assert!(ls.present && ls.r > 0.8, "{ls:?}");
    }

    #[test]
    fn isolated_noise_is_not_location_structure() {
        let t = table(256, 256, |d, _, s| if d >= 64 { noise(s, 12) } else { 0 });
        let ls = location_structure(&t);
        assert!(!ls.present && ls.r.abs() < ls.threshold, "{ls:?}");
        assert!((ls.threshold - 3.0 / 16.0).abs() < 1e-12);
    }

    #[test]
    fn a_step_in_distance_is_found_where_it_is() {
        let t = table(256, 16, |d, _, s| if d >= 64 { 5 + noise(s, 5) } else { 0 });
        assert_eq!(distance_blocks(&t), Some(64));
        // The H200's pattern: weak only where d mod 128 >= 64.
        let t = table(
            256,
            16,
            |d, _, s| if d % 128 >= 64 { 10 + noise(s, 10) } else { 0 },
        );
        assert_eq!(distance_blocks(&t), Some(64));
        // SB-like: some weak behaviour everywhere, fifty times more from 64 on.
        let t = table(256, 16, |d, _, s| {
            if d >= 64 {
                190 + noise(s, 20)
            } else {
                noise(s, 8)
            }
        });
        assert_eq!(distance_blocks(&t), Some(64));
    }

    #[test]
    fn flat_or_empty_distances_have_no_blocks() {
        assert_eq!(
            distance_blocks(&table(128, 8, |_, _, s| 3 + noise(s, 3))),
            None
        );
        assert_eq!(distance_blocks(&table(128, 8, |_, _, _| 0)), None);
        // A rise of less than four times is not a step.
        assert_eq!(
            distance_blocks(&table(128, 8, |d, _, _| if d >= 64 { 6 } else { 2 })),
            None
        );
    }

    #[test]
    fn the_patch_comes_from_distance_only_without_location_structure_and_with_agreement() {
        let flat = |d: usize, s: &mut u64| if d >= 64 { 3 + noise(s, 6) } else { 0 };
        let mp = table(256, 256, |d, _, s| flat(d, s));
        let patched = table(256, 256, |d, l, s| {
            if d >= 64 {
                [0, 9][(l / 32) % 2] + noise(s, 2)
            } else {
                0
            }
        });
        let st = Structure::of(&PerTest {
            mp: mp.clone(),
            lb: mp.clone(),
            sb: mp.clone(),
        });
        assert_eq!(st.patch_from_distance(), Some(64));
        assert!(
            st.lines()[0].contains("location structure no"),
            "{:?}",
            st.lines()
        );
        let st = Structure::of(&PerTest {
            mp: mp.clone(),
            lb: patched,
            sb: mp.clone(),
        });
        assert_eq!(st.patch_from_distance(), None, "LB has patches");
        let late = table(
            256,
            256,
            |d, _, s| if d >= 128 { 3 + noise(s, 6) } else { 0 },
        );
        let st = Structure::of(&PerTest {
            mp: mp.clone(),
            lb: late,
            sb: mp,
        });
        assert_eq!(st.patch_from_distance(), None, "block sizes disagree");
    }
}

//! The project's seeded randomness. Every random choice wmfix makes (a run's seed, the order of
//! a tune's configurations or of a cost round's variants, the litmus engine's per-launch draws)
//! derives from a base seed through [`seed`], so any of them can be replayed.

/// Number `i` of stream `stream` from `base`: distinct, well-mixed values (splitmix64's mix).
pub fn seed(base: u64, stream: u64, i: usize) -> u64 {
    let mut z = base
        ^ stream.wrapping_mul(0x9e37_79b9_7f4a_7c15)
        ^ (i as u64).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Number `i` of stream `stream` as a fraction in [0, 1].
pub fn unit(base: u64, stream: u64, i: usize) -> f64 {
    seed(base, stream, i) as f64 / u64::MAX as f64
}

/// Shuffles `items` in place (Fisher-Yates), drawing from stream `stream` of `base`.
pub fn shuffle<T>(items: &mut [T], base: u64, stream: u64) {
    for i in (1..items.len()).rev() {
        let j = (seed(base, stream, i) % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
}

/// A sequence of draws, each one's state the seed of the next: for a loop that draws an unknown
/// number of values (the litmus engine, per launch).
#[derive(Clone, Debug)]
pub struct Draws(u64);

impl Draws {
    pub fn new(seed: u64) -> Draws {
        Draws(seed)
    }

    pub fn next_u32(&mut self) -> u32 {
        self.0 = seed(self.0, 0x11, 0);
        (self.0 >> 32) as u32
    }

    /// `count` distinct elements of `from` (all of them if it has fewer), uniformly.
    pub fn pick(&mut self, from: &[u32], count: usize) -> Vec<u32> {
        let mut pool = from.to_vec();
        let count = count.min(pool.len());
        for i in 0..count {
            let j = i + self.next_u32() as usize % (pool.len() - i);
            pool.swap(i, j);
        }
        pool.truncate(count);
        pool
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_and_indices_give_distinct_seeds() {
        let mut all: Vec<u64> = (0..4u64)
            .flat_map(|s| (0..1000).map(move |i| seed(7, s, i)))
            .collect();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 4000);
        assert_ne!(seed(7, 0, 0), seed(8, 0, 0));
    }

    #[test]
    fn shuffle_is_a_seeded_permutation() {
        let mut a: Vec<usize> = (0..50).collect();
        let mut b = a.clone();
        shuffle(&mut a, 3, 1);
        shuffle(&mut b, 3, 1);
        assert_eq!(a, b, "same seed, same order");
        let mut c: Vec<usize> = (0..50).collect();
        shuffle(&mut c, 3, 2);
        assert_ne!(a, c, "another stream, another order");
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..50).collect::<Vec<_>>());
        assert_ne!(a, sorted);
    }

    #[test]
    fn every_position_is_reached_evenly() {
        // Element 0 of a 4-element shuffle lands in each position about a quarter of the time.
        let mut hits = [0usize; 4];
        for s in 0..4000 {
            let mut v = [0, 1, 2, 3];
            shuffle(&mut v, s, 0);
            hits[v.iter().position(|&x| x == 0).unwrap()] += 1;
        }
        for h in hits {
            assert!((850..1150).contains(&h), "{hits:?}");
        }
    }

    #[test]
    fn pick_draws_distinct_elements() {
        let from: Vec<u32> = (0..64).map(|i| i * 32).collect();
        let mut d = Draws::new(5);
        let p = d.pick(&from, 10);
        assert_eq!(p.len(), 10);
        let mut q = p.clone();
        q.sort_unstable();
        q.dedup();
        assert_eq!(q.len(), 10);
        assert!(p.iter().all(|x| from.contains(x)));
        assert_eq!(d.pick(&from, 100).len(), 64);
        assert!((0..20).map(|_| d.next_u32()).any(|x| x != 0));
    }
}

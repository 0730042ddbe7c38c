//! Sparse vector clocks. A thread knows other threads' clocks only where it synchronised with
//! them, so most clocks hold a handful of entries, not one per GPU thread. A block's barriers
//! are counted apart (`blocks`): "this thread has passed barrier g of block b" stands for every
//! thread of b up to that barrier, so a `__syncthreads` does not copy a block's worth of entries
//! into every thread.

/// Entries sorted by key; a missing key is 0.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Clock {
    threads: Vec<(u32, u32)>,
    blocks: Vec<(u32, u32)>,
}

fn get(v: &[(u32, u32)], k: u32) -> u32 {
    v.binary_search_by_key(&k, |e| e.0)
        .map(|i| v[i].1)
        .unwrap_or(0)
}

fn raise(v: &mut Vec<(u32, u32)>, k: u32, c: u32) {
    match v.binary_search_by_key(&k, |e| e.0) {
        Ok(i) => v[i].1 = v[i].1.max(c),
        Err(i) => v.insert(i, (k, c)),
    }
}

fn join(a: &mut Vec<(u32, u32)>, b: &[(u32, u32)], skip: impl Fn(u32) -> bool) {
    if covers(a, b, &skip) {
        return;
    }
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if j < b.len() && skip(b[j].0) {
            j += 1;
            continue;
        }
        match (a.get(i), b.get(j)) {
            (Some(&x), Some(&y)) if x.0 == y.0 => {
                out.push((x.0, x.1.max(y.1)));
                i += 1;
                j += 1;
            }
            (Some(&x), Some(&y)) if x.0 < y.0 => {
                out.push(x);
                i += 1;
            }
            (Some(_), Some(&y)) | (None, Some(&y)) => {
                out.push(y);
                j += 1;
            }
            (Some(&x), None) => {
                out.push(x);
                i += 1;
            }
            (None, None) => break,
        }
    }
    *a = out;
}

/// Whether `a` already holds every entry of `b` (but those `skip` says): one pass over both,
/// sorted by key.
fn covers(a: &[(u32, u32)], b: &[(u32, u32)], skip: &impl Fn(u32) -> bool) -> bool {
    let mut i = 0;
    for &(k, c) in b {
        if skip(k) {
            continue;
        }
        while i < a.len() && a[i].0 < k {
            i += 1;
        }
        if i == a.len() || a[i].0 != k || a[i].1 < c {
            return false;
        }
    }
    true
}

impl Clock {
    pub fn thread(&self, t: u32) -> u32 {
        get(&self.threads, t)
    }

    pub fn block(&self, b: u32) -> u32 {
        get(&self.blocks, b)
    }

    pub fn raise_thread(&mut self, t: u32, c: u32) {
        raise(&mut self.threads, t, c)
    }

    pub fn raise_block(&mut self, b: u32, generation: u32) {
        raise(&mut self.blocks, b, generation)
    }

    pub fn join(&mut self, other: &Clock) {
        join(&mut self.threads, &other.threads, |_| false);
        join(&mut self.blocks, &other.blocks, |_| false);
    }

    /// Joins all but the entries of threads `skip` says the block's barrier already covers.
    pub fn join_except(&mut self, other: &Clock, skip: impl Fn(u32) -> bool) {
        join(&mut self.threads, &other.threads, skip);
        join(&mut self.blocks, &other.blocks, |_| false);
    }

    /// Entries held, for the shadow-memory figure.
    pub fn len(&self) -> usize {
        self.threads.len() + self.blocks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_take_the_larger_entry_of_each_key_and_keep_keys_sorted() {
        let mut a = Clock::default();
        a.raise_thread(5, 2);
        a.raise_thread(1, 7);
        let mut b = Clock::default();
        b.raise_thread(3, 4);
        b.raise_thread(5, 9);
        b.raise_block(2, 1);
        a.join(&b);
        assert_eq!((a.thread(1), a.thread(3), a.thread(5)), (7, 4, 9));
        assert_eq!(a.thread(4), 0);
        assert_eq!(a.block(2), 1);
        let mut c = Clock::default();
        c.join_except(&a, |t| t == 3);
        assert_eq!((c.thread(3), c.thread(5), c.len()), (0, 9, 3));
        a.raise_thread(5, 1);
        assert_eq!(a.thread(5), 9);
    }
}

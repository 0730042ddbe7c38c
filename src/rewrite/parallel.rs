//! An order-preserving map over all cores, for per-file work whose results must not depend on
//! thread timing.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The number of cores, which is how many threads `map` uses at most. Asked once: the answer
/// reads cgroup files, and small maps are many.
pub fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
}

/// `items.map(f)`, in input order, on up to one thread per core. Threads take the next item as
/// they finish one, so a few large files do not leave a core idle.
pub fn map<T: Send, R: Send>(items: Vec<T>, f: impl Fn(T) -> R + Sync) -> Vec<R> {
    let threads = cores().min(items.len());
    if threads <= 1 {
        return items.into_iter().map(f).collect();
    }
    let slots: Vec<Mutex<Option<T>>> = items.into_iter().map(|t| Mutex::new(Some(t))).collect();
    let next = AtomicUsize::new(0);
    let worker = || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(slot) = slots.get(i) else {
                return done;
            };
            let item = slot
                .lock()
                .unwrap()
                .take()
                .expect("each index is taken once");
            done.push((i, f(item)));
        }
    };
    let mut results: Vec<Option<R>> = std::iter::repeat_with(|| None).take(slots.len()).collect();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads).map(|_| s.spawn(worker)).collect();
        for h in handles {
            for (i, r) in h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)) {
                results[i] = Some(r);
            }
        }
    });
    results
        .into_iter()
        .map(|r| r.expect("every item mapped"))
        .collect()
}

/// Drops `value` on a thread of its own, for what takes long to free once its work is done (a
/// big file's tree, plan, edits and fence records: a tenth of a second each); the process may
/// exit first.
pub fn drop_later<T: Send + 'static>(value: T) {
    std::thread::spawn(move || drop(value));
}

#[cfg(test)]
mod tests {
    #[test]
    fn results_keep_input_order_whatever_the_timing() {
        let items: Vec<u64> = (0..200).collect();
        // Uneven work, so that threads finish items out of order.
        let out = super::map(items, |i| {
            std::thread::sleep(std::time::Duration::from_micros((i * 37) % 300));
            i * 2
        });
        assert_eq!(out, (0..200).map(|i| i * 2).collect::<Vec<_>>());
    }

    #[test]
    fn a_panic_in_a_worker_reaches_the_caller() {
        let r = std::panic::catch_unwind(|| super::map(vec![1, 2, 3], |i| assert_ne!(i, 2)));
        assert!(r.is_err());
    }
}

//! Many runs of one program, on `jobs` worker threads, each run a child in its own process
//! group. Records arrive on the calling thread in completion order.

use crate::app::config::App;
use crate::run::trial::{self, RunRecord, TrialSpec};
use anyhow::Result;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, mpsc};
use std::time::{Duration, Instant};

pub struct Batch<'a> {
    pub app: &'a App,
    /// The built program to run.
    pub tree: &'a Path,
    pub jobs: usize,
    /// GPUs to spread the workers over (worker w sees `gpus[w % len]` as its only device,
    /// through CUDA_VISIBLE_DEVICES); empty: runs inherit the device selection.
    pub gpus: &'a [String],
    /// Logs of erring runs are kept here as `run-<id>.log`; workers' scratch logs live here too.
    pub logs: &'a Path,
    /// Variables every run gets besides its spec's (the chip profile: `run::profile`).
    pub env: &'a [(String, String)],
    /// Warm processes to serve the runs (`--warm`), kept by the caller across batches.
    pub warm: Option<&'a crate::run::warm::Pool>,
}

#[derive(Clone, Copy, Debug)]
pub enum Budget {
    Runs(usize),
    Until(Instant),
    RunsUntil(usize, Instant),
}

impl Budget {
    fn allows(self, i: usize) -> bool {
        match self {
            Budget::Runs(n) => i < n,
            Budget::Until(t) => Instant::now() < t,
            Budget::RunsUntil(n, t) => i < n && Instant::now() < t,
        }
    }

    /// This budget, and at most `n` runs.
    pub fn and_runs(self, n: usize) -> Budget {
        match self {
            Budget::Runs(m) => Budget::Runs(m.min(n)),
            Budget::Until(t) | Budget::RunsUntil(_, t) => Budget::RunsUntil(n, t),
        }
    }
}

/// Runs trial `i` (from 0) with id `first_id + i` and spec `spec(i)` until the budget is spent,
/// ctrl-c, or `on_record` returns false. Returns how many records were delivered.
pub fn run(
    batch: &Batch,
    budget: Budget,
    first_id: usize,
    spec: &(dyn Fn(usize) -> TrialSpec + Sync),
    on_record: &mut dyn FnMut(RunRecord) -> bool,
) -> Result<usize> {
    std::fs::create_dir_all(batch.logs)?;
    // Batches may run side by side over one logs folder (the warm check's two sides): each
    // names its workers' scratch logs apart.
    static BATCHES: AtomicUsize = AtomicUsize::new(0);
    let this = BATCHES.fetch_add(1, Ordering::SeqCst);
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let processed = Processed::default();
    let jobs = batch.jobs.max(1);
    let (tx, rx) = mpsc::channel::<std::io::Result<RunRecord>>();
    let mut delivered = 0;
    let mut first_error = None;
    std::thread::scope(|scope| {
        for w in 0..jobs {
            let tx = tx.clone();
            let (next, stop, processed) = (&next, &stop, &processed);
            scope.spawn(move || {
                let scratch = batch.logs.join(format!("worker-{this}-{w}.log"));
                let gpu =
                    (!batch.gpus.is_empty()).then(|| batch.gpus[w % batch.gpus.len()].as_str());
                loop {
                    if stop.load(Ordering::SeqCst) || crate::interrupt::interrupted() {
                        break;
                    }
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    // Start run i only once the runs before it but `jobs` are judged: a run
                    // started while the caller decides to stop would be wasted GPU time. (The
                    // budget is asked again after the wait, which a deadline may have passed.)
                    if !budget.allows(i)
                        || !processed.wait_below(i, jobs, stop)
                        || !budget.allows(i)
                    {
                        break;
                    }
                    let result = run_one(batch, first_id + i, &spec(i), gpu, &scratch);
                    match result {
                        Ok(None) => break,
                        Ok(Some(rec)) => {
                            if tx.send(Ok(rec)).is_err() {
                                break;
                            }
                        }
                        Err(e) => {
                            let _ = tx.send(Err(e));
                            break;
                        }
                    }
                }
                let _ = std::fs::remove_file(&scratch);
            });
        }
        drop(tx);
        for msg in rx {
            let _count = processed.bump_after();
            match msg {
                Ok(rec) => {
                    delivered += 1;
                    if !stop.load(Ordering::SeqCst) && !on_record(rec) {
                        stop.store(true, Ordering::SeqCst);
                    }
                }
                Err(e) => {
                    stop.store(true, Ordering::SeqCst);
                    first_error.get_or_insert(e);
                }
            }
        }
    });
    match first_error {
        Some(e) => Err(e.into()),
        None => Ok(delivered),
    }
}

/// How many records the calling thread has judged, for workers to wait on.
#[derive(Default)]
struct Processed {
    count: Mutex<usize>,
    changed: Condvar,
    /// The caller panicked while judging: no more runs.
    abandoned: AtomicBool,
}

impl Processed {
    /// Waits until fewer than `jobs` runs before run `i` are unjudged; false on stop or ctrl-c.
    fn wait_below(&self, i: usize, jobs: usize, stop: &AtomicBool) -> bool {
        let mut n = self.count.lock().unwrap();
        while i >= *n + jobs {
            if stop.load(Ordering::SeqCst)
                || self.abandoned.load(Ordering::SeqCst)
                || crate::interrupt::interrupted()
            {
                return false;
            }
            n = self
                .changed
                .wait_timeout(n, Duration::from_millis(50))
                .unwrap()
                .0;
        }
        !stop.load(Ordering::SeqCst) && !self.abandoned.load(Ordering::SeqCst)
    }

    /// Counts one record as judged when the returned guard drops (after the caller's verdict
    /// and any stop flag are set).
    fn bump_after(&self) -> Bump<'_> {
        Bump(self)
    }
}

struct Bump<'a>(&'a Processed);

impl Drop for Bump<'_> {
    fn drop(&mut self) {
        // A panic in the caller's verdict must not leave workers waiting for judgements.
        if std::thread::panicking() {
            self.0.abandoned.store(true, Ordering::SeqCst);
        }
        *self.0.count.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.0.changed.notify_all();
    }
}

fn run_one(
    batch: &Batch,
    id: usize,
    spec: &TrialSpec,
    gpu: Option<&str>,
    scratch: &Path,
) -> std::io::Result<Option<RunRecord>> {
    let place = trial::Place {
        tree: batch.tree,
        gpu,
        extra: batch.env,
        warm: batch.warm,
    };
    let Some(mut rec) = trial::run_trial(batch.app, &place, id, spec, scratch)? else {
        return Ok(None);
    };
    if rec.outcome.is_error() {
        let name = PathBuf::from(format!("run-{id}.log"));
        std::fs::rename(scratch, batch.logs.join(&name))?;
        rec.log = Some(PathBuf::from("logs").join(name));
    }
    Ok(Some(rec))
}

/// `--gpus all`: every device the driver sees, as ordinals.
pub fn all_gpus() -> Result<Vec<String>> {
    use crate::exit_code::{self, fail};
    if !crate::run::hold::driver_present() {
        return Err(fail(
            exit_code::UNAVAILABLE,
            "--gpus all: no CUDA driver on this machine",
        ));
    }
    let n = cudarc::driver::CudaContext::device_count()
        .map_err(|e| fail(exit_code::UNAVAILABLE, format!("--gpus all: {e}")))?;
    Ok((0..n).map(|i| i.to_string()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::config::{App, Config};
    use crate::run::environment::TestEnv;

    /// Runs a program that appends a line to `count` per run; the caller stops after `stop_at`
    /// records. Returns how many runs the program saw.
    fn runs_seen(jobs: usize, stop_at: usize) -> usize {
        let tmp = tempfile::tempdir().unwrap();
        let count = tmp.path().join("count");
        let app = App {
            root: tmp.path().to_path_buf(),
            config: Config {
                sources: vec![],
                build: "true".into(),
                run: format!("echo run >> {}; sleep 0.05", count.display()),
                timeout_s: 10.0,
                check: None,
                crash_exit_codes: vec![],
                gpu: false,
                preprocess: None,
                steps: 1,
                macros: Default::default(),
                keep_block_order: false,
                launcher: None,
            },
        };
        let logs = tmp.path().join("logs");
        let batch = Batch {
            app: &app,
            tree: tmp.path(),
            jobs,
            gpus: &[],
            logs: &logs,
            env: &[],
            warm: None,
        };
        let spec = |i: usize| TrialSpec {
            env: TestEnv::parse("no-str-").unwrap(),
            seed: i as u64,
            fences: crate::fences::set::FenceSet::All,
            fences_in_loop: None,
            coverage: false,
        };
        let mut judged = 0;
        run(&batch, Budget::Runs(100), 0, &spec, &mut |_| {
            judged += 1;
            judged < stop_at
        })
        .unwrap();
        std::fs::read_to_string(&count).unwrap().lines().count()
    }

    #[test]
    fn no_run_starts_after_the_caller_stops() {
        // One worker: exactly the judged runs. Several: at most jobs - 1 more were in flight.
        assert_eq!(runs_seen(1, 3), 3);
        let seen = runs_seen(3, 4);
        assert!(
            (4..=6).contains(&seen),
            "{seen} runs for 4 judged with 3 jobs"
        );
    }
}

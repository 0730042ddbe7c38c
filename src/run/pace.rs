//! How many warm runs share a GPU at once. Without MPS the processes' kernels take turns on a
//! GPU: where a run holds the GPU long, more runs at a time only add switching between
//! contexts, and where it is short the host's part dominates and more at a time is faster
//! (results/2026-11-29-head-nvidia-h200: tpo-tm without fences made 378k runs/h one at a time
//! and 136k eight at a time; cbe-dot 384k and 1.27M). So each GPU's limit starts at one run and
//! doubles while the rate it gives (runs in flight / mean run time, over a window of runs of
//! processes already started) rises by more than `GAIN`; then it stays where the rate was best.
//! A limit the workers do not fill is not raised: the gate is not what holds them back.
//! A process's start disturbs every GPU's runs (the host makes contexts one at a time), so the
//! end of any process's first run starts every GPU's window again. A run enters its gate before
//! it takes a process (`warm::Pool`), so a GPU has as many processes as runs at a time.
//! A rate is a request's (its fences and testing environment: a fence-less run may end at its
//! first error, a fenced one run to the end), so limits are compared only on runs of one
//! request; runs of another start a window of their own at the limit reached, and the gate
//! settles for one request at a time (a reduction's long stability check is measured anew).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// The rise in rate that doubling the limit must bring to be kept.
pub const GAIN: f64 = 1.15;
/// Runs measured at each limit: at least this many, and this many per run at a time.
const WINDOW_MIN: usize = 8;
const WINDOW_PER_RUN: usize = 4;

/// One GPU's limit and what it measured.
#[derive(Clone, Debug)]
pub struct Gate {
    limit: usize,
    busy: usize,
    /// The request whose best limit the gate holds, measured no more.
    settled: Option<String>,
    /// The current window: runs, the sum of their times, the sum of the runs in flight as each
    /// began.
    runs: usize,
    seconds: f64,
    in_flight: usize,
    /// The request the window's runs are of.
    request: Option<String>,
    /// Each limit tried: its rate (runs a second), the mean runs in flight, its request.
    pub tried: Vec<(usize, f64, f64, String)>,
}

impl Default for Gate {
    /// One run at a time, nothing measured.
    fn default() -> Gate {
        Gate {
            limit: 1,
            busy: 0,
            settled: None,
            runs: 0,
            seconds: 0.0,
            in_flight: 0,
            request: None,
            tried: Vec::new(),
        }
    }
}

impl Gate {
    pub fn limit(&self) -> usize {
        self.limit
    }

    pub fn settled(&self) -> bool {
        self.settled.is_some()
    }

    /// A measured run of `request`: `in_flight` runs (itself included) were in flight when it
    /// began, and it took `seconds`. Moves the limit at the end of a window.
    pub fn record(&mut self, request: &str, in_flight: usize, seconds: f64) {
        if self.settled.as_deref() == Some(request) {
            return;
        }
        if self.request.as_deref() != Some(request) {
            self.restart_window();
            self.request = Some(request.to_string());
            self.settled = None;
        }
        self.runs += 1;
        self.seconds += seconds;
        self.in_flight += in_flight;
        if self.runs < WINDOW_MIN.max(WINDOW_PER_RUN * self.limit) {
            return;
        }
        // Runs in flight over the mean run time: their sum over the window's total time.
        let rate = self.in_flight as f64 / self.seconds.max(1e-9);
        let mean_in_flight = self.in_flight as f64 / self.runs as f64;
        let filled = mean_in_flight >= 0.75 * self.limit as f64;
        let mine = |t: &&(usize, f64, f64, String)| t.3 == request;
        let best = self
            .tried
            .iter()
            .filter(mine)
            .map(|t| t.1)
            .fold(0.0, f64::max);
        self.tried
            .push((self.limit, rate, mean_in_flight, request.to_string()));
        self.restart_window();
        if rate > best * GAIN && filled {
            self.limit *= 2;
        } else {
            self.settled = Some(request.to_string());
            let best = self.tried.iter().filter(mine).fold(None, |a, t| match a {
                Some((_, r)) if r >= t.1 => a,
                _ => Some((t.0, t.1)),
            });
            self.limit = best.map_or(self.limit, |b| b.0);
        }
    }

    /// A process's first run ended: the window's times are not those of steady runs (it made
    /// its CUDA context while they ran); start it again.
    pub fn restart_window(&mut self) {
        (self.runs, self.seconds, self.in_flight) = (0, 0.0, 0);
    }
}

/// The gates of a pool's GPUs, by the device a process sees (`CUDA_VISIBLE_DEVICES`; "" for
/// the inherited selection).
#[derive(Default)]
pub struct Pace {
    gates: Mutex<BTreeMap<String, Gate>>,
    changed: Condvar,
    /// Runs that must not choose the limit (the warm check's, one at a time by design) pass
    /// the gates without being measured.
    unmeasured: AtomicBool,
}

/// A run in flight on a GPU; `leave` when it ended.
pub struct Slot<'a> {
    pace: &'a Pace,
    gpu: String,
    request: String,
    in_flight: usize,
    left: bool,
}

impl Pace {
    /// Whether runs from now on are measured; measuring again starts every window afresh.
    pub fn measure(&self, on: bool) {
        let mut gates = self.gates.lock().unwrap_or_else(|e| e.into_inner());
        self.unmeasured.store(!on, Ordering::SeqCst);
        gates.values_mut().for_each(Gate::restart_window);
    }

    /// Waits until `gpu` has room for another run of `request` (what its rate is of:
    /// `warm::request_of`).
    pub fn enter(&self, gpu: &str, request: &str) -> Slot<'_> {
        let mut gates = self.gates.lock().unwrap();
        loop {
            let gate = gates.entry(gpu.to_string()).or_default();
            if gate.busy < gate.limit {
                gate.busy += 1;
                return Slot {
                    pace: self,
                    gpu: gpu.to_string(),
                    request: request.to_string(),
                    in_flight: gate.busy,
                    left: false,
                };
            }
            gates = self
                .changed
                .wait_timeout(gates, Duration::from_millis(50))
                .unwrap()
                .0;
        }
    }

    /// How many runs at a time `gpu` serves now.
    pub fn limit(&self, gpu: &str) -> usize {
        let gates = self.gates.lock().unwrap_or_else(|e| e.into_inner());
        gates.get(gpu).map_or(1, Gate::limit)
    }

    /// Each GPU's limit and the rates tried: "GPU 0: 1 at a time (runs a second by runs at a
    /// time: 1: 105/s (1.0 in flight), 2: 92/s (2.0 in flight))".
    pub fn describe(&self) -> Vec<String> {
        let gates = self.gates.lock().unwrap();
        gates
            .iter()
            .filter(|(_, g)| !g.tried.is_empty())
            .map(|(gpu, g)| {
                let name = if gpu.is_empty() {
                    "the GPU".to_string()
                } else {
                    format!("GPU {gpu}")
                };
                let tried: Vec<String> = g
                    .tried
                    .iter()
                    .map(|(l, r, f, _)| format!("{l}: {r:.0}/s ({f:.1} in flight)"))
                    .collect();
                let state = if g.settled() { "" } else { ", still measuring" };
                format!(
                    "{name}: {} at a time{state} (runs a second by runs at a time: {})",
                    g.limit,
                    tried.join(", ")
                )
            })
            .collect()
    }
}

impl Slot<'_> {
    pub fn leave(mut self, end: Ended) {
        self.free(end);
    }

    fn free(&mut self, end: Ended) {
        if self.left {
            return;
        }
        self.left = true;
        let mut gates = self.pace.gates.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(gate) = gates.get_mut(&self.gpu) {
            gate.busy -= 1;
            let measured = !self.pace.unmeasured.load(Ordering::SeqCst);
            match end {
                Ended::Steady(s) if measured => gate.record(&self.request, self.in_flight, s),
                Ended::First => gates.values_mut().for_each(Gate::restart_window),
                Ended::Steady(_) | Ended::Broke => {}
            }
        }
        drop(gates);
        self.pace.changed.notify_all();
    }
}

/// A slot dropped without `leave` (a panic while its run was served) still frees its place:
/// the other workers wait at the gate for it.
impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.free(Ended::Broke);
    }
}

/// How a run in a slot ended, for the gate's measure.
#[derive(Clone, Copy, Debug)]
pub enum Ended {
    /// A later run of a process that ended by its own exit, after these seconds.
    Steady(f64),
    /// A process's first run: it made its CUDA context while others ran.
    First,
    /// A crash, a time-out or a request that failed: not counted.
    Broke,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds a gate runs whose time at `limit` runs in flight is `seconds(limit)`, every slot
    /// filled, until it settles; its limit.
    fn settle(seconds: impl Fn(usize) -> f64) -> Gate {
        let mut g = Gate::default();
        settle_on(&mut g, "r", seconds);
        g
    }

    /// Feeds `g` runs of `request` as `settle` does, from where it stands.
    fn settle_on(g: &mut Gate, request: &str, seconds: impl Fn(usize) -> f64) {
        g.record(request, g.limit(), seconds(g.limit()));
        for _ in 0..1000 {
            if g.settled() {
                break;
            }
            let l = g.limit();
            g.record(request, l, seconds(l));
        }
        assert!(g.settled(), "{g:?}");
    }

    #[test]
    fn a_gpu_bound_program_keeps_one_run_at_a_time() {
        // tpo-tm as measured: 9.5 ms alone, and each run more in flight adds switching.
        let g = settle(|l| 0.0095 * l as f64 * (1.0 + 0.3 * (l as f64 - 1.0)));
        assert_eq!(g.limit(), 1, "{:?}", g.tried);
        assert_eq!(g.tried.len(), 2, "{:?}", g.tried);
    }

    #[test]
    fn a_host_bound_program_gets_runs_side_by_side_until_the_rate_stops_rising() {
        // A run's time grows only past 8 in flight (the host's cores).
        let g = settle(|l| 0.01 * (l as f64 / 8.0).max(1.0));
        assert_eq!(g.limit(), 8, "{:?}", g.tried);
        assert_eq!(
            g.tried.iter().map(|t| t.0).collect::<Vec<_>>(),
            [1, 2, 4, 8, 16]
        );
    }

    #[test]
    fn limits_are_compared_on_runs_of_one_request() {
        // A reduction's checks: fence-less runs that end at their first error (fast), then runs
        // with a fence that run to the end (five times as long, side by side up to 8 at a time).
        // Compared with the fast runs' rate at one, two slow ones at a time looked worse.
        let mut g = Gate::default();
        for _ in 0..WINDOW_MIN {
            g.record("none", 1, 0.01);
        }
        assert_eq!(g.limit(), 2);
        for _ in 0..1000 {
            if g.settled() {
                break;
            }
            let l = g.limit();
            let crowded = if l > 8 { 1.2 * l as f64 / 8.0 } else { 1.0 };
            g.record("1", l, 0.05 * crowded);
        }
        assert!(g.settled());
        assert_eq!(g.limit(), 8, "{:?}", g.tried);
        let of_one: Vec<usize> = g.tried.iter().filter(|t| t.3 == "1").map(|t| t.0).collect();
        assert_eq!(of_one, [2, 4, 8, 16]);
    }

    #[test]
    fn a_long_request_after_the_gate_settled_on_another_is_measured_anew() {
        // Fence-less runs that end at their first error settled at two; then a stability
        // check's fenced runs, side by side up to 8 at a time.
        let none = |l: usize| if l <= 2 { 0.01 } else { 0.0075 * l as f64 };
        let mut g = Gate::default();
        settle_on(&mut g, "none", none);
        assert_eq!(g.limit(), 2, "{:?}", g.tried);
        settle_on(&mut g, "1", |l| 0.5 * (l as f64 / 8.0).max(1.0));
        assert_eq!(g.limit(), 8, "{:?}", g.tried);
        // Back to the first request: its own best again.
        settle_on(&mut g, "none", none);
        assert_eq!(g.limit(), 2, "{:?}", g.tried);
    }

    #[test]
    fn a_limit_the_workers_do_not_fill_is_not_raised() {
        let mut g = Gate::default();
        for _ in 0..WINDOW_MIN * 2 {
            let l = g.limit();
            // Two workers: never more than two in flight.
            g.record("r", l.min(2), 0.01);
        }
        for _ in 0..WINDOW_MIN * 8 {
            g.record("r", 2, 0.01);
        }
        assert!(g.settled());
        assert_eq!(g.limit(), 2, "{:?}", g.tried);
        assert_eq!(g.tried.iter().map(|t| t.0).collect::<Vec<_>>(), [1, 2, 4]);
    }

    #[test]
    fn a_window_that_saw_a_process_start_is_measured_again() {
        let mut g = Gate::default();
        // Slow runs while other processes make their contexts, then a first run ends.
        for _ in 0..WINDOW_MIN - 1 {
            g.record("r", 1, 1.0);
        }
        g.restart_window();
        for _ in 0..WINDOW_MIN {
            g.record("r", 1, 0.01);
        }
        assert_eq!(g.tried.len(), 1);
        assert!((g.tried[0].1 - 100.0).abs() < 1e-6, "{:?}", g.tried);
    }

    #[test]
    fn a_process_start_on_one_gpu_measures_every_gpu_s_window_again() {
        let pace = Pace::default();
        let run = |gpu: &str, end: Ended| pace.enter(gpu, "r").leave(end);
        // GPU 1's runs slowed while GPU 0's process made its context.
        for _ in 0..WINDOW_MIN - 1 {
            run("1", Ended::Steady(1.0));
        }
        run("0", Ended::First);
        for _ in 0..WINDOW_MIN {
            run("1", Ended::Steady(0.01));
        }
        let gates = pace.gates.lock().unwrap();
        let tried = &gates["1"].tried;
        assert_eq!(tried.len(), 1, "{tried:?}");
        assert!((tried[0].1 - 100.0).abs() < 1e-6, "{tried:?}");
    }

    #[test]
    fn unmeasured_runs_choose_nothing_and_measuring_again_starts_a_window() {
        let pace = Pace::default();
        let run = |seconds: f64| pace.enter("0", "r").leave(Ended::Steady(seconds));
        pace.measure(false);
        for _ in 0..WINDOW_MIN * 4 {
            run(1.0);
        }
        assert!(pace.describe().is_empty(), "{:?}", pace.describe());
        for _ in 0..WINDOW_MIN - 1 {
            run(1.0);
        }
        pace.measure(true);
        for _ in 0..WINDOW_MIN {
            run(0.01);
        }
        let gates = pace.gates.lock().unwrap();
        let tried = &gates["0"].tried;
        assert_eq!(tried.len(), 1, "{tried:?}");
        assert!((tried[0].1 - 100.0).abs() < 1e-6, "{tried:?}");
    }

    #[test]
    fn runs_wait_at_the_gate_and_enter_as_others_leave() {
        let pace = Pace::default();
        let a = pace.enter("0", "r");
        // Another GPU has its own gate.
        let other = pace.enter("1", "r");
        let entered = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                let b = pace.enter("0", "r");
                entered.store(true, std::sync::atomic::Ordering::SeqCst);
                b.leave(Ended::Broke);
            });
            std::thread::sleep(Duration::from_millis(120));
            assert!(!entered.load(std::sync::atomic::Ordering::SeqCst));
            a.leave(Ended::Broke);
        });
        assert!(entered.load(std::sync::atomic::Ordering::SeqCst));
        other.leave(Ended::Broke);
    }

    #[test]
    fn a_slot_dropped_without_leaving_frees_its_place() {
        let pace = Pace::default();
        let gone = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _slot = pace.enter("0", "r");
            panic!("the run's worker failed");
        }));
        assert!(gone.is_err());
        // Limit one: this waits for ever if the first slot still holds the gate.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            s.spawn(|| {
                let slot = pace.enter("0", "r");
                let _ = tx.send(());
                slot.leave(Ended::Broke);
            });
            let entered = rx.recv_timeout(Duration::from_secs(2));
            if entered.is_err() {
                // Free the waiter so that the scope can end, then fail.
                pace.gates.lock().unwrap().get_mut("0").unwrap().busy = 0;
                pace.changed.notify_all();
            }
            assert!(entered.is_ok(), "the gate stayed held");
        });
    }
}

//! Warm runs (`--warm`): one process of the program serves many runs. A CUDA process spends
//! about 0.14 s making its context, and a host makes contexts one after another whatever its GPUs
//! (results/2026-11-26-nvidia-h100-80gb-hbm3, `context-probe`), which bounds short runs at about
//! five a second a host. A warm process keeps its context: `runtime-cu/warm/wmfix_warm.c`,
//! preloaded, calls the program's `main` once a request, with the run's variables set and its
//! output sent to the run's log; the runtime starts over at each new `WMFIX_WARM_RUN`.
//!
//! What carries over from one run to the next is the program's own process state: its
//! module-scope `__device__` variables and host globals keep the values the last run left. So a
//! process is retired after `RUNS_A_PROCESS` runs, once it has lived `MIN_LIFE`: the host makes
//! contexts one after another, so processes retired faster than that (a short run's 1,000 take a
//! few seconds) would queue their successors' contexts and bound the runs whatever the GPUs
//! (results/2026-11-29-serve-on2-nvidia-h200). A run that timed out or crashed ends it, and so
//! does one after which the process is not healthy: a sticky CUDA error (only a new context
//! clears it), or device memory that runs leaving through `exit()` before their `cudaFree` left
//! behind (`LEAK_SHARE` of the GPU). A run whose post-condition failed ends it too unless the
//! pool serves on after errors (`Pool::serve_on_errors`), which `run::warm_check` decides for
//! the program: that spares a buggy program's runs, nearly all of which err, a process each.

use crate::app::child::{self, Exit, Finished};
use crate::exit_code::{UNAVAILABLE, USAGE, fail};
use crate::run::pace::{Ended, Pace};
use anyhow::Result;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, mpsc};
use std::time::{Duration, Instant};

/// The preloaded server's source, compiled into the output folder on first use.
const SOURCE: &str = include_str!("../../runtime-cu/warm/wmfix_warm.c");
/// The variable that tells the runtime a new run began.
pub const RUN_VAR: &str = "WMFIX_WARM_RUN";
/// Runs after which a process is replaced by a fresh one, once it has lived `MIN_LIFE`.
pub const RUNS_A_PROCESS: usize = 1000;
/// How long a process lives at least before it is retired for its runs: its start (a CUDA
/// context, made on the host's one queue) a small share of its life.
pub const MIN_LIFE: Duration = Duration::from_secs(30);
/// A process whose device's free memory fell by more than this share of the GPU's memory since
/// its first run ended is replaced: runs left allocations behind.
pub const LEAK_SHARE: u64 = 8;

/// How a run served by a warm process ended, for whether the process serves another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    Passed,
    /// The post-condition failed (a wrong result, or a non-zero exit status of the program).
    Failed,
    /// A crash or a time-out.
    Broke,
}

/// What the process said of itself after a run (`runtime-cu/warm/wmfix_warm.c`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Health {
    /// No word (a program without wmfix's host library, or a process that ended).
    Unknown,
    /// A sticky CUDA error.
    Sticky,
    Device {
        free: u64,
        total: u64,
    },
}

impl Health {
    /// "health none", "health 1 F T" or "health 0 F T".
    fn parse(line: &str) -> Option<Health> {
        let rest = line.strip_prefix("health ")?;
        if rest == "none" {
            return Some(Health::Unknown);
        }
        let n: Vec<u64> = rest
            .split_whitespace()
            .map(str::parse)
            .collect::<Result<_, _>>()
            .ok()?;
        match n[..] {
            [1, _, _] => Some(Health::Sticky),
            [0, free, total] => Some(Health::Device { free, total }),
            _ => None,
        }
    }
}

/// The run command as the words a process is started with: only a simple command (words of
/// letters, digits and `./_-=,.:+/`) can be started without a shell, and a shell would be the
/// process the library is preloaded into.
pub fn words(command: &str) -> Option<Vec<String>> {
    let ok = |c: char| c.is_ascii_alphanumeric() || "./_-=,:+@%".contains(c);
    let words: Vec<String> = command.split_whitespace().map(str::to_string).collect();
    (!words.is_empty() && words.iter().all(|w| w.chars().all(ok))).then_some(words)
}

/// Why the program cannot run warm, if it cannot: a run command a shell must read, or runs
/// that go through a launcher.
pub fn refusal(run: &str, launcher: Option<&str>) -> Option<String> {
    if launcher.is_some_and(|l| !l.trim().is_empty()) {
        return Some(
            "--warm runs the program in wmfix's own processes; it cannot go through a launcher"
                .into(),
        );
    }
    words(run).is_none().then(|| {
        format!("--warm needs a run command of plain words (a program and its arguments, no quotes or shell syntax), not `{run}`")
    })
}

/// How long a run waits for a process whose last run is being judged before it starts one.
const JUDGE_WAIT: Duration = Duration::from_millis(50);

/// How long a process may take at least to say its health after a run's end.
const HEALTH_WAIT: Duration = Duration::from_secs(5);

/// The compiled server library (`<dir>/libwmfix_warm.so`), rebuilt when its source changed.
fn library(dir: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let lib = dir.join("libwmfix_warm.so");
    let src = dir.join("wmfix_warm.c");
    if lib.exists() && std::fs::read_to_string(&src).is_ok_and(|s| s == SOURCE) {
        return Ok(lib);
    }
    std::fs::write(&src, SOURCE)?;
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let out = Command::new(&cc)
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&lib)
        .arg(&src)
        .args(["-ldl", "-lpthread"])
        .output()
        .map_err(|e| {
            fail(
                UNAVAILABLE,
                format!("--warm: cannot run the C compiler `{cc}`: {e}"),
            )
        })?;
    if !out.status.success() {
        let _ = std::fs::remove_file(&lib);
        return Err(fail(
            UNAVAILABLE,
            format!(
                "--warm: `{cc}` could not build {}: {}",
                lib.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        ));
    }
    Ok(lib)
}

/// Variables the CUDA driver reads once, when the process first calls it: a process is started
/// with them (its GPU, the MPS server of `--mps`), not given them run by run.
const AT_START: [&str; 3] = [
    "CUDA_VISIBLE_DEVICES",
    "CUDA_MPS_PIPE_DIRECTORY",
    "CUDA_MPS_LOG_DIRECTORY",
];

/// What a process is started for: a program in a tree, with the driver's variables.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Key {
    dir: PathBuf,
    words: Vec<String>,
    at_start: Vec<(String, String)>,
}

/// Idle warm processes, shared by a batch's workers and kept between batches (a reduction's
/// checks); all of them killed when the pool goes.
pub struct Pool {
    lib: PathBuf,
    logs: PathBuf,
    idle: Mutex<Vec<(Key, Server)>>,
    /// Signalled when a process comes back idle.
    returned: Condvar,
    /// Processes alive, by what they were started for (idle or serving a run).
    live: Mutex<Vec<(Key, Arc<AtomicUsize>)>>,
    runs: AtomicU64,
    started: AtomicU64,
    /// Whether a process serves on after a run whose post-condition failed.
    serve_on_errors: AtomicBool,
    /// Erring runs whose process served on.
    served_on: AtomicU64,
    /// Processes replaced after a sticky CUDA error or leaked device memory.
    unhealthy: AtomicU64,
    /// Processes replaced after serving `RUNS_A_PROCESS` runs over `min_life` at least.
    retired: AtomicU64,
    min_life: Duration,
    /// How many runs at a time each GPU serves.
    pace: Pace,
}

impl Pool {
    /// A pool whose library and process logs live in `dir` (the output folder's `warm/`).
    pub fn new(dir: &Path) -> Result<Pool> {
        Ok(Pool {
            lib: library(dir)?,
            logs: dir.to_path_buf(),
            idle: Mutex::new(Vec::new()),
            returned: Condvar::new(),
            live: Mutex::new(Vec::new()),
            runs: AtomicU64::new(0),
            started: AtomicU64::new(0),
            serve_on_errors: AtomicBool::new(false),
            served_on: AtomicU64::new(0),
            unhealthy: AtomicU64::new(0),
            retired: AtomicU64::new(0),
            min_life: MIN_LIFE,
            pace: Pace::default(),
        })
    }

    /// From now on, whether a process serves on after a run whose post-condition failed (set by
    /// `run::warm_check`); off until then.
    pub fn serve_on_errors(&self, on: bool) {
        self.serve_on_errors.store(on, Ordering::SeqCst);
    }

    /// Ends the idle processes (those that served on after the check's errors, when the check
    /// finds the program's state broken by them).
    pub fn end_idle(&self) {
        self.idle.lock().unwrap().clear();
    }

    pub fn serves_on_errors(&self) -> bool {
        self.serve_on_errors.load(Ordering::SeqCst)
    }

    /// Erring runs so far whose process served on.
    pub fn served_on(&self) -> u64 {
        self.served_on.load(Ordering::SeqCst)
    }

    /// Processes started so far.
    pub fn started(&self) -> u64 {
        self.started.load(Ordering::SeqCst)
    }

    /// "warm: 2400 runs in 12 processes (90 erring runs served on; 1 process replaced after a
    /// sticky CUDA error or leaked device memory; 2 retired after 1000 runs and 30 s)".
    pub fn describe(&self) -> String {
        let mut notes = vec![];
        let on = self.served_on();
        if on > 0 {
            notes.push(format!("{on} erring runs served on"));
        }
        let sick = self.unhealthy.load(Ordering::SeqCst);
        if sick > 0 {
            notes.push(format!(
                "{sick} processes replaced after a sticky CUDA error or leaked device memory"
            ));
        }
        let retired = self.retired.load(Ordering::SeqCst);
        if retired > 0 {
            notes.push(format!(
                "{retired} retired after {RUNS_A_PROCESS} runs and {} s",
                self.min_life.as_secs()
            ));
        }
        let notes = if notes.is_empty() {
            String::new()
        } else {
            format!(" ({})", notes.join("; "))
        };
        format!(
            "warm: {} runs in {} processes{notes}",
            self.runs.load(Ordering::SeqCst),
            self.started()
        )
    }

    /// Whether runs from now on choose each GPU's runs at a time (`Pace::measure`).
    pub fn measure_pace(&self, on: bool) {
        self.pace.measure(on);
    }

    /// Each GPU's runs at a time (`run::pace`), a line each, with the rates that chose it.
    pub fn pace(&self) -> Vec<String> {
        self.pace.describe()
    }

    /// One run of `command` in `dir` with `env`, its output in `log`; `None` when the run
    /// cannot be warm (its variables ask for files written at exit: coverage, a race trace),
    /// and the caller runs it as usual. Give the lease back with `Lease::done`.
    pub fn run(
        &self,
        command: &str,
        dir: &Path,
        env: &[(String, String)],
        log: &Path,
        timeout: Duration,
    ) -> Option<std::io::Result<(Finished, Lease<'_>)>> {
        const AT_EXIT: [&str; 2] = ["WMFIX_COVERAGE", "WMFIX_RACE_TRACE"];
        if env.iter().any(|(k, _)| AT_EXIT.contains(&k.as_str())) {
            return None;
        }
        let key = Key {
            dir: dir.to_path_buf(),
            words: words(command)?,
            at_start: env
                .iter()
                .filter(|(k, _)| AT_START.contains(&k.as_str()))
                .cloned()
                .collect(),
        };
        Some(self.run_keyed(key, env, log, timeout))
    }

    fn run_keyed(
        &self,
        key: Key,
        env: &[(String, String)],
        log: &Path,
        timeout: Duration,
    ) -> std::io::Result<(Finished, Lease<'_>)> {
        let run = self.runs.fetch_add(1, Ordering::SeqCst);
        let mut env = env.to_vec();
        env.push((RUN_VAR.to_string(), run.to_string()));
        let gpu = key
            .at_start
            .iter()
            .find(|(k, _)| k == "CUDA_VISIBLE_DEVICES")
            .map_or("", |(_, v)| v.as_str());
        // The gate first: a worker waiting for room on its GPU holds no process, so a GPU
        // gets as many processes as it runs at a time, not one a worker.
        let slot = self.pace.enter(gpu, &request_of(&env));
        let mut server = self.take_or_start(&key, gpu)?;
        let started = server.runs > 0;
        let finished = server.run(&env, log, timeout);
        slot.leave(match &finished {
            Ok(f) if !matches!(f.exit, Exit::Code(_)) => Ended::Broke,
            Ok(_) if !started => Ended::First,
            Ok(f) => Ended::Steady(f.duration.as_secs_f64()),
            Err(_) => Ended::Broke,
        });
        let finished = finished?;
        Ok((
            finished,
            Lease {
                pool: self,
                key,
                server: Some(server),
            },
        ))
    }

    /// An idle process for `key`, or a fresh one where fewer are alive than `gpu` runs at a
    /// time; else waits for one to come back (its run is being judged), up to `JUDGE_WAIT`:
    /// a slow post-condition gets processes of its own rather than holding the GPU's runs.
    fn take_or_start(&self, key: &Key, gpu: &str) -> std::io::Result<Server> {
        let until = Instant::now() + JUDGE_WAIT;
        let live = {
            let mut live = self.live.lock().unwrap();
            match live.iter().find(|(k, _)| k == key) {
                Some((_, n)) => n.clone(),
                None => {
                    let n = Arc::new(AtomicUsize::new(0));
                    live.push((key.clone(), n.clone()));
                    n
                }
            }
        };
        let mut idle = self.idle.lock().unwrap();
        loop {
            if let Some(i) = idle.iter().position(|(k, _)| k == key) {
                return Ok(idle.swap_remove(i).1);
            }
            if live.load(Ordering::SeqCst) < self.pace.limit(gpu) || Instant::now() >= until {
                drop(idle);
                let n = self.started.fetch_add(1, Ordering::SeqCst);
                let log = self.logs.join(format!("process-{n}.log"));
                return Server::start(&self.lib, key, &log, live);
            }
            idle = self
                .returned
                .wait_timeout(idle, Duration::from_millis(20))
                .unwrap()
                .0;
        }
    }
}

/// What a run's rate is of (`run::pace` compares rates of one request only): its testing
/// environment and fences (`trial::TrialSpec::env_vars`), not its seed.
fn request_of(env: &[(String, String)]) -> String {
    const REQUEST: [&str; 3] = ["WMFIX_ENV", "WMFIX_FENCES", "WMFIX_FENCES_IN_LOOP"];
    let value = |k: &str| {
        env.iter()
            .rev()
            .find(|(n, _)| n == k)
            .map_or("", |(_, v)| v)
    };
    REQUEST.map(value).join(" ")
}

/// A process that just served a run: back to the pool if it can serve another (`done`), else
/// killed (also when the lease is dropped).
pub struct Lease<'a> {
    pool: &'a Pool,
    key: Key,
    server: Option<Server>,
}

impl Lease<'_> {
    pub fn done(mut self, end: End) {
        let Some(server) = self.server.take() else {
            return;
        };
        let pool = self.pool;
        let serve_on = match end {
            End::Passed => true,
            End::Failed => pool.serves_on_errors(),
            End::Broke => false,
        };
        if !serve_on || !server.alive() {
            return;
        }
        if server.runs >= RUNS_A_PROCESS && server.born.elapsed() >= pool.min_life {
            pool.retired.fetch_add(1, Ordering::SeqCst);
            return;
        }
        if !server.healthy() {
            pool.unhealthy.fetch_add(1, Ordering::SeqCst);
            return;
        }
        if end == End::Failed {
            pool.served_on.fetch_add(1, Ordering::SeqCst);
        }
        pool.idle.lock().unwrap().push((self.key.clone(), server));
        pool.returned.notify_one();
    }
}

/// One warm process: the program with the server library preloaded, in its own process group.
struct Server {
    child: Child,
    requests: ChildStdin,
    replies: mpsc::Receiver<String>,
    /// The variables the last run set, unset before the next unless it sets them too.
    set: Vec<String>,
    runs: usize,
    born: Instant,
    dead: bool,
    /// What it said after its last run.
    health: Health,
    /// The device's free memory after its first run that said.
    first_free: Option<u64>,
    /// The count of live processes started for its key, which it is one of until it ends.
    live: Arc<AtomicUsize>,
}

impl Server {
    fn start(lib: &Path, key: &Key, log: &Path, live: Arc<AtomicUsize>) -> std::io::Result<Server> {
        let mut cmd = Command::new(&key.words[0]);
        cmd.args(&key.words[1..])
            .current_dir(&key.dir)
            .env("WMFIX_WARM", "1")
            .env("LD_PRELOAD", lib)
            .envs(key.at_start.iter().cloned())
            .envs(crate::app::claim::owner_env())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(log)?)
            .process_group(0);
        let mut child = cmd.spawn()?;
        let requests = child.stdin.take().expect("piped");
        let out = child.stdout.take().expect("piped");
        let (tx, replies) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Server {
            child,
            requests,
            replies,
            set: vec![],
            runs: 0,
            born: Instant::now(),
            dead: false,
            health: Health::Unknown,
            first_free: None,
            live: {
                live.fetch_add(1, Ordering::SeqCst);
                live
            },
        })
    }

    fn alive(&self) -> bool {
        !self.dead
    }

    /// No sticky CUDA error, and no more than `LEAK_SHARE` of the GPU's memory gone since the
    /// first run.
    fn healthy(&self) -> bool {
        match (self.health, self.first_free) {
            (Health::Sticky, _) => false,
            (Health::Device { free, total }, Some(first)) => {
                first.saturating_sub(free) <= total / LEAK_SHARE
            }
            _ => true,
        }
    }

    /// The health line that follows a run's exit line, waited for until `deadline`; a process
    /// that does not say is killed (a kernel still running after main ended, say).
    fn read_health(&mut self, deadline: Instant) {
        self.health = Health::Unknown;
        loop {
            let wait = deadline.saturating_duration_since(Instant::now());
            match self
                .replies
                .recv_timeout(wait.max(Duration::from_millis(1)))
            {
                Ok(line) => {
                    if let Some(h) = Health::parse(&line) {
                        self.health = h;
                        if let Health::Device { free, .. } = h {
                            self.first_free.get_or_insert(free);
                        }
                        return;
                    }
                }
                Err(_) => {
                    self.kill();
                    return;
                }
            }
        }
    }

    fn request(&mut self, env: &[(String, String)], log: &Path) -> std::io::Result<()> {
        let mut text = String::new();
        for name in &self.set {
            if !env.iter().any(|(k, _)| k == name) {
                text += &format!("unset {name}\n");
            }
        }
        for (k, v) in env {
            if k.contains(['=', '\n']) || v.contains('\n') {
                return Err(std::io::Error::other(format!(
                    "--warm: a variable the run needs cannot be sent: {k}"
                )));
            }
            text += &format!("set {k}={v}\n");
        }
        text += &format!("log {}\nrun\n", std::path::absolute(log)?.display());
        self.set = env.iter().map(|(k, _)| k.clone()).collect();
        self.requests.write_all(text.as_bytes())?;
        self.requests.flush()
    }

    /// One run: the reply, or how the process ended, or a timeout (then the process is killed).
    fn run(
        &mut self,
        env: &[(String, String)],
        log: &Path,
        timeout: Duration,
    ) -> std::io::Result<Finished> {
        let start = Instant::now();
        self.runs += 1;
        if self.request(env, log).is_err() {
            // The process died between runs: its end is this run's.
            return Ok(self.ended(start));
        }
        loop {
            let wait = Duration::from_millis(20);
            match self.replies.recv_timeout(wait) {
                Ok(line) => {
                    if let Some(code) = line.strip_prefix("exit ").and_then(|c| c.parse().ok()) {
                        let duration = start.elapsed();
                        self.read_health(start + timeout.max(HEALTH_WAIT));
                        return Ok(Finished {
                            exit: Exit::Code(code),
                            duration,
                        });
                    }
                    if let Some(e) = line.strip_prefix("error ") {
                        self.kill();
                        return Err(std::io::Error::other(format!("--warm: {e}")));
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(self.ended(start)),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            if let Some(exit) = child::stop_now(start, timeout) {
                self.kill();
                return Ok(Finished {
                    exit,
                    duration: start.elapsed(),
                });
            }
        }
    }

    /// The process ended during a run: its status is the run's.
    fn ended(&mut self, start: Instant) -> Finished {
        self.dead = true;
        let exit = self.child.wait().map_or(Exit::Signal(0), child::exit_of);
        self.kill();
        Finished {
            exit,
            duration: start.elapsed(),
        }
    }

    fn kill(&mut self) {
        self.dead = true;
        // SAFETY: kill(2) with a negative pid signals the process group; no memory is involved.
        unsafe {
            libc::kill(-(self.child.id() as i32), libc::SIGKILL);
        }
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
        self.live.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The pool for `--warm` (`on`), its files in `dir`; a usage error when the program cannot run
/// warm.
pub fn pool(on: bool, app: &crate::app::config::App, dir: &Path) -> Result<Option<Pool>> {
    if !on {
        return Ok(None);
    }
    let cfg = &app.config;
    if let Some(why) = refusal(&cfg.run_command(), cfg.launcher.as_deref()) {
        return Err(fail(USAGE, why));
    }
    Pool::new(dir).map(Some)
}

#[cfg(test)]
#[path = "warm_tests.rs"]
mod tests;

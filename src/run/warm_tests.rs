use super::*;

/// A C program standing for a GPU program: prints (unbuffered) its pid, a call count and SEED,
/// then ends as SEED says (exit(), a return value, abort, a hang). It offers the warm server a
/// health check as wmfix's host library does, answering as HEALTH says ("sticky", or the
/// device's free bytes of 8000).
const APP: &str = r#"
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static int calls;
static const char *mps_at_start;
__attribute__((constructor)) static void at_start(void) { mps_at_start = getenv("CUDA_MPS_PIPE_DIRECTORY"); }
static int health(unsigned long long *free_bytes, unsigned long long *total_bytes) {
  const char *h = getenv("HEALTH");
  *total_bytes = 8000;
  *free_bytes = h ? strtoull(h, 0, 10) : 8000;
  return h && strcmp(h, "sticky") == 0;
}
int main(int argc, char **argv) {
  void (*offer)(int (*)(unsigned long long *, unsigned long long *)) = dlsym(RTLD_DEFAULT, "wmfix_warm_health");
  if (offer && getenv("HEALTH")) offer(health);
  calls++;
  const char *s = getenv("SEED");
  const char *extra = getenv("EXTRA");
  fprintf(stderr, "pid=%d call=%d seed=%s extra=%s arg=%s mps=%s\n", getpid(), calls, s ? s : "-", extra ? extra : "-", argc > 1 ? argv[1] : "-", mps_at_start ? mps_at_start : "-");
  int seed = s ? atoi(s) : 0;
  if (seed == 3) exit(7);
  if (seed == 4) abort();
  if (seed == 5) sleep(100);
  if (seed == 6) usleep(3000);
  return seed % 2;
}
"#;

fn app(tmp: &Path) -> PathBuf {
    let src = tmp.join("app.c");
    std::fs::write(&src, APP).unwrap();
    let ok = Command::new("cc")
        .arg("-o")
        .arg(tmp.join("app"))
        .arg(&src)
        .arg("-ldl")
        .status()
        .unwrap()
        .success();
    assert!(ok, "cc could not build the stand-in");
    tmp.to_path_buf()
}

/// A scratch folder with the stand-in built, and a pool whose files live in it.
fn fresh() -> (tempfile::TempDir, PathBuf, Pool) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = app(tmp.path());
    let pool = Pool::new(&tmp.path().join("warm")).unwrap();
    (tmp, dir, pool)
}

fn seed(s: &str) -> Vec<(String, String)> {
    vec![("SEED".to_string(), s.to_string())]
}

/// SEED and one more variable.
fn seed_and(s: &str, name: &str, value: &str) -> Vec<(String, String)> {
    [seed(s), vec![(name.to_string(), value.to_string())]].concat()
}

struct Ran {
    exit: Exit,
    out: String,
}

fn go(pool: &Pool, dir: &Path, env: &[(String, String)], end: End) -> Ran {
    let log = dir.join("run.log");
    let (f, lease) = pool
        .run("./app hi", dir, env, &log, Duration::from_secs(2))
        .expect("can be warm")
        .unwrap();
    lease.done(end);
    Ran {
        exit: f.exit,
        out: std::fs::read_to_string(&log).unwrap_or_default(),
    }
}

fn field<'a>(out: &'a str, name: &str) -> &'a str {
    out.split_whitespace()
        .find_map(|w| w.strip_prefix(name).and_then(|w| w.strip_prefix('=')))
        .unwrap_or_else(|| panic!("no {name} in {out:?}"))
}

#[test]
fn one_process_serves_runs_that_pass_each_with_its_own_variables_and_log() {
    let (_tmp, dir, pool) = fresh();
    let a = go(
        &pool,
        &dir,
        &[seed("2"), vec![("EXTRA".into(), "x".into())]].concat(),
        End::Passed,
    );
    assert_eq!(a.exit, Exit::Code(0));
    assert_eq!(field(&a.out, "call"), "1");
    assert_eq!(field(&a.out, "extra"), "x");
    assert_eq!(field(&a.out, "arg"), "hi");
    // Same process, main called again; EXTRA, not sent this time, is unset.
    let b = go(&pool, &dir, &seed("1"), End::Passed);
    assert_eq!(b.exit, Exit::Code(1));
    assert_eq!(field(&b.out, "pid"), field(&a.out, "pid"));
    assert_eq!(field(&b.out, "call"), "2");
    assert_eq!(field(&b.out, "seed"), "1");
    assert_eq!(field(&b.out, "extra"), "-");
    // exit() ends the run, not the process.
    let c = go(&pool, &dir, &seed("3"), End::Passed);
    assert_eq!(c.exit, Exit::Code(7));
    assert_eq!(field(&c.out, "pid"), field(&a.out, "pid"));
    assert_eq!(pool.started(), 1);
    assert_eq!(pool.describe(), "warm: 3 runs in 1 processes");
}

#[test]
fn a_run_that_failed_ends_its_process_unless_the_pool_serves_on_after_errors() {
    let (_tmp, dir, pool) = fresh();
    let a = go(&pool, &dir, &seed("1"), End::Failed);
    let b = go(&pool, &dir, &seed("2"), End::Passed);
    assert_ne!(field(&b.out, "pid"), field(&a.out, "pid"));
    pool.serve_on_errors(true);
    // Every other run fails: one process serves them all.
    for i in 0..10 {
        let (s, end) = if i % 2 == 0 {
            ("1", End::Failed)
        } else {
            ("2", End::Passed)
        };
        let r = go(&pool, &dir, &seed(s), end);
        assert_eq!(field(&r.out, "pid"), field(&b.out, "pid"));
        assert_eq!(field(&r.out, "call"), (i + 2).to_string());
    }
    // exit() in a failing run too.
    let c = go(&pool, &dir, &seed("3"), End::Failed);
    assert_eq!(c.exit, Exit::Code(7));
    assert_eq!(field(&c.out, "pid"), field(&b.out, "pid"));
    assert_eq!(pool.started(), 2);
    assert_eq!(pool.served_on(), 6);
    assert_eq!(
        pool.describe(),
        "warm: 13 runs in 2 processes (6 erring runs served on)"
    );
    // A crash still ends its process.
    let crash = go(&pool, &dir, &seed("4"), End::Broke);
    assert_eq!(crash.exit, Exit::Signal(libc::SIGABRT));
    let d = go(&pool, &dir, &seed("1"), End::Failed);
    assert_eq!(field(&d.out, "call"), "1");
    assert_eq!(pool.started(), 3);
}

#[test]
fn the_driver_s_variables_are_set_when_the_process_starts_and_keep_processes_apart() {
    let (_tmp, dir, pool) = fresh();
    let mps = |pipe: &str| seed_and("2", "CUDA_MPS_PIPE_DIRECTORY", pipe);
    let a = go(&pool, &dir, &mps("/p1"), End::Passed);
    assert_eq!(field(&a.out, "mps"), "/p1", "{}", a.out);
    let b = go(&pool, &dir, &mps("/p2"), End::Passed);
    assert_eq!(field(&b.out, "mps"), "/p2", "{}", b.out);
    assert_ne!(field(&b.out, "pid"), field(&a.out, "pid"));
    let c = go(&pool, &dir, &mps("/p1"), End::Passed);
    assert_eq!(field(&c.out, "pid"), field(&a.out, "pid"));
    assert_eq!(pool.started(), 2);
}

#[test]
fn a_process_is_retired_after_its_share_of_runs_and_the_summary_says_so() {
    let (_tmp, dir, mut pool) = fresh();
    pool.min_life = Duration::ZERO;
    pool.serve_on_errors(true);
    let first = go(&pool, &dir, &seed("1"), End::Failed);
    for _ in 1..RUNS_A_PROCESS {
        go(&pool, &dir, &seed("1"), End::Failed);
    }
    let next = go(&pool, &dir, &seed("2"), End::Passed);
    assert_ne!(field(&next.out, "pid"), field(&first.out, "pid"));
    assert_eq!(field(&next.out, "call"), "1");
    assert_eq!(
        pool.describe(),
        format!(
            "warm: {} runs in 2 processes ({} erring runs served on; 1 retired after {RUNS_A_PROCESS} runs and 0 s)",
            RUNS_A_PROCESS + 1,
            RUNS_A_PROCESS - 1
        )
    );
}

#[test]
fn a_process_that_served_its_runs_quickly_lives_on_until_its_minimum_life() {
    // Short runs: a process a thousand of them would queue a fresh CUDA context every few
    // seconds on the host's one queue.
    let (_tmp, dir, mut pool) = fresh();
    pool.min_life = Duration::from_secs(3600);
    let first = go(&pool, &dir, &seed("2"), End::Passed);
    for _ in 0..RUNS_A_PROCESS + 10 {
        go(&pool, &dir, &seed("2"), End::Passed);
    }
    let last = go(&pool, &dir, &seed("2"), End::Passed);
    assert_eq!(field(&last.out, "pid"), field(&first.out, "pid"));
    assert_eq!(field(&last.out, "call"), (RUNS_A_PROCESS + 12).to_string());
    assert_eq!(pool.started(), 1);
}

fn health(h: &str, s: &str) -> Vec<(String, String)> {
    [seed(s), vec![("HEALTH".to_string(), h.to_string())]].concat()
}

#[test]
fn a_sticky_cuda_error_or_leaked_device_memory_ends_the_process() {
    let (_tmp, dir, pool) = fresh();
    pool.serve_on_errors(true);
    // Free memory after the first run: 8000 of 8000; falling by up to an eighth is served on.
    let a = go(&pool, &dir, &health("8000", "1"), End::Failed);
    let b = go(&pool, &dir, &health("7000", "1"), End::Failed);
    assert_eq!(field(&b.out, "pid"), field(&a.out, "pid"));
    let c = go(&pool, &dir, &health("6999", "2"), End::Passed);
    assert_eq!(field(&c.out, "pid"), field(&a.out, "pid"));
    // 1001 bytes gone: replaced, even after a run that passed.
    let d = go(&pool, &dir, &health("8000", "2"), End::Passed);
    assert_ne!(field(&d.out, "pid"), field(&a.out, "pid"));
    assert_eq!(field(&d.out, "call"), "1");
    // A sticky error: replaced.
    let e = go(&pool, &dir, &health("sticky", "2"), End::Passed);
    assert_eq!(field(&e.out, "pid"), field(&d.out, "pid"));
    let f = go(&pool, &dir, &health("8000", "2"), End::Passed);
    assert_ne!(field(&f.out, "pid"), field(&d.out, "pid"));
    assert_eq!(pool.started(), 3);
    assert!(
        pool.describe().ends_with(
            "(2 erring runs served on; 2 processes replaced after a sticky CUDA error or leaked device memory)"
        ),
        "{}",
        pool.describe()
    );
}

#[test]
fn a_run_that_erred_ends_its_process() {
    let (_tmp, dir, pool) = fresh();
    let a = go(&pool, &dir, &seed("2"), End::Failed);
    let b = go(&pool, &dir, &seed("2"), End::Passed);
    assert_ne!(field(&b.out, "pid"), field(&a.out, "pid"));
    assert_eq!(field(&b.out, "call"), "1");
    assert_eq!(pool.started(), 2);
}

#[test]
fn a_crash_and_a_timeout_are_the_runs_and_the_next_run_gets_a_fresh_process() {
    let (_tmp, dir, pool) = fresh();
    let a = go(&pool, &dir, &seed("2"), End::Passed);
    let crash = go(&pool, &dir, &seed("4"), End::Passed);
    assert_eq!(crash.exit, Exit::Signal(libc::SIGABRT));
    let t0 = Instant::now();
    let hang = go(&pool, &dir, &seed("5"), End::Passed);
    assert_eq!(hang.exit, Exit::Timeout);
    assert!(t0.elapsed() < Duration::from_secs(10));
    let pid: i32 = field(&hang.out, "pid").parse().unwrap_or(0);
    let after = go(&pool, &dir, &seed("2"), End::Passed);
    assert_eq!(after.exit, Exit::Code(0));
    assert_eq!(field(&after.out, "call"), "1");
    assert_ne!(field(&after.out, "pid"), field(&a.out, "pid"));
    assert_eq!(
        pool.started(),
        3,
        "the crashed and the timed-out processes were replaced"
    );
    if pid > 0 {
        // The hung process was killed (at most a zombie for a moment).
        let gone = || {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| {
                s.rsplit(')')
                    .next()
                    .is_some_and(|r| r.trim_start().starts_with('Z'))
            })
        };
        let t = Instant::now();
        while !gone() && t.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(gone(), "the timed-out process lives on");
    }
}

#[test]
fn runs_that_write_files_at_exit_are_not_warm() {
    let tmp = tempfile::tempdir().unwrap();
    let pool = Pool::new(&tmp.path().join("warm")).unwrap();
    let env = vec![("WMFIX_COVERAGE".to_string(), "/tmp/x".to_string())];
    let log = tmp.path().join("l");
    assert!(
        pool.run("./app", tmp.path(), &env, &log, Duration::from_secs(1))
            .is_none()
    );
}

#[test]
fn only_plain_commands_without_a_launcher_run_warm() {
    assert_eq!(
        words("./red 256 256 65536 1").unwrap(),
        ["./red", "256", "256", "65536", "1"]
    );
    assert!(words("./bh 4096 32 128 10").is_some());
    for shell in [
        "./a | tee x",
        "./a && ./b",
        "./a \"x y\"",
        "./a $X",
        "./a > out",
        "FOO=1 ./a;",
    ] {
        assert!(refusal(shell, None).is_some(), "{shell}");
    }
    assert!(
        refusal("./a", Some("srun -n1"))
            .unwrap()
            .contains("launcher")
    );
    assert!(refusal("./a", Some(" ")).is_none());
}

#[test]
fn runs_of_several_workers_pass_each_gpu_s_gate_and_the_rates_are_said() {
    let (_tmp, dir, pool) = fresh();
    let on = |gpu: &str| seed_and("6", "CUDA_VISIBLE_DEVICES", gpu);
    std::thread::scope(|s| {
        for w in 0..4 {
            let (pool, dir, env) = (&pool, &dir, on(if w % 2 == 0 { "0" } else { "1" }));
            s.spawn(move || {
                for _ in 0..40 {
                    let log = dir.join(format!("run-{w}.log"));
                    let (f, lease) = pool
                        .run("./app hi", dir, &env, &log, Duration::from_secs(5))
                        .expect("can be warm")
                        .unwrap();
                    assert_eq!(f.exit, Exit::Code(0));
                    lease.done(End::Passed);
                }
            });
        }
    });
    let pace = pool.pace();
    assert_eq!(pace.len(), 2, "{pace:?}");
    assert!(pace[0].starts_with("GPU 0: "), "{pace:?}");
    assert!(pace[1].starts_with("GPU 1: "), "{pace:?}");
    assert!(
        pace.iter().all(|l| l.contains("by runs at a time: 1: ")),
        "{pace:?}"
    );
    assert_eq!(pool.started(), 4);
}

#[test]
fn workers_waiting_for_room_on_a_gpu_hold_no_process_of_their_own() {
    let (_tmp, dir, pool) = fresh();
    // Unmeasured runs leave the GPU at one run at a time.
    pool.measure_pace(false);
    let env = seed_and("2", "CUDA_VISIBLE_DEVICES", "0");
    std::thread::scope(|s| {
        for w in 0..8 {
            let (pool, dir, env) = (&pool, &dir, &env);
            s.spawn(move || {
                for _ in 0..10 {
                    let log = dir.join(format!("run-{w}.log"));
                    let (f, lease) = pool
                        .run("./app hi", dir, env, &log, Duration::from_secs(5))
                        .expect("can be warm")
                        .unwrap();
                    assert_eq!(f.exit, Exit::Code(0));
                    lease.done(End::Passed);
                }
            });
        }
    });
    // One process serves the GPU's one run at a time (a second only where a worker was slow
    // to give its process back), not one a worker.
    assert!(pool.started() <= 2, "{}", pool.describe());
    assert!(pool.describe().starts_with("warm: 80 runs in "));
}

#[test]
fn a_request_is_its_environment_and_fences_not_its_seed() {
    let vars = |env: &str, seed: &str, fences: &str| -> Vec<(String, String)> {
        [
            ("WMFIX_ENV", env),
            ("WMFIX_SEED", seed),
            ("WMFIX_FENCES", fences),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .to_vec()
    };
    let none = request_of(&vars("sys-str+", "1", "none"));
    assert_eq!(none, request_of(&vars("sys-str+", "2", "none")));
    assert_ne!(none, request_of(&vars("sys-str+", "1", "1")));
    assert_ne!(none, request_of(&vars("no-str-", "1", "none")));
}

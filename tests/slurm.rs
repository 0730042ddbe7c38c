//! `wmfix test` and `wmfix reduce` through a real Slurm's `srun` (issue 29), on the CPU stand-ins
//! (`gpu = false`): the records equal a local run's with the same seeds; ctrl-c leaves no step
//! running; after a `kill -9` of wmfix, the next wmfix on the folder cancels the steps and jobs
//! left behind (`app/slurm.rs`, found by their name `wmfix-<token>`).
//!
//! They need a cluster: `scripts/slurm-local.sh start` runs a one-node one here (its
//! configuration is found through SLURM_CONF, else in `$WMFIX_SLURM_DIR` or /tmp/wmfix-slurm).
//! So they are ignored unless asked for: `scripts/test.sh` runs them where it finds the cluster
//! (`scripts/test-select.sh`) and else has the runner report them skipped, and fails under
//! CI=true, which starts the cluster (.ci/run). Asked for without one, each fails.

mod common;
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The cluster the tests use: the SLURM_CONF every Slurm command and wmfix gets.
struct Cluster {
    conf: Option<PathBuf>,
}

impl Cluster {
    /// The cluster; a test that asked for one fails without it (it never passes unrun).
    fn up() -> Cluster {
        let c = Cluster { conf: conf() };
        if let Err(why) = c.check() {
            panic!("no Slurm cluster: {why} (scripts/slurm-local.sh start runs one here)");
        }
        c
    }

    /// Ok when `sinfo` answers and lists a node that takes work.
    fn check(&self) -> Result<(), String> {
        let mut sinfo = self.command("sinfo");
        sinfo.args(["--noheader", "--format=%t"]);
        let o = output_within(sinfo, Duration::from_secs(20)).map_err(|e| format!("sinfo: {e}"))?;
        let states = String::from_utf8_lossy(&o.stdout).into_owned();
        if !o.status.success() {
            return Err(format!(
                "sinfo failed: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            ));
        }
        let up = |s: &str| ["idle", "mix", "alloc"].contains(&s);
        if !states.split_whitespace().any(up) {
            return Err(format!("no node idle, mixed or allocated: {states:?}"));
        }
        Ok(())
    }

    fn command(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        if let Some(conf) = &self.conf {
            c.env("SLURM_CONF", conf);
        }
        c
    }

    fn wmfix(&self) -> Command {
        let mut c = wmfix();
        if let Some(conf) = &self.conf {
            c.env("SLURM_CONF", conf);
        }
        c
    }

    /// `squeue`'s lines for `args`.
    fn squeue(&self, args: &[&str]) -> Vec<String> {
        let mut c = self.command("squeue");
        c.arg("--noheader").args(args);
        let o = output_within(c, Duration::from_secs(20)).unwrap();
        assert!(o.status.success(), "squeue {args:?}: {o:?}");
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(|l| l.trim().to_string())
            .collect()
    }

    /// The steps named `name`, and the jobs of that name not yet ending (matched here:
    /// `squeue --name` does not filter steps).
    fn live(&self, name: &str) -> Vec<String> {
        let mut lines = self.squeue(&["--steps", "--format=%i %j"]);
        lines.extend(self.squeue(&["--format=%i %j", "--states=PD,R,S,CF"]));
        lines
            .iter()
            .filter_map(|l| l.split_once(' '))
            .filter(|(_, n)| *n == name)
            .map(|(id, _)| id.to_string())
            .collect()
    }

    /// Waits up to `secs` for nothing named `name` to be live; returns what still is.
    fn live_after(&self, name: &str, secs: u64) -> Vec<String> {
        let t0 = Instant::now();
        loop {
            let live = self.live(name);
            if live.is_empty() || t0.elapsed().as_secs() >= secs {
                return live;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// An allocation of `tasks` tasks (`salloc --no-shell`), cancelled when dropped.
    fn allocate(&self, tasks: u32) -> Allocation<'_> {
        let mut salloc = self.command("salloc");
        salloc.args(["--no-shell", "--job-name=test-allocation"]);
        salloc.arg(format!("--ntasks={tasks}"));
        let o = output_within(salloc, Duration::from_secs(60)).unwrap();
        let said = String::from_utf8_lossy(&o.stderr).into_owned();
        let id = said
            .split_whitespace()
            .last()
            .filter(|_| said.contains("Granted job allocation"))
            .unwrap_or_else(|| panic!("salloc: {said}"))
            .to_string();
        Allocation { cluster: self, id }
    }
}

struct Allocation<'a> {
    cluster: &'a Cluster,
    id: String,
}

impl Allocation<'_> {
    /// A launcher of one-task steps in the allocation, as many at once as it has tasks.
    fn launcher(&self) -> String {
        format!("srun --jobid={} --ntasks=1 --exact --quiet", self.id)
    }
}

impl Drop for Allocation<'_> {
    fn drop(&mut self) {
        let _ = self.cluster.command("scancel").arg(&self.id).status();
    }
}

/// SLURM_CONF when set, else the one scripts/slurm-local.sh writes, if it has.
fn conf() -> Option<PathBuf> {
    if std::env::var_os("SLURM_CONF").is_some() {
        return None;
    }
    let dir = std::env::var("WMFIX_SLURM_DIR").unwrap_or_else(|_| "/tmp/wmfix-slurm".into());
    Some(Path::new(&dir).join("slurm.conf")).filter(|p| p.exists())
}

/// `command`'s output, or an error when it cannot start or takes longer than `limit`.
fn output_within(mut command: Command, limit: Duration) -> Result<Output, String> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let t0 = Instant::now();
    while child.try_wait().map_err(|e| e.to_string())?.is_none() {
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("no answer in {} s", limit.as_secs()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().map_err(|e| e.to_string())
}

/// The launcher of the tests' runs: each its own job on the local node.
const SRUN: &str = "srun --ntasks=1 --quiet";

/// A copy of `fixture` whose runs first append `$SLURM_JOB_ID $SLURM_JOB_NAME` to
/// `$STEPS_LOG`: which Slurm job ran each, under which name.
fn logged_fixture(fixture_name: &str) -> (tempfile::TempDir, PathBuf) {
    let (tmp, dir) = fixture(fixture_name);
    let toml = std::fs::read_to_string(dir.join("wmfix.toml")).unwrap();
    let logged = r#"run = "echo \"$SLURM_JOB_ID $SLURM_JOB_NAME\" >> \"$STEPS_LOG\"; ./app""#;
    let toml = toml.replace(r#"run = "./app""#, logged);
    assert!(toml.contains("STEPS_LOG"), "{toml}");
    std::fs::write(dir.join("wmfix.toml"), toml).unwrap();
    (tmp, dir)
}

/// The lines of a steps log: (job id, job name), empty outside Slurm.
fn steps(log: &Path) -> Vec<(String, String)> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| {
            let (id, name) = l.split_once(' ').unwrap();
            (id.to_string(), name.to_string())
        })
        .collect()
}

/// The one step name of a log whose every run went through Slurm.
fn the_step_name(log: &Path) -> String {
    let steps = steps(log);
    assert!(!steps.is_empty());
    assert!(steps.iter().all(|(id, _)| !id.is_empty()), "{steps:?}");
    let name = &steps[0].1;
    assert!(name.starts_with("wmfix-"), "{steps:?}");
    assert!(steps.iter().all(|(_, n)| n == name), "{steps:?}");
    name.clone()
}

fn records(out: &Path) -> Vec<(String, u64, String, String)> {
    let mut recs: Vec<_> = std::fs::read_to_string(out.join("test/runs.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let r: Value = serde_json::from_str(l).unwrap();
            let s = |k: &str| r[k].as_str().unwrap().to_string();
            (
                s("env"),
                r["seed"].as_u64().unwrap(),
                s("outcome"),
                s("fences"),
            )
        })
        .collect();
    recs.sort();
    recs
}

fn ok(o: &Output, code: i32) {
    assert_eq!(o.status.code(), Some(code), "{}\n{}", stdout(o), stderr(o));
}

#[test]
#[ignore = "needs a Slurm cluster: scripts/test.sh runs it where there is one"]
fn test_through_srun_records_what_a_local_test_records() {
    let cluster = Cluster::up();
    let (tmp, dir) = logged_fixture("standin");
    let t0 = Instant::now();
    let test = |out: &str, log: &Path, extra: &[&str]| {
        let mut c = cluster.wmfix();
        c.current_dir(tmp.path())
            .args(["test", dir.to_str().unwrap(), "--out", out])
            .args(["--env", "sys-str+,no-str-", "--runs", "12", "--jobs", "3"])
            .args(extra)
            .env("STANDIN_MODE", "rate")
            .env("STANDIN_PERCENT", "30")
            .env("STEPS_LOG", log);
        c.output().unwrap()
    };
    let local_log = tmp.path().join("local.log");
    ok(&test("local", &local_log, &[]), 2);
    let slurm_log = tmp.path().join("slurm.log");
    ok(&test("slurm", &slurm_log, &["--launcher", SRUN]), 2);

    let local = records(&tmp.path().join("local"));
    assert_eq!(local.len(), 24);
    assert!(local.iter().any(|r| r.2 == "fail") && local.iter().any(|r| r.2 == "pass"));
    assert_eq!(records(&tmp.path().join("slurm")), local);
    assert!(steps(&local_log).iter().all(|(id, _)| id.is_empty()));
    // Every run (the baseline's too) was a Slurm job of its own, named after the folder.
    let name = the_step_name(&slurm_log);
    let jobs: std::collections::BTreeSet<_> = steps(&slurm_log).into_iter().map(|s| s.0).collect();
    assert_eq!(jobs.len(), steps(&local_log).len(), "{jobs:?}");
    assert!(cluster.live(&name).is_empty());
    eprintln!(
        "test, local and through srun: {:.1} s",
        t0.elapsed().as_secs_f64()
    );
}

/// `reduce`'s journal: each check's fences, request and errors. Not its runs: with several
/// jobs, how many runs a check that stops at its first error has judged by then varies.
fn journal(out: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(out.join("reduce/journal.jsonl")).unwrap();
    text.lines()
        .skip(1)
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let keep = ["nonce", "fences", "request"].map(|k| (k.to_string(), v[k].clone()));
            let mut kept: serde_json::Map<_, _> = keep.into_iter().collect();
            kept.insert("errors".into(), v["tally"]["errors"].clone());
            Value::Object(kept)
        })
        .collect()
}

fn kept(out: &Path) -> Value {
    let text = std::fs::read_to_string(out.join("reduce/reduce.json")).unwrap();
    let report: Value = serde_json::from_str(&text).unwrap();
    report["result"]["fences"].clone()
}

#[test]
#[ignore = "needs a Slurm cluster: scripts/test.sh runs it where there is one"]
fn reduce_through_srun_keeps_what_a_local_reduction_keeps() {
    let cluster = Cluster::up();
    let (tmp, dir) = logged_fixture("reduce-standin");
    let body: String = (0..8).map(|i| format!("  a[{i}] = {i};\n")).collect();
    let kernel = format!("__global__ void k(int *a) {{\n{body}}}\n");
    std::fs::write(dir.join("kernel.cu"), kernel).unwrap();
    let t0 = Instant::now();
    let reduce = |out: &str, log: &Path, extra: &[&str]| {
        let mut c = cluster.wmfix();
        c.current_dir(tmp.path())
            .args([
                "reduce",
                dir.to_str().unwrap(),
                "--out",
                out,
                "--hours",
                "1",
            ])
            .args(["--jobs", "3"])
            .args(extra)
            .env("STANDIN_REQUIRED", "2,5")
            .env("STANDIN_PERCENT", "40")
            .env("STEPS_LOG", log);
        c.output().unwrap()
    };
    let local_log = tmp.path().join("local.log");
    ok(&reduce("local", &local_log, &[]), 0);
    // Steps of one allocation, as inside `salloc`: no job to schedule a run.
    let alloc = cluster.allocate(4);
    let slurm_log = tmp.path().join("slurm.log");
    ok(
        &reduce("slurm", &slurm_log, &["--launcher", &alloc.launcher()]),
        0,
    );

    let local = tmp.path().join("local");
    let slurm = tmp.path().join("slurm");
    assert_eq!(kept(&local), serde_json::json!([2, 5]));
    assert_eq!(kept(&slurm), kept(&local));
    assert_eq!(journal(&slurm), journal(&local));
    let name = the_step_name(&slurm_log);
    assert!(cluster.live(&name).is_empty());
    eprintln!(
        "reduce, local and through srun ({} and {} runs): {:.1} s",
        steps(&local_log).len(),
        steps(&slurm_log).len(),
        t0.elapsed().as_secs_f64()
    );
}

/// A `wmfix test` of runs that hang (`sleep 1000`, its pid in `pidfile`), through `launcher`.
fn hanging_test(cluster: &Cluster, tmp: &Path, dir: &Path, launcher: &str, log: &Path) -> Child {
    cluster
        .wmfix()
        .current_dir(tmp)
        .args(["test", dir.to_str().unwrap(), "--out", "out"])
        .args(["--runs", "4", "--jobs", "2", "--launcher", launcher])
        .env("STANDIN_MODE", "hang")
        .env("STANDIN_PIDFILE", tmp.join("pid"))
        .env("STEPS_LOG", log)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The pid of the hanging run's `sleep`, once a run has written it.
fn hanging_pid(tmp: &Path) -> i32 {
    let t0 = Instant::now();
    loop {
        let pid = std::fs::read_to_string(tmp.join("pid")).ok();
        if let Some(p) = pid.and_then(|t| t.trim().parse().ok()) {
            return p;
        }
        assert!(t0.elapsed().as_secs() < 60, "no run started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
#[ignore = "needs a Slurm cluster: scripts/test.sh runs it where there is one"]
fn ctrl_c_leaves_no_step_running() {
    let cluster = Cluster::up();
    let (tmp, dir) = logged_fixture("standin");
    // Steps in an allocation: they are named, their job is not.
    let alloc = cluster.allocate(4);
    let log = tmp.path().join("steps.log");
    let child = hanging_test(&cluster, tmp.path(), &dir, &alloc.launcher(), &log);
    let pid = hanging_pid(tmp.path());
    let name = the_step_name(&log);
    assert!(!cluster.live(&name).is_empty(), "no step to stop");
    let t0 = Instant::now();
    let o = interrupt(child);
    // wmfix kills the run's srun first; srun may end its step itself before wmfix asks squeue
    // (seen once in CI under load), so wmfix's "cancelled" line is not required: no step left is.
    assert!(
        stderr(&o).contains("interrupted"),
        "ctrl-c was not seen: {}",
        stderr(&o)
    );
    let live = cluster.live_after(&name, 5);
    assert!(
        live.is_empty(),
        "steps still running after ctrl-c: {live:?}"
    );
    assert!(!alive(pid), "the run's program outlived ctrl-c");
    eprintln!(
        "ctrl-c to no step left: {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    assert!(
        cluster.squeue(&["--format=%i"]).contains(&alloc.id),
        "wmfix cancelled the allocation, not only its steps"
    );
}

#[test]
#[ignore = "needs a Slurm cluster: scripts/test.sh runs it where there is one"]
fn after_kill_minus_9_the_next_wmfix_cancels_the_steps_left_behind() {
    let cluster = Cluster::up();
    let (tmp, dir) = logged_fixture("standin");
    let log = tmp.path().join("steps.log");
    let mut child = hanging_test(&cluster, tmp.path(), &dir, SRUN, &log);
    let pid = hanging_pid(tmp.path());
    let name = the_step_name(&log);
    child.kill().unwrap(); // SIGKILL: wmfix cannot stop its runs
    let killed = child.wait_with_output().unwrap();
    std::thread::sleep(Duration::from_secs(1));
    let said = format!(
        "pid {pid}\nwmfix said: {}\nsteps: {:?}",
        stderr(&killed),
        steps(&log)
    );
    assert!(
        !cluster.live(&name).is_empty(),
        "the steps died with wmfix: {said}"
    );
    assert!(
        alive(pid),
        "the run died with wmfix: nothing to test: {said}"
    );

    // The next wmfix on the folder, without a launcher, finds them by name before it starts.
    let t0 = Instant::now();
    let o = cluster
        .wmfix()
        .current_dir(tmp.path())
        .args(["build", dir.to_str().unwrap(), "--out", "out"])
        .output()
        .unwrap();
    ok(&o, 0);
    let live = cluster.live(&name);
    assert!(
        live.is_empty(),
        "still running once wmfix started: {live:?}\n{}",
        stderr(&o)
    );
    assert!(!alive(pid), "the run's program outlived the next wmfix");
    assert!(
        stderr(&o).contains("cancelled") && stderr(&o).contains("left running"),
        "{}",
        stderr(&o)
    );
    eprintln!(
        "next wmfix, with the cancel: {:.1} s",
        t0.elapsed().as_secs_f64()
    );
}

//! `wmfix test` and `wmfix build` on a stand-in program (tests/fixtures/standin/app.sh) that
//! fails at a known rate, hangs, or crashes: counts, process-group kills, JSON, exit codes,
//! replay and ctrl-c.

mod common;
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

fn standin() -> (tempfile::TempDir, PathBuf) {
    fixture("standin")
}

fn test(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    on_standin("test", dir, args, env)
}

/// `wmfix SUB DIR --out out ARGS` beside the stand-in, its runs told `env`.
fn on_standin(sub: &str, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = wmfix();
    c.current_dir(dir.parent().unwrap())
        .args([sub, dir.to_str().unwrap(), "--out", "out"])
        .args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn records(out: &Path) -> Vec<Value> {
    std::fs::read_to_string(out.join("test/runs.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn errors_are_counted_exactly_and_recorded() {
    let (tmp, dir) = standin();
    let o = test(
        &dir,
        &["--env", "sys-str+,no-str-", "--runs", "120", "--jobs", "3"],
        &[("STANDIN_MODE", "rate"), ("STANDIN_PERCENT", "25")],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let out = tmp.path().join("out");
    let recs = records(&out);
    assert_eq!(recs.len(), 240);
    let mut ids: Vec<u64> = recs.iter().map(|r| r["id"].as_u64().unwrap()).collect();
    ids.sort();
    assert_eq!(ids, (0..240).collect::<Vec<_>>());
    let mut fails = 0;
    for r in &recs {
        let expect_fail = r["seed"].as_u64().unwrap() % 100 < 25;
        assert_eq!(
            r["outcome"],
            if expect_fail { "fail" } else { "pass" },
            "{r}"
        );
        assert_eq!(r["fences"], "none");
        if expect_fail {
            fails += 1;
            let log =
                std::fs::read_to_string(out.join("test").join(r["log"].as_str().unwrap())).unwrap();
            assert!(
                log.contains("FAIL: wrong result") && log.contains(&format!("seed={}", r["seed"])),
                "{log}"
            );
        } else {
            assert!(r["log"].is_null());
        }
    }
    assert!(fails > 30 && fails < 90, "{fails} of 240 with a 25% rate");
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("test/summary.json")).unwrap())
            .unwrap();
    let rows = summary["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    let total_fail: u64 = rows.iter().map(|r| r["fail"].as_u64().unwrap()).sum();
    assert_eq!(total_fail, fails);
    let table = stdout(&o);
    assert!(
        table.contains("sys-str+") && table.contains("no-str-") && table.contains("95% CI"),
        "{table}"
    );
    // The seeds differ between environments.
    let seeds: std::collections::HashSet<u64> =
        recs.iter().map(|r| r["seed"].as_u64().unwrap()).collect();
    assert_eq!(seeds.len(), 240);
}

#[test]
fn replay_reruns_a_recorded_run() {
    let (tmp, dir) = standin();
    // Four fences, so that `--fences 0,2-3` names fences the program has.
    std::fs::write(
        dir.join("kernel.cu"),
        "__global__ void k(int *a) { a[0] = 0; a[1] = 1; a[2] = 2; a[3] = 3; }\n",
    )
    .unwrap();
    let env = [("STANDIN_MODE", "rate"), ("STANDIN_PERCENT", "50")];
    let o = test(&dir, &["--runs", "20", "--fences", "0,2-3"], &env);
    assert_eq!(o.status.code(), Some(2));
    let recs = records(&tmp.path().join("out"));
    let failed = recs.iter().find(|r| r["outcome"] == "fail").unwrap();
    let passed = recs.iter().find(|r| r["outcome"] == "pass").unwrap();
    for (r, code) in [(failed, 2), (passed, 0)] {
        let id = r["id"].to_string();
        let o = test(&dir, &["--replay", &id], &env);
        assert_eq!(o.status.code(), Some(code), "{}", stderr(&o));
        let s = stdout(&o);
        assert!(
            s.contains(&format!("seed={} fences=0,2-3", r["seed"])),
            "{s}"
        );
    }
    assert_eq!(
        test(&dir, &["--replay", "999"], &env).status.code(),
        Some(65)
    );
}

#[test]
fn timeouts_kill_the_whole_process_group() {
    let (tmp, dir) = standin();
    let cfg = std::fs::read_to_string(dir.join("wmfix.toml"))
        .unwrap()
        .replace("timeout_s = 10", "timeout_s = 0.5");
    std::fs::write(dir.join("wmfix.toml"), cfg).unwrap();
    let pidfile = tmp.path().join("pid");
    let o = test(
        &dir,
        &["--runs", "2"],
        &[
            ("STANDIN_MODE", "hang"),
            ("STANDIN_PIDFILE", pidfile.to_str().unwrap()),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let recs = records(&tmp.path().join("out"));
    assert!(recs.iter().all(|r| r["outcome"] == "timeout"));
    assert!(recs.iter().all(|r| r["duration_s"].as_f64().unwrap() < 3.0));
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(!alive(pid), "the program's grandchild outlived the timeout");
}

#[test]
fn crashes_are_errors_of_their_own_kind() {
    let (tmp, dir) = standin();
    for mode in ["crash", "cudaerr"] {
        let o = test(&dir, &["--runs", "3"], &[("STANDIN_MODE", mode)]);
        assert_eq!(o.status.code(), Some(2));
        let recs = records(&tmp.path().join("out"));
        assert!(
            recs.iter().all(|r| r["outcome"] == "crash"),
            "{mode}: {recs:?}"
        );
    }
}

#[test]
fn clean_runs_exit_zero_and_the_build_is_reused() {
    let (tmp, dir) = standin();
    let o = test(&dir, &["--runs", "5", "--env", "all"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(records(&tmp.path().join("out")).len(), 40);
    let o = test(&dir, &["--runs", "1"], &[]);
    assert!(stderr(&o).contains("build up to date"), "{}", stderr(&o));
    std::fs::write(dir.join("extra.txt"), "changed").unwrap();
    let o = test(&dir, &["--runs", "1"], &[]);
    assert!(!stderr(&o).contains("build up to date"));
}

#[test]
fn a_failing_original_is_tested_when_the_fully_fenced_one_passes_natively() {
    // ct-octree run ten builds at a time fails natively; its fences are what is being tested.
    let (_tmp, dir) = standin();
    let o = test(&dir, &["--runs", "5"], &[("STANDIN_BASELINE", "1")]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("sanity: the original fails natively (failed its post-condition (exit code 1)); the program with every fence passed 3 of 3 native runs, so the test went on from it"),
        "{}",
        stdout(&o)
    );
    assert_eq!(records(&dir.parent().unwrap().join("out")).len(), 5);
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.parent().unwrap().join("out/test/summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(summary["sanity"]["passed"], "all_fences", "{summary}");
}

#[test]
fn a_failing_original_stops_before_testing_when_every_fence_fails_too() {
    let (_tmp, dir) = standin();
    let o = test(
        &dir,
        &["--runs", "5"],
        &[
            ("STANDIN_BASELINE", "1"),
            ("STANDIN_MODE", "rate"),
            ("STANDIN_PERCENT", "100"),
        ],
    );
    assert_eq!(o.status.code(), Some(3));
    assert!(
        stderr(&o).contains("original program fails its post-condition")
            && stderr(&o).contains("with every fence fails natively too"),
        "{}",
        stderr(&o)
    );
    assert!(!dir.parent().unwrap().join("out/test/runs.jsonl").exists());
}

#[test]
fn no_gpu_is_said_in_one_line_before_anything_is_built() {
    if wmfix::run::hold::driver_present() {
        return; // a GPU machine: scripts/gpu covers it
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    // The README's first command, on a case study that needs a GPU.
    let o = wmfix()
        .current_dir(repo())
        .args([
            "test",
            "case-studies/cbe-dot",
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(69), "{}", stderr(&o));
    let e = stderr(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(
        e.contains("no CUDA driver") && e.contains("gpu = false"),
        "{e}"
    );
    assert!(
        !out.exists(),
        "something was built or written before the check"
    );
    // A stand-in that does not declare `gpu = false` is taken for a GPU program.
    let (tmp, dir) = standin();
    let cfg = std::fs::read_to_string(dir.join("wmfix.toml")).unwrap();
    std::fs::write(dir.join("wmfix.toml"), cfg.replace("gpu = false", "")).unwrap();
    for cmd in ["test", "reduce", "cost", "race"] {
        let o = wmfix()
            .current_dir(tmp.path())
            .args([cmd, dir.to_str().unwrap(), "--out", "out"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(69), "{cmd}: {}", stderr(&o));
        assert!(stderr(&o).contains(&format!("`wmfix {cmd}` runs the program on a GPU")));
    }
    assert!(!tmp.path().join("out").exists());
}

#[test]
fn a_baseline_stopped_by_cuda_errors_says_the_program_cannot_use_the_gpu() {
    let (_tmp, dir) = standin();
    let env = [
        ("STANDIN_BASELINE", "3"),
        (
            "STANDIN_BASELINE_SAYS",
            "CUDA error: no CUDA-capable device is detected",
        ),
    ];
    let o = test(&dir, &["--runs", "5"], &env);
    assert_eq!(o.status.code(), Some(69), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("cannot use the GPU") && e.contains("crashed with exit code 3"),
        "{e}"
    );
    assert!(!e.contains("post-condition"), "{e}");
}

#[test]
fn check_command_decides_the_post_condition() {
    let (tmp, dir) = standin();
    // Passes when the seed starts with 1 (and in the baseline, which has no seed).
    let check = r#"check = "grep -q -e ' seed=1' -e 'seed= ' \"$WMFIX_RUN_OUTPUT\"""#;
    let cfg = std::fs::read_to_string(dir.join("wmfix.toml")).unwrap() + check + "\n";
    std::fs::write(dir.join("wmfix.toml"), cfg).unwrap();
    let o = test(&dir, &["--runs", "30"], &[]);
    let recs = records(&tmp.path().join("out"));
    for r in &recs {
        let seed = r["seed"].to_string();
        assert_eq!(
            r["outcome"],
            if seed.starts_with('1') {
                "pass"
            } else {
                "fail"
            },
            "{r}"
        );
    }
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn config_and_build_errors_have_their_codes() {
    let (_tmp, dir) = standin();
    std::fs::write(
        dir.join("wmfix.toml"),
        "build = \"true\"\nrun = \"./app\"\nruns = 3\n",
    )
    .unwrap();
    let o = test(&dir, &[], &[]);
    assert_eq!(o.status.code(), Some(78));
    assert!(
        stderr(&o).contains("wmfix.toml:3: unknown key `runs` (line 3)"),
        "{}",
        stderr(&o)
    );
    // Several: all named, in file order (toml named one, not the first).
    std::fs::write(
        dir.join("wmfix.toml"),
        "build = \"true\"\nzeta = 1\nrun = \"./app\"\nruns = 3\nalpha = 2\n",
    )
    .unwrap();
    let o = test(&dir, &[], &[]);
    assert_eq!(o.status.code(), Some(78));
    assert!(
        stderr(&o).contains("unknown keys `zeta` (line 2), `runs` (line 4), `alpha` (line 5)"),
        "{}",
        stderr(&o)
    );
    std::fs::write(
        dir.join("wmfix.toml"),
        "build = \"echo broken >&2; exit 1\"\nrun = \"./app\"\ngpu = false\n",
    )
    .unwrap();
    let o = test(&dir, &[], &[]);
    assert_eq!(o.status.code(), Some(4));
    assert!(stderr(&o).contains("broken"), "{}", stderr(&o));
    let o = test(&dir, &["--env", "sys-str"], &[]);
    assert_eq!(o.status.code(), Some(64));
    // No nvcc anywhere wmfix looks: the shell's "nvcc: not found", then how to get one.
    if std::path::Path::new("/usr/local/cuda/bin/nvcc").exists() {
        eprintln!("skipped: /usr/local/cuda/bin/nvcc exists, so a build always finds nvcc");
        return;
    }
    std::fs::write(
        dir.join("wmfix.toml"),
        "build = \"nvcc -o app app.cu\"\nrun = \"./app\"\ngpu = false\n",
    )
    .unwrap();
    let o = wmfix()
        .current_dir(dir.parent().unwrap())
        .args(["build", dir.to_str().unwrap(), "--out", "out"])
        .env("PATH", "/usr/bin:/bin")
        .env_remove("CUDA_HOME")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("nvcc is not on PATH") && stderr(&o).contains("scripts/nvcc-env.sh"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn ctrl_c_stops_runs_kills_children_and_keeps_results() {
    let (tmp, dir) = standin();
    let pidfile = tmp.path().join("pid");
    let child = wmfix()
        .current_dir(tmp.path())
        .args(["test", dir.to_str().unwrap(), "--out", "out", "--runs", "5"])
        .env("STANDIN_MODE", "hang")
        .env("STANDIN_PIDFILE", &pidfile)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The shell creates the file before it writes the pid: wait for a whole number.
    let t0 = std::time::Instant::now();
    let pid: i32 = loop {
        if let Some(pid) = std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            break pid;
        }
        assert!(t0.elapsed().as_secs() < 20, "the stand-in never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    interrupt(child);
    assert!(!alive(pid), "the run's grandchild outlived ctrl-c");
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("out/test/summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(summary["interrupted"], true);
}

#[test]
fn sigint_twice_within_100_ms_stops_once_with_complete_records() {
    let (tmp, dir) = standin();
    let child = wmfix()
        .current_dir(tmp.path())
        .args(["test", dir.to_str().unwrap(), "--out", "out"])
        .args(["--runs", "200", "--jobs", "2"])
        .envs([
            ("STANDIN_MODE", "rate"),
            ("STANDIN_PERCENT", "25"),
            ("STANDIN_SLEEP", "0.2"),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let runs = tmp.path().join("out/test/runs.jsonl");
    let t0 = std::time::Instant::now();
    while std::fs::read_to_string(&runs).map_or(0, |t| t.lines().count()) < 3 {
        assert!(t0.elapsed().as_secs() < 60, "the test did not progress");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let o = interrupt_twice(child);
    let out = tmp.path().join("out");
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("test/summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["interrupted"], true, "{summary}");
    // The summary counts exactly the runs recorded, and the table was printed.
    let recs = records(&out);
    assert!(recs.len() < 200, "the runs went on after the signals");
    assert_eq!(
        summary["rows"][0]["runs"].as_u64().unwrap() as usize,
        recs.len()
    );
    assert!(stdout(&o).contains("95% CI"), "{}", stdout(&o));
}

#[test]
fn gpus_spread_the_workers_and_replay_keeps_the_device() {
    let (tmp, dir) = standin();
    let env = [("STANDIN_MODE", "gpu"), ("STANDIN_BAD_GPU", "7")];
    let o = test(
        &dir,
        &[
            "--env", "sys-str+", "--runs", "40", "--jobs", "4", "--gpus", "3,7",
        ],
        &env,
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let recs = records(&tmp.path().join("out"));
    assert_eq!(recs.len(), 40);
    let on = |g: &str| recs.iter().filter(|r| r["gpu"] == g).count();
    assert!(
        on("3") > 0 && on("7") > 0,
        "both GPUs used: {} and {}",
        on("3"),
        on("7")
    );
    assert_eq!(on("3") + on("7"), 40);
    for r in &recs {
        let bad = r["gpu"] == "7";
        assert_eq!(r["outcome"], if bad { "fail" } else { "pass" }, "{r}");
    }
    let failing = recs.iter().find(|r| r["gpu"] == "7").unwrap()["id"].to_string();
    let o = test(&dir, &["--replay", &failing], &env);
    assert_eq!(
        o.status.code(),
        Some(2),
        "replay on the same GPU fails again: {}",
        stdout(&o)
    );
    let o = test(&dir, &["--gpus", "0,,1"], &env);
    assert_eq!(o.status.code(), Some(64), "{}", stderr(&o));
}

/// (env, seed, outcome) of every record, sorted: what a test measured, whatever the order.
fn measured(out: &Path) -> Vec<(String, u64, String)> {
    let mut m: Vec<_> = records(out)
        .iter()
        .map(|r| {
            (
                r["env"].as_str().unwrap().to_string(),
                r["seed"].as_u64().unwrap(),
                r["outcome"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    m.sort();
    m
}

#[test]
fn kill_minus_9_then_resume_measures_exactly_what_one_test_would() {
    let (tmp, dir) = standin();
    let args = ["--env", "sys-str+,no-str-", "--runs", "60", "--jobs", "3"];
    // Runs of 20 ms leave time to kill the test before it ends.
    let env = [
        ("STANDIN_MODE", "rate"),
        ("STANDIN_PERCENT", "25"),
        ("STANDIN_SLEEP", "0.02"),
    ];
    let straight = test(&dir, &args, &env);
    assert_eq!(straight.status.code(), Some(2), "{}", stderr(&straight));
    let want = measured(&tmp.path().join("out"));
    std::fs::rename(tmp.path().join("out"), tmp.path().join("straight")).unwrap();

    let mut child = wmfix()
        .current_dir(tmp.path())
        .args(["test", dir.to_str().unwrap(), "--out", "out"])
        .args(args)
        .envs(env)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let runs = tmp.path().join("out/test/runs.jsonl");
    let t0 = std::time::Instant::now();
    while std::fs::read_to_string(&runs).map_or(0, |t| t.lines().count()) < 70 {
        assert!(t0.elapsed().as_secs() < 60, "the test did not progress");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL, in the second environment
    child.wait().unwrap();
    let before = std::fs::read_to_string(&runs).unwrap();
    let complete = before.lines().count();
    assert!(complete < 120, "the kill came too late to test anything");
    // A kill can cut a record in half; resume drops it.
    std::fs::write(&runs, format!("{before}{{\"id\": 9")).unwrap();

    let o = test(&dir, &[&args[..], &["--resume"]].concat(), &env);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let out = tmp.path().join("out");
    assert_eq!(measured(&out), want, "the resumed test measured other runs");
    let after = std::fs::read_to_string(&runs).unwrap();
    assert!(
        after.starts_with(&before),
        "earlier records were not kept as they were"
    );
    let mut ids: Vec<u64> = records(&out)
        .iter()
        .map(|r| r["id"].as_u64().unwrap())
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 120);
    let summary = |p: &Path| -> Value {
        serde_json::from_str(&std::fs::read_to_string(p.join("test/summary.json")).unwrap())
            .unwrap()
    };
    let (s, w) = (summary(&out), summary(&tmp.path().join("straight")));
    assert_eq!(s["resumed_runs"].as_u64().unwrap() as usize, complete);
    for (a, b) in s["rows"]
        .as_array()
        .unwrap()
        .iter()
        .zip(w["rows"].as_array().unwrap())
    {
        for k in ["env", "runs", "pass", "fail"] {
            assert_eq!(a[k], b[k], "{k}: {a} vs {b}");
        }
    }

    // Other settings, a time budget, or nothing to resume: refused.
    let o = test(
        &dir,
        &["--env", "sys-str+,no-str-", "--runs", "61", "--resume"],
        &env,
    );
    assert_eq!(o.status.code(), Some(65), "{}", stderr(&o));
    assert!(stderr(&o).contains("other settings"), "{}", stderr(&o));
    let o = test(&dir, &["--minutes", "1", "--resume"], &env);
    assert_eq!(o.status.code(), Some(64), "{}", stderr(&o));
    std::fs::remove_dir_all(out.join("test")).unwrap();
    let o = test(&dir, &["--resume"], &env);
    assert_eq!(o.status.code(), Some(66), "{}", stderr(&o));
    assert!(stderr(&o).contains("nothing to resume"), "{}", stderr(&o));
}

#[test]
fn ctrl_c_during_the_check_records_no_error() {
    let (tmp, dir) = standin();
    // The check passes the baseline (its output has no environment); for the instrumented
    // runs it writes a file, then hangs: it is running when ctrl-c comes.
    let started = tmp.path().join("check-started");
    let check = format!(
        "check = \"grep -q 'env= ' \\\"$WMFIX_RUN_OUTPUT\\\" || {{ touch {}; sleep 100; }}\"\n",
        started.display()
    );
    let cfg = std::fs::read_to_string(dir.join("wmfix.toml")).unwrap() + &check;
    std::fs::write(dir.join("wmfix.toml"), cfg).unwrap();
    let child = wmfix()
        .current_dir(tmp.path())
        .args(["test", dir.to_str().unwrap(), "--out", "out", "--runs", "3"])
        .args(["--jobs", "1"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while !started.exists() {
        assert!(t0.elapsed().as_secs() < 30, "the check never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    interrupt(child);
    let recs = records(&tmp.path().join("out"));
    assert!(recs.is_empty(), "a check cut short was recorded: {recs:?}");
}

/// The runs get the chip profile `WMFIX_PROFILE` names, as an absolute path (they run in the
/// build's folder), and summary.json records it; a missing file stops the test before any run.
/// (On a machine without a GPU no profile ships for the device: the runtime's built-in one.)
#[test]
fn the_chip_profile_reaches_every_run_and_is_recorded() {
    let (tmp, dir) = standin();
    std::fs::write(tmp.path().join("mine.toml"), "spread = 3\n").unwrap();
    let o = test(
        &dir,
        &["--runs", "6"],
        &[("STANDIN_MODE", "profile"), ("WMFIX_PROFILE", "mine.toml")],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("chip profile mine (from WMFIX_PROFILE)"),
        "{}",
        stderr(&o)
    );
    let out = tmp.path().join("out");
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("test/summary.json")).unwrap())
            .unwrap();
    let p = &summary["profile"];
    assert_eq!(p["name"], "mine", "{summary}");
    assert_eq!(p["source"], "environment");
    let path = p["path"].as_str().unwrap();
    assert!(
        Path::new(path).is_absolute() && path.ends_with("mine.toml"),
        "{path}"
    );
    assert_eq!(summary["plan"]["profile"], *p);

    let o = test(&dir, &["--runs", "2"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("test/summary.json")).unwrap())
            .unwrap();
    if !Path::new("/proc/driver/nvidia/version").exists() {
        assert_eq!(summary["profile"]["source"], "built-in", "{summary}");
        assert_eq!(summary["profile"]["name"], "hopper-default");
    }

    let o = test(&dir, &["--runs", "2"], &[("WMFIX_PROFILE", "gone.toml")]);
    assert_eq!(o.status.code(), Some(66), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("gone.toml: no such file"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn steps_a_run_reach_the_program_and_give_a_rate_a_step() {
    let (tmp, dir) = standin();
    let toml = dir.join("wmfix.toml");
    let text = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(
        &toml,
        text.replace("run = \"./app\"", "run = \"./app {steps}\"\nsteps = 4"),
    )
    .unwrap();
    let rate = [("STANDIN_MODE", "rate"), ("STANDIN_PERCENT", "25")];
    let o = test(&dir, &["--runs", "40", "--json"], &rate);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(doc["steps"], 4);
    let row = &doc["rows"][0];
    let run_rate = row["error_rate"].as_f64().unwrap();
    let step_rate = row["step_error_rate"].as_f64().unwrap();
    assert!(run_rate > 0.0, "{row}");
    assert!(
        (1.0 - (1.0 - step_rate).powi(4) - run_rate).abs() < 1e-12,
        "{row}"
    );
    assert!(
        stderr(&o).contains("runs of 4 steps; errors a step, were steps independent: sys-str+ "),
        "{}",
        stderr(&o)
    );
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("out/test/summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(summary["steps"], 4);
    // A replay runs the recorded run with its steps.
    let o = test(&dir, &["--replay", "0"], &rate);
    assert!(stdout(&o).contains("args=4\n"), "{}", stdout(&o));
    // A resume with other steps is another test: refused.
    let o = test(&dir, &["--runs", "40", "--resume", "--steps", "2"], &rate);
    assert_eq!(o.status.code(), Some(65), "{}", stderr(&o));
    // --steps 1 overrides the config: no rate a step.
    let o = test(&dir, &["--runs", "10", "--json", "--steps", "1"], &rate);
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(doc["steps"], 1);
    let o = test(&dir, &["--replay", "0"], &rate);
    assert!(stdout(&o).contains("args=1\n"), "{}", stdout(&o));
    assert!(doc["rows"][0].get("step_error_rate").is_none(), "{doc}");
}

/// A program that needs blocks dispatched in blockIdx order (CUB's scans) hangs in the `+`
/// environments, whose block ids are random; `keep_block_order = true` in wmfix.toml has every
/// run keep the order (WMFIX_BLOCK_ORDER=keep; the stand-in hangs without it).
#[test]
fn keep_block_order_reaches_every_run() {
    let (tmp, dir) = standin();
    let env = [("STANDIN_MODE", "blocks")];
    let toml = std::fs::read_to_string(dir.join("wmfix.toml")).unwrap();
    std::fs::write(
        dir.join("wmfix.toml"),
        toml.replace("timeout_s = 10", "timeout_s = 1"),
    )
    .unwrap();
    let o = test(&dir, &["--runs", "2", "--env", "sys-str+,sys-str-"], &env);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let timeouts = |out: &Path| {
        records(out)
            .iter()
            .filter(|r| r["outcome"] == "timeout")
            .map(|r| r["env"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(timeouts(&tmp.path().join("out")), ["sys-str+", "sys-str+"]);
    assert!(
        stdout(&o).contains("note: 2 of 2 sys-str+ runs timed out")
            && stdout(&o).contains("keep_block_order = true"),
        "{}",
        stdout(&o)
    );
    let toml = std::fs::read_to_string(dir.join("wmfix.toml")).unwrap();
    std::fs::write(dir.join("wmfix.toml"), toml + "keep_block_order = true\n").unwrap();
    let o = test(&dir, &["--runs", "2", "--env", "sys-str+,sys-str-"], &env);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(timeouts(&tmp.path().join("out")).is_empty());
    assert!(!stdout(&o).contains("note:"), "{}", stdout(&o));
}

/// `--mps`: wmfix starts an MPS server of its own (a stand-in `nvidia-cuda-mps-control` here that
/// records how it was called) with its pipe and log folders in the output folder, every run
/// gets them, and the server is told to quit at the end (and before the start, in case a killed
/// wmfix left one).
#[test]
fn mps_serves_every_run_from_a_server_in_the_output_folder() {
    let (tmp, dir) = standin();
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let control = bin.join("nvidia-cuda-mps-control");
    std::fs::write(
        &control,
        "#!/bin/sh\nif [ \"$1\" = -d ]; then echo \"start $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY\" >> \"$MPS_RECORD\"; exit 0; fi\nread line; echo \"$line $CUDA_MPS_PIPE_DIRECTORY\" >> \"$MPS_RECORD\"\n",
    )
    .unwrap();
    std::process::Command::new("chmod")
        .args(["+x", control.to_str().unwrap()])
        .status()
        .unwrap();
    let record = tmp.path().join("mps.txt");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let env = [
        ("STANDIN_MODE", "mps"),
        ("PATH", path.as_str()),
        ("MPS_RECORD", record.to_str().unwrap()),
    ];
    let o = test(&dir, &["--runs", "3"], &env);
    assert_eq!(
        o.status.code(),
        Some(2),
        "without --mps no run has a pipe: {}",
        stderr(&o)
    );
    assert!(!record.exists());
    let o = test(&dir, &["--runs", "3", "--mps"], &env);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = tmp.path().join("out").canonicalize().unwrap();
    let pipe = out.join("mps/pipe");
    let lines = std::fs::read_to_string(&record).unwrap();
    let want = format!(
        "quit {p}\nstart {p} {l}\nquit {p}\n",
        p = pipe.display(),
        l = out.join("mps/log").display()
    );
    assert_eq!(lines, want);
}

/// A stand-in for `srun`: logs that it placed a run, then runs the command after its options.
const LAUNCHER: &str = "#!/bin/sh\necho \"$*\" >> \"$LAUNCH_LOG\"\n\
                        while [ \"${1#-}\" != \"$1\" ]; do shift; done\nexec \"$@\"\n";

#[test]
fn a_launcher_places_every_run_and_the_records_equal_a_direct_runs() {
    let (tmp, dir) = standin();
    let launcher = tmp.path().join("srun-standin");
    std::fs::write(&launcher, LAUNCHER).unwrap();
    std::fs::set_permissions(
        &launcher,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let log = tmp.path().join("launches.log");
    let env = [
        ("STANDIN_MODE", "rate"),
        ("STANDIN_PERCENT", "30"),
        ("LAUNCH_LOG", log.to_str().unwrap()),
    ];
    let args = ["--env", "sys-str+", "--runs", "30", "--jobs", "3"];
    let o = test(&dir, &args, &env);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let direct = measured(&tmp.path().join("out"));
    assert!(!log.exists(), "no launcher, no launch");
    std::fs::remove_dir_all(tmp.path().join("out")).unwrap();
    let with = format!("{} --ntasks=1", launcher.display());
    let o = test(&dir, &[&args[..], &["--launcher", &with]].concat(), &env);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(measured(&tmp.path().join("out")), direct);
    let launches = std::fs::read_to_string(&log).unwrap();
    // The baseline's run (it passed at once) and the thirty test runs, each launched.
    assert_eq!(launches.lines().count(), 31, "{launches}");
    assert!(
        launches.lines().all(|l| l == "--ntasks=1 sh -c ./app"),
        "{launches}"
    );
    // wmfix.toml's launcher does the same; a time-out still kills the run behind it.
    let cfg = std::fs::read_to_string(dir.join("wmfix.toml"))
        .unwrap()
        .replace("timeout_s = 10", "timeout_s = 0.5")
        + &format!("launcher = \"{with}\"\n");
    std::fs::write(dir.join("wmfix.toml"), cfg).unwrap();
    let pidfile = tmp.path().join("pid");
    std::fs::remove_dir_all(tmp.path().join("out")).unwrap();
    let o = test(
        &dir,
        &["--runs", "1"],
        &[
            ("STANDIN_MODE", "hang"),
            ("STANDIN_PIDFILE", pidfile.to_str().unwrap()),
            ("LAUNCH_LOG", log.to_str().unwrap()),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let recs = records(&tmp.path().join("out"));
    assert!(recs.iter().all(|r| r["outcome"] == "timeout"), "{recs:?}");
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        !alive(pid),
        "the run behind the launcher outlived the timeout"
    );
}

/// `wmfix build` of the stand-in, its runs told `env`.
fn build(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    on_standin("build", dir, args, env)
}

#[test]
fn build_runs_both_programs_and_names_how_the_instrumented_one_differs() {
    // A runtime that changes the program (an SIGFPE where the original passes, as a public
    // scoped-synchronisation reduction did under `wmfix race` at e1354e7): said, exit 7.
    let (_tmp, dir) = standin();
    let o = build(&dir, &[], &[("STANDIN_MODE", "crash")]);
    assert_eq!(o.status.code(), Some(7), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("the original passed, passed, passed, the instrumented program crashed: killed by signal 11 (SIGSEGV)"),
        "{err}"
    );
    assert!(
        err.contains("no result of wmfix on it can be trusted"),
        "{err}"
    );
    // Alike: one pair of runs, said.
    let o = build(&dir, &[], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains(
            "the instrumented program (fences off, no stress) ends as the original does (passed)"
        ),
        "{}",
        stdout(&o)
    );
    let log = std::fs::read_to_string(dir.parent().unwrap().join("out/differential.log")).unwrap();
    assert!(log.contains("env=no-str- seed=1 fences=none"), "{log}");
    // Asked not to run: said so, not passed off as checked.
    let o = build(&dir, &["--no-check"], &[("STANDIN_MODE", "crash")]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("check not run (--no-check)"),
        "{}",
        stdout(&o)
    );
}

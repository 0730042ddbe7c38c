//! `--warm`: runs served by processes that call the program's main once a run.

mod common;
use common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;

fn outcomes(out: &Path) -> (BTreeMap<u64, String>, usize) {
    let text = std::fs::read_to_string(out.join("test/runs.jsonl")).unwrap();
    let mut by_seed = BTreeMap::new();
    let mut warm = 0;
    for line in text.lines() {
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        by_seed.insert(
            r["seed"].as_u64().unwrap(),
            r["outcome"].as_str().unwrap().to_string(),
        );
        warm += usize::from(r["warm"].as_bool() == Some(true));
    }
    (by_seed, warm)
}

/// `summary.json`'s check of warm runs against cold ones.
fn warm_check(out: &Path) -> Value {
    let text = std::fs::read_to_string(out.join("test/summary.json")).unwrap();
    serde_json::from_str::<Value>(&text).unwrap()["warm_check"].clone()
}

/// A side of that check: (runs, errors).
fn runs_errs(side: &Value) -> (u64, u64) {
    let n = |k: &str| side[k].as_u64().unwrap();
    (n("runs"), n("fail") + n("timeout") + n("crash"))
}

fn test(app: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    let args = [
        "test",
        app.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--env",
        "sys-str+",
        "--runs",
        "40",
        "--seed",
        "1",
        "--jobs",
        "2",
    ];
    run(app, &[&args[..], extra].concat())
}

#[test]
fn warm_runs_record_what_cold_runs_record_in_fewer_processes() {
    let (tmp, app) = fixture("warm-standin");
    let cold_out = tmp.path().join("cold");
    let warm_out = tmp.path().join("warm");
    let cold = test(&app, &cold_out, &[]);
    let warm = test(&app, &warm_out, &["--warm"]);
    assert_eq!(cold.status.code(), Some(2), "{}", stderr(&cold));
    assert_eq!(warm.status.code(), cold.status.code(), "{}", stderr(&warm));
    let (cold_runs, cold_warm) = outcomes(&cold_out);
    let (warm_runs, warm_warm) = outcomes(&warm_out);
    assert_eq!(cold_runs.len(), 40);
    assert_eq!(warm_runs, cold_runs, "the same outcome for every seed");
    assert_eq!((cold_warm, warm_warm), (0, 40));
    let fails = cold_runs.values().filter(|o| *o == "fail").count();
    assert!((5..35).contains(&fails), "{fails} of 40 failed");
    // Warm and cold runs agreed with every fence in the check (8 warm runs, 4 cold): the runs
    // stayed warm, and the check's line said so.
    let check = warm_check(&warm_out);
    assert_eq!(check["kept_warm"], true, "{check}");
    assert_eq!(
        (runs_errs(&check["warm"]), runs_errs(&check["cold"])),
        ((8, 0), (4, 0))
    );
    assert!(stderr(&warm).contains("--warm: warm runs agree with cold ones"));
    // The check's runs after errors: 8 without fences, some of which failed, each followed by
    // one with every fence, which passed; so processes serve on after a failed run.
    let rec = &check["recovery"];
    assert_eq!(rec["serves_on"], true, "{check}");
    let (unfenced, erred) = runs_errs(&rec["unfenced"]);
    assert_eq!(unfenced, 8);
    assert!(erred > 0, "{check}");
    assert_eq!(rec["served_on"].as_u64(), Some(erred));
    assert_eq!(runs_errs(&rec["fenced_after_error"]), (erred, 0));
    assert!(stderr(&warm).contains("a process serves on after a run that failed"));
    // One process a worker serves every run, the failing ones too (the check's process goes on
    // serving the test's runs): 8 + 16 of the check and 40 of the test.
    let served_on = erred as usize + fails;
    let line = stderr(&warm)
        .lines()
        .find(|l| l.contains("warm: 64 runs in "))
        .map(str::to_string)
        .unwrap_or_else(|| panic!("no warm line in {}", stderr(&warm)));
    assert!(
        line.ends_with(&format!("processes ({served_on} erring runs served on)")),
        "{line} with {fails} failures"
    );
    let processes: usize = line
        .rsplit("in ")
        .next()
        .and_then(|w| w.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(processes <= 2, "{line} with {fails} failures");
    // A kept log of a failing run holds that run's output alone.
    let logs = warm_out.join("test/logs");
    let log = std::fs::read_dir(&logs).unwrap().next().unwrap().unwrap();
    let text = std::fs::read_to_string(log.path()).unwrap();
    assert_eq!(text.matches("pid=").count(), 1, "{text}");
    assert!(text.contains("FAIL: wrong result"), "{text}");
}

#[test]
fn warm_is_refused_with_a_launcher_or_a_shell_command() {
    let (tmp, app) = fixture("warm-standin");
    let out = tmp.path().join("o");
    let o = test(&app, &out, &["--warm", "--launcher", "srun -n1"]);
    assert_eq!(o.status.code(), Some(64), "{}", stderr(&o));
    assert!(stderr(&o).contains("launcher"), "{}", stderr(&o));
    let toml = app.join("wmfix.toml");
    let cfg = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(
        &toml,
        cfg.replace("run = \"./app 5\"", "run = \"./app 5 | cat\""),
    )
    .unwrap();
    let o = test(&app, &out, &["--warm"]);
    assert_eq!(o.status.code(), Some(64), "{}", stderr(&o));
    assert!(stderr(&o).contains("plain words"), "{}", stderr(&o));
}

/// The stand-in's line of `--warm` falling back to cold runs: there must be one, said once.
fn cold_line(o: &std::process::Output) -> String {
    let err = stderr(o);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("--warm: running cold"))
        .collect();
    assert_eq!(lines.len(), 1, "{err}");
    lines[0].to_string()
}

#[test]
fn warm_runs_that_err_where_cold_ones_pass_fall_back_to_cold_runs() {
    let (tmp, app) = fixture("warm-standin");
    let cold_out = tmp.path().join("cold");
    let cold = test(&app, &cold_out, &[]);
    assert_eq!(cold.status.code(), Some(2), "{}", stderr(&cold));
    let (cold_runs, _) = outcomes(&cold_out);
    // STANDIN_CALLS=1: every call of main after the first in a process crashes, as a program
    // written to run once a process; =7: only its 8th, which the check's 8 warm runs in one
    // process reach.
    for calls in ["1", "7"] {
        let out = tmp.path().join(format!("warm-{calls}"));
        let o = standin_test(
            &app,
            &out,
            &[("STANDIN_CALLS", calls)],
            &["--warm", "--json"],
        );
        let (runs, warm) = outcomes(&out);
        assert_eq!(
            runs, cold_runs,
            "STANDIN_CALLS={calls}: the cold runs' outcomes"
        );
        assert_eq!(warm, 0, "no run was warm");
        let line = cold_line(&o);
        assert!(line.contains("0 of 4 cold runs"), "{line}");
        assert!(line.contains("runs/hour a worker cold against"), "{line}");
        let check = warm_check(&out);
        assert_eq!(check["kept_warm"], false, "{check}");
        assert_eq!(runs_errs(&check["cold"]), (4, 0), "{check}");
        let (n, errs) = runs_errs(&check["warm"]);
        assert_eq!((n, errs > 0), (8, true), "{check}");
        assert_eq!(check["warm"]["crash"].as_u64(), Some(errs), "{check}");
        // --json says it too, and reads back.
        let doc: wmfix::cmd::test::TestJson = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(doc.warm_check.map(|c| c.kept_warm), Some(false));
        let served = stderr(&o).lines().any(|l| l.starts_with("wmfix: warm: "));
        assert!(!served, "no warm runs: {}", stderr(&o));
    }
}

/// `test` of the stand-in in `app` with `vars` set: 40 runs under sys-str+ into `out`, `extra`
/// options added; it ends with exit 2 (some run erred).
fn standin_test(app: &Path, out: &Path, vars: &[(&str, &str)], extra: &[&str]) -> Output {
    let o = wmfix()
        .current_dir(app)
        .envs(vars.iter().copied())
        .args([
            "test",
            ".",
            "--out",
            out.to_str().unwrap(),
            "--env",
            "sys-str+",
        ])
        .args(["--runs", "40", "--seed", "1", "--jobs", "2"])
        .args(extra)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    o
}

/// `test --warm` of the stand-in with `vars` set: its output folder's outcomes, warm runs, the
/// check, and the "warm: N runs in P processes" line.
fn warm_test_with(
    app: &Path,
    out: &Path,
    vars: &[(&str, &str)],
) -> (BTreeMap<u64, String>, usize, Value, String) {
    let o = standin_test(app, out, vars, &["--warm"]);
    let (runs, warm) = outcomes(out);
    let line = stderr(&o)
        .lines()
        .find(|l| l.starts_with("wmfix: warm: "))
        .unwrap_or_else(|| panic!("no warm line in {}", stderr(&o)))
        .to_string();
    (runs, warm, warm_check(out), line)
}

fn processes(line: &str) -> usize {
    line.rsplit("runs in ")
        .next()
        .and_then(|w| w.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line}"))
}

#[test]
fn a_failed_run_that_leaves_the_program_broken_ends_its_process() {
    let (tmp, app) = fixture("warm-standin");
    let cold_out = tmp.path().join("cold");
    let cold = test(&app, &cold_out, &[]);
    assert_eq!(cold.status.code(), Some(2), "{}", stderr(&cold));
    let (cold_runs, _) = outcomes(&cold_out);
    let fails = cold_runs.values().filter(|o| *o == "fail").count();
    // After a failing call every later one in the process fails: the check sees the fenced runs
    // after erring ones fail, and each failing run ends its process, so the outcomes are the
    // cold ones.
    let out = tmp.path().join("poison");
    let (runs, warm, check, line) = warm_test_with(&app, &out, &[("STANDIN_POISON", "1")]);
    assert_eq!(runs, cold_runs);
    assert_eq!(warm, 40);
    assert_eq!(check["kept_warm"], true, "{check}");
    let rec = &check["recovery"];
    assert_eq!(rec["serves_on"], false, "{check}");
    let (n, errs) = runs_errs(&rec["fenced_after_error"]);
    assert!(n > 0 && errs == n, "{check}");
    // Only the check's runs were served on after an error.
    let check_served = rec["served_on"].as_u64().unwrap();
    assert!(
        line.ends_with(&format!("({check_served} erring runs served on)")),
        "{line}"
    );
    assert!(processes(&line) > fails, "{line} with {fails} failures");
}

#[test]
fn a_crashing_run_ends_its_process_while_failing_ones_are_served_on() {
    let (tmp, app) = fixture("warm-standin");
    let cold_out = tmp.path().join("cold");
    standin_test(&app, &cold_out, &[("STANDIN_FAIL_BY", "abort")], &[]);
    let (cold_runs, _) = outcomes(&cold_out);
    let crashes = cold_runs.values().filter(|o| *o == "crash").count();
    assert!(crashes > 0, "{cold_runs:?}");
    let out = tmp.path().join("abort");
    let (runs, _, check, line) = warm_test_with(&app, &out, &[("STANDIN_FAIL_BY", "abort")]);
    assert_eq!(runs, cold_runs);
    // The check's erring runs crashed: serving on after one was not seen.
    assert_eq!(check["recovery"]["serves_on"], false, "{check}");
    assert_eq!(check["recovery"]["served_on"], 0, "{check}");
    // Each crash of the test's runs (and of the check's) took a new process.
    let check_crashes = runs_errs(&check["recovery"]["unfenced"]).1 as usize;
    assert!(
        processes(&line) > crashes + check_crashes,
        "{line} with {crashes} crashes"
    );
}

/// The stand-in with `n` fence sites in kernel.cu, its bug fixed by the fences `3,7`.
fn reduce_standin(n: usize) -> (tempfile::TempDir, std::path::PathBuf) {
    let (tmp, app) = fixture("warm-standin");
    let body: String = (0..n).map(|i| format!("  a[{i}] = {i};\n")).collect();
    std::fs::write(
        app.join("kernel.cu"),
        format!("__global__ void k(int *a) {{\n{body}}}\n"),
    )
    .unwrap();
    let toml = app.join("wmfix.toml");
    let cfg = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(&toml, format!("sources = [\"kernel.cu\"]\n{cfg}")).unwrap();
    (tmp, app)
}

fn reduce(app: &Path, out: &str, env: &[(&str, &str)], extra: &[&str]) -> (Output, Value) {
    let o = wmfix()
        .current_dir(app)
        .envs(env.iter().copied())
        .env("STANDIN_PERCENT", "50")
        .args(["reduce", ".", "--out", out, "--hours", "1", "--jobs", "1"])
        .args(["--seed", "3"])
        .args(extra)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    let text = std::fs::read_to_string(app.join(out).join("reduce/reduce.json")).unwrap();
    (o, serde_json::from_str(&text).unwrap())
}

#[test]
fn reduce_warm_gives_the_cold_result_falling_back_where_warm_runs_err() {
    let (_tmp, app) = reduce_standin(10);
    let need = ("STANDIN_REQUIRED", "3,7");
    let (_, cold) = reduce(&app, "cold", &[need], &[]);
    assert_eq!(
        cold["result"]["fences"],
        serde_json::json!([3, 7]),
        "{cold}"
    );
    assert!(cold.get("warm_check").is_none(), "{cold}");
    // Every call after a process's first crashes: a warm reduction kept all 10 fences (its
    // checks' warm runs crashed); it runs cold and finds what the cold one found, from the same
    // runs (one worker: a check that stops at its first error makes as many runs each time).
    let stale = ("STANDIN_CALLS", "1");
    let (o, warm) = reduce(&app, "warm-stale", &[need, stale], &["--warm"]);
    for k in ["fences", "unfenced", "runs", "checks", "complete"] {
        assert_eq!(warm["result"][k], cold["result"][k], "{k}: {warm}");
    }
    cold_line(&o);
    let check = &warm["warm_check"];
    assert_eq!(check["kept_warm"], false, "{check}");
    assert_eq!(
        runs_errs(&check["warm"]),
        (8, 4),
        "every 2nd call crashed: {check}"
    );
    assert_eq!(runs_errs(&check["cold"]), (4, 0), "{check}");
    assert!(
        stdout(&o).contains("warm: --warm: running cold"),
        "{}",
        stdout(&o)
    );
    // A program whose warm and cold runs agree stays warm: the check's 8 warm runs and 4 cold
    // ones, then the reduction's runs in warm processes, with the cold result.
    let (o, agreed) = reduce(&app, "warm-fine", &[need], &["--warm"]);
    assert_eq!(agreed["warm_check"]["kept_warm"], true, "{agreed}");
    assert_eq!(agreed["result"]["fences"], cold["result"]["fences"]);
    assert_eq!(agreed["result"]["unfenced"], cold["result"]["unfenced"]);
    assert_eq!(agreed["result"]["runs"], cold["result"]["runs"]);
    let served: u64 = stderr(&o)
        .lines()
        .find_map(|l| l.strip_prefix("wmfix: warm: "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no warm line: {}", stderr(&o)));
    assert!(served > 8, "{served} warm runs");
}

#[test]
fn reduce_warm_by_race_confirms_the_start_set_as_cold_runs_do() {
    let (tmp, app) = reduce_standin(0);
    let kernel = common::repo().join("tests/fixtures/race-standin/kernel.cu");
    std::fs::copy(kernel, app.join("kernel.cu")).unwrap();
    let trace = tmp.path().join("trace.bin");
    std::fs::write(&trace, common::race_trace::trace(false, 0)).unwrap();
    let env = [
        ("STANDIN_REQUIRED", "0,2"),
        ("STANDIN_TRACE", trace.to_str().unwrap()),
    ];
    let (_, cold) = reduce(&app, "cold", &env, &["--oracle", "race"]);
    assert_eq!(cold["race"]["fences"], serde_json::json!([0, 2]), "{cold}");
    assert_eq!(
        cold["result"]["fences"],
        serde_json::json!([0, 2]),
        "{cold}"
    );
    // The stress confirmation of the start set runs cold, as the warm runs crash.
    let stale = [&env[..], &[("STANDIN_CALLS", "1")]].concat();
    let (o, warm) = reduce(&app, "warm", &stale, &["--oracle", "race", "--warm"]);
    for k in [
        "fences",
        "complete",
        "every_fence_checked",
        "stability_runs",
        "unfenced",
    ] {
        assert_eq!(warm["result"][k], cold["result"][k], "{k}: {warm}");
    }
    cold_line(&o);
    assert_eq!(warm["warm_check"]["kept_warm"], false, "{warm}");
}

#[test]
fn the_checks_runs_do_not_choose_the_runs_at_a_time() {
    // The check serves 24 runs one after another (a window of 8 at one run at a time and one
    // at two, never filled, was the measure the pace kept); 4 runs of the test are less than a
    // window, so nothing is chosen yet and no pace line is said.
    let (tmp, app) = fixture("warm-standin");
    let out = tmp.path().join("few");
    let o = wmfix()
        .current_dir(&app)
        .args([
            "test",
            ".",
            "--out",
            out.to_str().unwrap(),
            "--env",
            "sys-str+",
        ])
        .args(["--runs", "4", "--seed", "1", "--jobs", "1", "--warm"])
        .output()
        .unwrap();
    let err = stderr(&o);
    assert!(err.contains("wmfix: --warm: warm runs agree"), "{err}");
    assert!(!err.contains("wmfix: warm runs on"), "{err}");
}

#[test]
fn reduce_warm_by_race_checks_warm_runs_with_the_start_set_then_every_fence_where_it_erred() {
    let (tmp, app) = reduce_standin(0);
    let kernel = common::repo().join("tests/fixtures/race-standin/kernel.cu");
    std::fs::copy(kernel, app.join("kernel.cu")).unwrap();
    let trace = tmp.path().join("trace.bin");
    std::fs::write(&trace, common::race_trace::trace(false, 0)).unwrap();
    let trace = trace.to_str().unwrap();
    // The start set {0, 2} fixes the stand-in: the check runs it, not every fence.
    let env = [("STANDIN_REQUIRED", "0,2"), ("STANDIN_TRACE", trace)];
    let (o, r) = reduce(&app, "start-set", &env, &["--oracle", "race", "--warm"]);
    let check = &r["warm_check"];
    assert_eq!(check["fences"], "0,2", "{check}");
    assert_eq!(check["kept_warm"], true, "{check}");
    assert!(
        stderr(&o).contains("(with fences 0,2 under sys-str+, 0 of 8 warm runs"),
        "{}",
        stderr(&o)
    );
    assert!(!stderr(&o).contains("checking again with every fence"));
    // A start set the stress still breaks (fence 1 is needed too, which no race shows): its
    // runs in the check err, so the check is run again with every fence, and holds.
    let env = [("STANDIN_REQUIRED", "0,1,2"), ("STANDIN_TRACE", trace)];
    let (o, r) = reduce(
        &app,
        "start-set-errs",
        &env,
        &["--oracle", "race", "--warm"],
    );
    assert!(
        stderr(&o).contains(
            "wmfix: --warm: a run of the check with fences 0,2 erred; checking again with every fence"
        ),
        "{}",
        stderr(&o)
    );
    let check = &r["warm_check"];
    assert_eq!(check["fences"], "all", "{check}");
    assert_eq!(check["kept_warm"], true, "{check}");
    assert_eq!(r["result"]["fences"], serde_json::json!([0, 1, 2]), "{r}");
}

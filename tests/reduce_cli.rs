//! `wmfix reduce` against a stand-in program (tests/fixtures/reduce-standin/app.sh) that reads
//! WMFIX_FENCES and errs with probability p unless a chosen subset of fences is enabled, at the
//! paper's sizes; kill -9 and --resume; the patch and `wmfix apply`.

mod common;
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use wmfix::app::claim::running;

/// A copy of the stand-in whose kernel.cu has `n` fence sites, one statement each.
fn standin(n: usize) -> (tempfile::TempDir, PathBuf) {
    let (tmp, dir) = fixture("reduce-standin");
    let body: String = (0..n).map(|i| format!("  a[{i}] = {i};\n")).collect();
    std::fs::write(
        dir.join("kernel.cu"),
        format!("__global__ void k(int *a) {{\n{body}}}\n"),
    )
    .unwrap();
    (tmp, dir)
}

/// `patch -p1 -i PATCH` in `dir`, which must succeed.
fn patch_p1(dir: &Path, patch: &Path) {
    let o = Command::new("patch")
        .args(["-p1", "-i", patch.to_str().unwrap()])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{}: {}",
        patch.display(),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The stand-in app with this kernel.cu.
fn standin_kernel(kernel: &str) -> (tempfile::TempDir, PathBuf) {
    let (tmp, dir) = standin(0);
    std::fs::write(dir.join("kernel.cu"), kernel).unwrap();
    (tmp, dir)
}

fn reduce_cmd(dir: &Path, out: &str, required: &str, percent: u32, args: &[&str]) -> Command {
    let mut c = wmfix();
    c.current_dir(dir.parent().unwrap())
        .args([
            "reduce",
            dir.to_str().unwrap(),
            "--out",
            out,
            "--hours",
            "1",
        ])
        .args(args)
        .env("STANDIN_REQUIRED", required)
        .env("STANDIN_PERCENT", percent.to_string());
    c
}

fn report(dir: &Path, out: &str) -> Value {
    let path = dir.parent().unwrap().join(out).join("reduce/reduce.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `wmfix apply` of the reduction in `out` beside `dir`, with `args`.
fn apply(dir: &Path, args: &[&str]) -> Output {
    wmfix()
        .current_dir(dir.parent().unwrap())
        .args(["apply", dir.to_str().unwrap(), "--out", "out"])
        .args(args)
        .output()
        .unwrap()
}

fn kept(r: &Value) -> Vec<u64> {
    r["result"]["fences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect()
}

/// `--resume --jobs 1` of the reduction in `out`, the stand-in's runs counted in `count`.
fn resume_counting(dir: &Path, out: &str, required: &str, percent: u32, count: &Path) -> Output {
    reduce_cmd(dir, out, required, percent, &["--resume", "--jobs", "1"])
        .env("STANDIN_COUNT", count)
        .output()
        .unwrap()
}

/// How many runs of the stand-in `count` has recorded so far.
fn runs_counted(count: &Path) -> usize {
    std::fs::read_to_string(count).map_or(0, |t| t.lines().count())
}

fn ok(o: &Output) {
    assert!(o.status.success(), "{}\n{}", stdout(o), stderr(o));
}

#[test]
fn finds_the_chosen_fences_at_the_papers_sizes() {
    let cases: [(usize, &str, &[u64]); 4] = [
        (10, "3,4,8,9", &[3, 4, 8, 9]),
        (33, "17", &[17]),
        (51, "5,40", &[5, 40]),
        (90, "0,31,32,89", &[0, 31, 32, 89]),
    ];
    for (n, required, expect) in cases {
        let (_tmp, dir) = standin(n);
        for percent in [100, 5] {
            let out = format!("out-{percent}");
            let o = reduce_cmd(
                &dir,
                &out,
                required,
                percent,
                &["--jobs", "2", "--split", "ddmin"],
            )
            .output()
            .unwrap();
            ok(&o);
            let r = report(&dir, &out);
            assert_eq!(r["initial_fences"], n, "{r}");
            assert_eq!(kept(&r), expect, "n={n} p={percent}%: {}", stdout(&o));
            assert_eq!(r["result"]["complete"], true);
        }
    }
}

#[test]
fn the_report_says_where_the_wall_time_went() {
    let (_tmp, dir) = standin(10);
    let o = reduce_cmd(&dir, "out", "3", 100, &["--jobs", "2"])
        .output()
        .unwrap();
    ok(&o);
    let r = report(&dir, "out");
    let phases: Vec<(String, f64)> = serde_json::from_value(r["phases"].clone()).unwrap();
    let names: Vec<&str> = phases.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        names,
        [
            "build",
            "sanity check",
            "probe",
            "race detection",
            "warm check",
            "runs",
            "patch"
        ]
    );
    let sum: f64 = phases.iter().map(|(_, s)| s).sum();
    let wall = r["wall_seconds"].as_f64().unwrap();
    assert!(
        sum <= wall + 0.05 && sum >= 0.5 * wall,
        "phases {sum} s of {wall} s wall"
    );
    // The runs are where a stand-in's reduction spends its time.
    let runs = phases.iter().find(|(p, _)| p == "runs").unwrap().1;
    assert!(runs > 0.0);
}

#[test]
fn the_papers_algorithm_finds_them_too() {
    let (_tmp, dir) = standin(33);
    let o = reduce_cmd(&dir, "out", "17", 100, &["--split", "halves", "--no-cache"])
        .output()
        .unwrap();
    ok(&o);
    assert_eq!(kept(&report(&dir, "out")), [17]);
    let s = stdout(&o);
    assert!(
        s.contains("33 -> 1 fences") && s.contains("kernel.cu:19:3") && s.contains("a[17] = 17;"),
        "{s}"
    );
}

/// Journal entries without their timings, which differ between runs.
fn journal(dir: &Path, out: &str) -> Vec<Value> {
    let text =
        std::fs::read_to_string(dir.parent().unwrap().join(out).join("reduce/journal.jsonl"))
            .unwrap();
    text.lines()
        .skip(1)
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            v["tally"]["seconds"] = Value::Null;
            v
        })
        .collect()
}

#[test]
fn runs_side_by_side_that_end_out_of_order_give_the_journal_of_one_at_a_time() {
    let (_tmp, dir) = standin(8);
    let (required, percent) = ("2,5", 40);
    let mut one = reduce_cmd(&dir, "one", required, percent, &["--jobs", "1"]);
    ok(&one.output().unwrap());
    let mut four = reduce_cmd(&dir, "four", required, percent, &["--jobs", "4"]);
    ok(&four.env("STANDIN_JITTER", "0.05").output().unwrap());
    let (one, four) = (journal(&dir, "one"), journal(&dir, "four"));
    assert!(one.len() > 5, "{one:?}");
    let first_difference = one.iter().zip(&four).position(|(a, b)| a != b);
    assert_eq!(first_difference, None, "{one:#?}\n{four:#?}");
    assert_eq!(one.len(), four.len());
}

#[test]
fn kill_minus_9_then_resume_gives_the_same_result_without_repeating_checks() {
    let (tmp, dir) = standin(51);
    let (required, percent) = ("5,40", 5);
    let o = reduce_cmd(&dir, "straight", required, percent, &["--jobs", "1"])
        .output()
        .unwrap();
    ok(&o);
    let straight = journal(&dir, "straight");
    assert!(straight.len() > 10);

    let count = tmp.path().join("count");
    let mut child = reduce_cmd(&dir, "killed", required, percent, &["--jobs", "1"])
        .env("STANDIN_COUNT", &count)
        .spawn()
        .unwrap();
    let jpath = tmp.path().join("killed/reduce/journal.jsonl");
    let t0 = std::time::Instant::now();
    while std::fs::read_to_string(&jpath).map_or(0, |t| t.lines().count()) < 1 + straight.len() / 2
    {
        assert!(
            t0.elapsed().as_secs() < 120,
            "the reduction did not progress"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let done_before = journal(&dir, "killed").len();
    let runs_before = runs_counted(&count);

    ok(&resume_counting(&dir, "killed", required, percent, &count));
    let resumed = journal(&dir, "killed");
    let first_difference = resumed.iter().zip(&straight).position(|(a, b)| a != b);
    assert_eq!(
        first_difference, None,
        "the resumed journal differs from an uninterrupted one"
    );
    assert_eq!(resumed.len(), straight.len());
    let r = report(&dir, "killed");
    assert_eq!(kept(&r), [5, 40]);
    assert_eq!(r["replayed_checks"].as_u64().unwrap() as usize, done_before);
    // Only the checks after the kill ran again; besides them, the baseline run, and the run
    // that was in flight at the kill, whose orphaned process may log after we counted.
    let straight_runs: u64 = straight
        .iter()
        .map(|e| e["tally"]["runs"].as_u64().unwrap())
        .sum();
    let done_runs: u64 = straight[..done_before]
        .iter()
        .map(|e| e["tally"]["runs"].as_u64().unwrap())
        .sum();
    let runs_after = runs_counted(&count) - runs_before;
    assert!(
        runs_after as u64 <= straight_runs - done_runs + 2,
        "{runs_after} runs after resuming; {} were left",
        straight_runs - done_runs
    );
}

#[test]
fn a_journal_kept_from_a_machine_gone_resumes_in_a_fresh_folder_of_the_same_path() {
    let (tmp, dir) = standin(10);
    ok(&reduce_cmd(&dir, "out", "3", 100, &["--jobs", "1"])
        .output()
        .unwrap());
    let first = journal(&dir, "out");
    // The machine is gone: only the journal, kept elsewhere, is left.
    let saved = tmp.path().join("kept.jsonl");
    std::fs::copy(tmp.path().join("out/reduce/journal.jsonl"), &saved).unwrap();
    std::fs::remove_dir_all(tmp.path().join("out")).unwrap();
    let count = tmp.path().join("count");
    let from = ["--resume-from", saved.to_str().unwrap(), "--jobs", "1"];
    let o = reduce_cmd(&dir, "out", "3", 100, &from)
        .env("STANDIN_COUNT", &count)
        .output()
        .unwrap();
    ok(&o);
    let r = report(&dir, "out");
    assert_eq!(kept(&r), [3]);
    assert_eq!(r["replayed_checks"].as_u64().unwrap() as usize, first.len());
    assert_eq!(journal(&dir, "out"), first);
    // Every check came from the journal: the only run is the sanity check's.
    assert!(runs_counted(&count) <= 3, "{} runs", runs_counted(&count));
    // A folder with another journal of its own keeps it.
    std::fs::write(&saved, "{}\n").unwrap();
    let o = reduce_cmd(&dir, "out", "3", 100, &from).output().unwrap();
    assert_eq!(o.status.code(), Some(64), "{}", stderr(&o));
    assert!(stderr(&o).contains("journal of its own"), "{}", stderr(&o));
    assert_eq!(journal(&dir, "out"), first);
}

#[test]
fn resume_refuses_other_settings() {
    let (_tmp, dir) = standin(10);
    ok(&reduce_cmd(&dir, "out", "3", 100, &[]).output().unwrap());
    let o = reduce_cmd(&dir, "out", "3", 100, &["--resume", "--iterations", "8"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(65), "{}", stderr(&o));
    assert!(stderr(&o).contains("other settings"));
    let o = reduce_cmd(&dir, "elsewhere", "3", 100, &["--resume"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(66), "{}", stderr(&o));
    assert!(stderr(&o).contains("nothing to resume"));
}

#[test]
fn the_patch_applies_and_apply_writes_it() {
    let (tmp, dir) = standin(10);
    let original = std::fs::read_to_string(dir.join("kernel.cu")).unwrap();
    ok(&reduce_cmd(&dir, "out", "3,8", 100, &[]).output().unwrap());
    assert_eq!(
        std::fs::read_to_string(dir.join("kernel.cu")).unwrap(),
        original,
        "reduce edited the sources"
    );
    let patch = std::fs::read_to_string(tmp.path().join("out/reduce/fences.patch")).unwrap();
    insta::assert_snapshot!("reduce_standin_patch", patch);
    // patch -p1 on a clean copy...
    let clean = copy_tree(&dir, &tmp.path().join("clean"));
    patch_p1(&clean, &tmp.path().join("out/reduce/fences.patch"));
    // ...gives what `wmfix apply` writes.
    let o = apply(&dir, &[]);
    ok(&o);
    let applied = std::fs::read_to_string(dir.join("kernel.cu")).unwrap();
    assert_eq!(
        applied,
        std::fs::read_to_string(clean.join("kernel.cu")).unwrap()
    );
    assert_eq!(applied.matches("__threadfence();").count(), 2);
    // A second apply refuses: the sources changed since the reduction.
    let o = apply(&dir, &[]);
    assert_eq!(o.status.code(), Some(65));
    // Naming the changed file once.
    assert_eq!(stderr(&o).matches("kernel.cu").count(), 1, "{}", stderr(&o));
}

#[test]
fn ctrl_c_leaves_a_resumable_reduction() {
    let (tmp, dir) = standin(33);
    let child = reduce_until_checks(&tmp, &dir, 6);
    interrupt(child);
    let kept_checks = journal(&dir, "out").len();
    assert!(kept_checks >= 5);
    let o = reduce_cmd(&dir, "out", "17", 5, &["--resume", "--jobs", "1"])
        .output()
        .unwrap();
    ok(&o);
    let r = report(&dir, "out");
    assert_eq!(kept(&r), [17]);
    assert_eq!(r["replayed_checks"].as_u64().unwrap() as usize, kept_checks);
}

#[test]
fn sigint_twice_within_100_ms_leaves_reduce_json_and_patch_marked_incomplete() {
    let (tmp, dir) = standin(33);
    let child = reduce_until_checks(&tmp, &dir, 4);
    let o = interrupt_twice(child);
    let r = report(&dir, "out");
    assert_eq!(r["interrupted"], true, "{r}");
    assert_eq!(r["result"]["complete"], false, "{r}");
    assert!(
        r["result"]["note"]
            .as_str()
            .unwrap()
            .contains("interrupted"),
        "{r}"
    );
    // The set held is one that passed a check: fewer than all, once binary reduction has begun.
    let kept = kept(&r);
    assert!(!kept.is_empty() && kept.len() < 33, "{kept:?}");
    assert_eq!(
        r["result"]["checks"].as_u64().unwrap() as usize,
        journal(&dir, "out").len()
    );
    let patch = std::fs::read_to_string(tmp.path().join("out/reduce/fences.patch")).unwrap();
    assert!(patch.starts_with("wmfix reduce: INCOMPLETE"), "{patch}");
    assert_eq!(
        patch.matches("; __threadfence();").count(),
        kept.len(),
        "{patch}"
    );
    // It still applies.
    let clean = copy_tree(&dir, &tmp.path().join("clean"));
    patch_p1(&clean, &tmp.path().join("out/reduce/fences.patch"));
    assert!(stdout(&o).contains("note: interrupted"), "{}", stdout(&o));
    // `wmfix apply` refuses an incomplete reduction unless asked, and leaves the sources alone.
    let before = std::fs::read(dir.join("kernel.cu")).unwrap();
    let a = apply(&dir, &[]);
    assert_eq!(
        a.status.code(),
        Some(65),
        "{}",
        String::from_utf8_lossy(&a.stderr)
    );
    assert!(
        String::from_utf8_lossy(&a.stderr).contains("--incomplete"),
        "{}",
        String::from_utf8_lossy(&a.stderr)
    );
    assert_eq!(std::fs::read(dir.join("kernel.cu")).unwrap(), before);
    let a = apply(&dir, &["--incomplete"]);
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    assert_ne!(std::fs::read(dir.join("kernel.cu")).unwrap(), before);
}

/// A reduction of the stand-in (one run at a time), once its journal holds `checks` checks.
fn reduce_until_checks(tmp: &tempfile::TempDir, dir: &Path, checks: usize) -> std::process::Child {
    let child = reduce_cmd(dir, "out", "17", 5, &["--jobs", "1"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let jpath = tmp.path().join("out/reduce/journal.jsonl");
    let t0 = std::time::Instant::now();
    while std::fs::read_to_string(&jpath).map_or(0, |t| t.lines().count()) < checks {
        assert!(
            t0.elapsed().as_secs() < 120,
            "the reduction did not progress"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child
}

/// The pid the stand-in's first run writes to `pids`, once it has.
fn first_pid(pids: &Path) -> i32 {
    let t0 = std::time::Instant::now();
    loop {
        if let Some(p) = std::fs::read_to_string(pids)
            .ok()
            .and_then(|t| t.lines().next()?.trim().parse::<i32>().ok())
        {
            return p;
        }
        assert!(t0.elapsed().as_secs() < 60, "no run started");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Starts a reduction whose runs sleep for a minute, waits for its first run, and kills the
/// reduction with SIGKILL; returns that run's pid, orphaned.
fn orphan_a_run(dir: &Path, pids: &Path, extra: &[&str]) -> i32 {
    let mut args = vec!["--jobs", "1"];
    args.extend_from_slice(extra);
    let mut child = reduce_cmd(dir, "out", "3", 100, &args)
        .env("STANDIN_SLEEP", "60")
        .env("STANDIN_PIDS", pids)
        .spawn()
        .unwrap();
    let pid = first_pid(pids);
    child.kill().unwrap(); // SIGKILL: wmfix cannot clean up after itself
    child.wait().unwrap();
    pid
}

#[test]
fn a_run_orphaned_by_kill_minus_9_is_killed_when_the_directory_is_next_used() {
    let (tmp, dir) = standin(10);
    let first = orphan_a_run(&dir, &tmp.path().join("pids1"), &[]);
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(running(first), "the run died with wmfix: nothing to test");

    // The resumed reduction kills it before its own first run.
    let second = orphan_a_run(&dir, &tmp.path().join("pids2"), &["--resume"]);
    assert!(!running(first), "the orphaned run outlived the next claim");

    // While a wmfix holds the directory, another is refused.
    let pids3 = tmp.path().join("pids3");
    let mut holder = reduce_cmd(&dir, "out", "3", 100, &["--resume", "--jobs", "1"])
        .env("STANDIN_SLEEP", "60")
        .env("STANDIN_PIDS", &pids3)
        .spawn()
        .unwrap();
    let third = first_pid(&pids3);
    assert!(!running(second));
    let o = reduce_cmd(&dir, "out", "3", 100, &["--resume"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(75), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("another wmfix is using"),
        "{}",
        stderr(&o)
    );
    assert!(running(third), "a refused wmfix killed the holder's run");
    holder.kill().unwrap();
    holder.wait().unwrap();

    let o = reduce_cmd(&dir, "out", "3", 100, &["--resume"])
        .output()
        .unwrap();
    ok(&o);
    assert!(
        stderr(&o).contains("killed 1 process group(s) left running"),
        "{}",
        stderr(&o)
    );
    assert!(!running(third));
    assert_eq!(kept(&report(&dir, "out")), [3]);
}

#[test]
fn a_budget_too_small_to_decide_keeps_every_fence_and_says_so() {
    // Erring in every run: today's "no fence is empirically needed" would be a lie.
    let (_tmp, dir) = standin(10);
    let o = wmfix()
        .current_dir(dir.parent().unwrap())
        .args(["reduce", dir.to_str().unwrap(), "--out", "out"])
        .args(["--hours", "0.000001"])
        .env("STANDIN_REQUIRED", "3")
        .env("STANDIN_PERCENT", "100")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(5), "{}", stderr(&o));
    let r = report(&dir, "out");
    assert_eq!(kept(&r).len(), 10, "{r}");
    assert_eq!(r["result"]["complete"], false);
    assert_eq!(r["result"]["undecided"], true);
    assert!(
        r["result"]["note"]
            .as_str()
            .unwrap()
            .contains("every fence kept")
    );
    let patch =
        std::fs::read_to_string(dir.parent().unwrap().join("out/reduce/fences.patch")).unwrap();
    assert!(patch.starts_with("wmfix reduce: INCOMPLETE"), "{patch}");
}

#[test]
fn a_program_failing_natively_is_reduced_when_the_fully_fenced_one_passes() {
    let (_tmp, dir) = standin(10);
    let o = reduce_cmd(&dir, "out", "3", 100, &[])
        .env("STANDIN_NATIVE_FAIL", "1")
        .output()
        .unwrap();
    ok(&o);
    let r = report(&dir, "out");
    assert_eq!(kept(&r), [3]);
    assert_eq!(r["sanity"]["passed"], "all_fences", "{r}");
    assert!(stderr(&o).contains("the program with every fence passed 3 of 3"));
}

#[test]
fn a_program_failing_natively_even_with_every_fence_is_refused() {
    let (_tmp, dir) = standin(10);
    let o = reduce_cmd(&dir, "out", "3", 100, &[])
        .env("STANDIN_NATIVE_FAIL", "2")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("with every fence fails natively too"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn adaptive_checks_and_the_structure_split_are_the_defaults_and_recorded() {
    let (_tmp, dir) = standin(33);
    ok(&reduce_cmd(&dir, "out", "17", 100, &["--jobs", "2"])
        .output()
        .unwrap());
    let r = report(&dir, "out");
    assert_eq!(kept(&r), [17]);
    assert_eq!(r["settings"]["split"], "structure");
    assert!(r["settings"]["checks"]["adaptive"].is_object(), "{r}");
    let res = &r["result"];
    assert!(res["iterations"].as_u64().unwrap() < 32, "{res}");
    assert!(res["check_miss_probability"].as_f64().unwrap() <= 0.01);
    assert!(res["miss_probability"].as_f64().unwrap() <= 0.01);
    // The stability check's guarantee names the rate it holds for: --rare-rate (default 1%),
    // not the far higher rate the checks were sized for.
    assert_eq!(res["stability_rate"], 0.01, "{res}");
    let o = reduce_cmd(
        &dir,
        "out2",
        "17",
        100,
        &["--jobs", "2", "--rare-rate", "0.05"],
    )
    .output()
    .unwrap();
    ok(&o);
    assert!(
        stdout(&o).contains("stability: 90 clean runs; a missing fence erring in as few as 5.00% of runs (--rare-rate) would go unseen with probability 9.89e-3"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn steps_a_run_size_the_stability_check_for_a_rate_a_step() {
    let (_tmp, dir) = standin(33);
    let toml = dir.join("wmfix.toml");
    let text = std::fs::read_to_string(&toml).unwrap();
    // Without `{steps}` in `run`, --steps is refused, naming the file.
    let o = reduce_cmd(&dir, "out", "17", 100, &["--steps", "10"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(64), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("wmfix.toml: 10 steps a run, but `run` has no `{steps}`"),
        "{}",
        stderr(&o)
    );
    std::fs::write(
        &toml,
        text.replace("run = \"./app\"", "run = \"./app {steps}\""),
    )
    .unwrap();
    let count = dir.parent().unwrap().join("count");
    let o = reduce_cmd(&dir, "out", "17", 100, &["--jobs", "2", "--steps", "10"])
        .env("STANDIN_COUNT", &count)
        .output()
        .unwrap();
    ok(&o);
    // Each run was given its steps; 1% a step is 9.56% of ten-step runs: 46 clean runs, not 459.
    let runs = std::fs::read_to_string(&count).unwrap();
    assert!(runs.lines().all(|l| l == "run 10"), "{runs}");
    let r = report(&dir, "out");
    assert_eq!(kept(&r), [17]);
    assert_eq!(r["steps"], 10);
    // I counts steps too: the check with every fence is 4 runs of ten steps, not 32.
    assert_eq!(r["settings"]["iterations"], 4, "{r}");
    assert_eq!(journal(&dir, "out")[0]["request"]["max_runs"], 4);
    let res = &r["result"];
    assert!(
        (res["stability_rate"].as_f64().unwrap() - 0.0956).abs() < 1e-4,
        "{res}"
    );
    assert_eq!(res["stability_runs"], 46, "{res}");
    assert!(
        stdout(&o).contains("stability: 46 clean runs; a missing fence erring in as few as 1.00% of steps (9.56% of 10-step runs, were steps independent; --rare-rate) would go unseen"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn the_model_patch_adds_the_readers_acquire_and_apply_model_writes_both() {
    let (tmp, dir) = standin_kernel(
        "__global__ void k(int *data, int *flag, int *out) {\n  if (blockIdx.x == 0) {\n    data[0] = 42;\n    flag[0] = 1;\n  } else {\n    while (flag[0] == 0) {\n    }\n    out[0] = data[0];\n  }\n}\n",
    );
    // Fence 0 follows `data[0] = 42`, before the flag store; 2 follows the spin on the flag.
    ok(&reduce_cmd(&dir, "out", "0", 100, &[]).output().unwrap());
    let r = report(&dir, "out");
    assert_eq!(kept(&r), [0]);
    assert_eq!(r["model"]["fences"][0]["id"], 2, "{r}");
    assert_eq!(r["model"]["fences"][0]["side"], "acquire");
    // patch -p1 of both patches on a clean copy gives what `apply --model` writes.
    let clean = copy_tree(&dir, &tmp.path().join("clean"));
    for p in ["fences.patch", "fences-model.patch"] {
        patch_p1(&clean, &tmp.path().join("out/reduce").join(p));
    }
    // `cost --model` measures the same program as the reduced variant.
    let cost = |fences: &str| {
        wmfix()
            .current_dir(tmp.path())
            .args([
                "cost",
                dir.to_str().unwrap(),
                "--out",
                "out",
                "--rounds",
                "1",
            ])
            .args(["--model", "--fences", fences])
            .output()
            .unwrap()
    };
    ok(&cost("reduced"));
    // Named as what it is: the reduced set with the model's completion.
    let measured: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("out/cost/cost.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        measured["rows"][1]["variant"], "reduced+model",
        "{measured}"
    );
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("out/cost/reduced+model/kernel.cu")).unwrap(),
        std::fs::read_to_string(clean.join("kernel.cu")).unwrap()
    );
    assert_eq!(cost("0").status.code(), Some(64));
    ok(&apply(&dir, &["--model"]));
    let applied = std::fs::read_to_string(dir.join("kernel.cu")).unwrap();
    assert_eq!(
        applied,
        std::fs::read_to_string(clean.join("kernel.cu")).unwrap()
    );
    // The acquire goes after the spin loop only, not on every failed read in its body.
    assert_eq!(applied.matches("__threadfence();").count(), 2, "{applied}");
    assert!(
        applied.contains("while (flag[0] == 0) {\n    } __threadfence();"),
        "{applied}"
    );
}

#[test]
fn a_latin1_source_is_patched_and_applied_byte_for_byte() {
    let (tmp, dir) = fixture("reduce-standin");
    // Not UTF-8: a Latin-1 comment (caf\xe9, \xa9) and a Latin-1 byte in a string.
    let original: Vec<u8> =
        b"// caf\xe9 \xa9 1999\n__global__ void k(int *a) {\n  a[0] = 0;\n  a[1] = '\xb0';\n}\n"
            .to_vec();
    std::fs::write(dir.join("kernel.cu"), &original).unwrap();
    ok(&reduce_cmd(&dir, "out", "1", 100, &[]).output().unwrap());
    assert_eq!(std::fs::read(dir.join("kernel.cu")).unwrap(), original);
    let patch_path = tmp.path().join("out/reduce/fences.patch");
    let clean = copy_tree(&dir, &tmp.path().join("clean"));
    patch_p1(&clean, &patch_path);
    ok(&apply(&dir, &[]));
    let applied = std::fs::read(dir.join("kernel.cu")).unwrap();
    assert_eq!(applied, std::fs::read(clean.join("kernel.cu")).unwrap());
    // The original's bytes, with one fence added after `a[1] = '\xb0';`; its comment quotes
    // the statement in the file's own bytes.
    let fence: &[u8] = b" __threadfence(); /* wmfix fence 1: after store `a[1] = '\xb0';` */";
    let at = original.windows(2).position(|w| w == b"';").unwrap() + 2;
    let want = [&original[..at], fence, &original[at..]].concat();
    assert_eq!(
        String::from_utf8_lossy(&applied),
        String::from_utf8_lossy(&want)
    );
    assert_eq!(applied, want);
}

/// Two spin loops: fence 1 (a CAS loop) needs only its placement after the loop, fence 3 (a
/// flag spin) its placement at the top of the body too.
#[test]
fn loop_fences_keep_only_the_placements_their_checks_need() {
    let (tmp, dir) = standin_kernel(
        "__global__ void k(int *a) {\n  a[0] = 1;\n  while (atomicCAS(&a[1], 0, 1) != 0) {\n  }\n  a[2] = 0;\n  while (a[3] == 0) {\n  }\n}\n",
    );
    let o = reduce_cmd(&dir, "out", "1,2,3", 100, &[])
        .env("STANDIN_IN_LOOP", "3")
        .output()
        .unwrap();
    // Fence 3's in-body placement is what the program needs; fence 1's is not.
    ok(&o);
    let r = report(&dir, "out");
    assert_eq!(kept(&r), [1, 2, 3], "{}", stdout(&o));
    assert_eq!(
        r["result"]["after_loop_only"],
        serde_json::json!([1]),
        "{r}"
    );
    let placements = |i: usize| r["kept"][i]["placements"].as_array().unwrap().len();
    assert_eq!(
        (placements(0), placements(1), placements(2)),
        (1, 1, 2),
        "{r}"
    );
    assert!(
        stdout(&o).contains("(after the loop only)"),
        "{}",
        stdout(&o)
    );
    let patch = std::fs::read_to_string(tmp.path().join("out/reduce/fences.patch")).unwrap();
    // Fence 1 after its loop only; fence 3 at the top of its body and after its loop.
    assert_eq!(patch.matches("wmfix fence 1:").count(), 1, "{patch}");
    assert_eq!(patch.matches("wmfix fence 3:").count(), 2, "{patch}");
    assert!(
        patch.contains("+  } __threadfence(); /* wmfix fence 1:"),
        "{patch}"
    );
    let o = apply(&dir, &[]);
    ok(&o);
    let applied = std::fs::read_to_string(dir.join("kernel.cu")).unwrap();
    assert_eq!(applied.matches("__threadfence();").count(), 4, "{applied}");
}

#[test]
fn fences_no_launched_kernel_reaches_are_dropped_without_runs() {
    let (_tmp, dir) = standin_kernel(
        "__device__ void dead(int *a) { a[2] = 2; }\n\
         __global__ void k(int *a) { a[0] = 0; a[1] = 1; }\n\
         void launch(int *a) { k<<<1, 1>>>(a); }\n",
    );
    let o = reduce_cmd(&dir, "out", "2", 100, &[]).output().unwrap();
    ok(&o);
    let r = report(&dir, "out");
    // Fence 0 (in `dead`) is never executed: neither kept nor ever asked about.
    assert_eq!(r["initial_fences"], 3, "{r}");
    assert_eq!(kept(&r), [2], "{r}");
    assert_eq!(r["unreachable"][0]["id"], 0, "{r}");
    assert_eq!(r["unreachable"][0]["function"], "dead", "{r}");
    let journal = std::fs::read_to_string(dir.parent().unwrap().join("out/reduce/journal.jsonl"));
    for line in journal.unwrap().lines().skip(1) {
        let entry: Value = serde_json::from_str(line).unwrap();
        let fences = entry["fences"].as_str().unwrap();
        assert!(fences != "all" && !fences.starts_with('0'), "{line}");
    }
    assert!(
        stdout(&o).contains(
            "unreachable: 1 fences dropped without runs, in functions no launched kernel reaches: dead (0)"
        ),
        "{}",
        stdout(&o)
    );
    // A reduce.json written before wmfix looked (no `unreachable`) is read back all the same.
    let path = dir.parent().unwrap().join("out/reduce/reduce.json");
    let mut older = r.clone();
    older.as_object_mut().unwrap().remove("unreachable");
    std::fs::write(&path, older.to_string()).unwrap();
    let o = apply(&dir, &[]);
    ok(&o);
    assert!(
        std::fs::read_to_string(dir.join("kernel.cu"))
            .unwrap()
            .contains("wmfix fence 2")
    );
}

#[test]
fn ctrl_c_in_a_long_check_then_resume_runs_only_the_rest_of_it() {
    // The final stability check is most of a reduction's runs (459 at the default rare rate);
    // cut short by ctrl-c (a call's time bound on the GPU), its runs so far are journaled and a
    // resume runs only the rest, with the seeds an uninterrupted check would have used.
    let (tmp, dir) = standin(10);
    let (required, percent) = ("3", 30);
    ok(
        &reduce_cmd(&dir, "straight", required, percent, &["--jobs", "1"])
            .output()
            .unwrap(),
    );
    let straight = journal(&dir, "straight");
    let runs_of = |e: &Value| e["tally"]["runs"].as_u64().unwrap() as usize;
    let total: usize = straight.iter().map(runs_of).sum();
    let stability = runs_of(straight.last().unwrap());
    assert!(stability >= 459, "{stability}");

    let count = tmp.path().join("count");
    let child = reduce_cmd(&dir, "killed", required, percent, &["--jobs", "1"])
        .env("STANDIN_COUNT", &count)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    // The baseline run, the checks before the stability check, then 100 of its runs ended: the
    // stand-in counts a run as it starts, and with one job the 101st starts after the 100th ends.
    while runs_counted(&count) < 1 + total - stability + 101 {
        assert!(
            t0.elapsed().as_secs() < 120,
            "the reduction did not progress"
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    interrupt(child); // checks exit 130
    let cut = journal(&dir, "killed");
    let partial = runs_of(cut.last().unwrap());
    assert!(
        cut.len() == straight.len() && (100..stability).contains(&partial),
        "the interrupted check was not journaled with its {partial} runs"
    );
    let runs_before = runs_counted(&count);

    ok(&resume_counting(&dir, "killed", required, percent, &count));
    assert_eq!(journal(&dir, "killed"), straight);
    let r = report(&dir, "killed");
    assert_eq!(r["result"]["complete"], true);
    assert_eq!(kept(&r), [3]);
    // The rest of the stability check, the baseline run again, and the run in flight at ctrl-c.
    let runs_after = runs_counted(&count) - runs_before;
    assert!(
        runs_after <= stability - partial + 2,
        "{runs_after} runs after resuming; {} were left",
        stability - partial
    );
}

#[test]
fn a_fence_whose_absence_errs_rarely_is_added_back_and_named() {
    // Without fence 1 every run errs; without fence 4, 2% of runs: the checks sized for the
    // common error drop 4, the 459-run stability check sees it, and add-back returns it.
    let (_tmp, dir) = standin(6);
    let o = reduce_cmd(&dir, "out", "1", 100, &[])
        .env("STANDIN_RARE", "4:20")
        .output()
        .unwrap();
    ok(&o);
    let r = report(&dir, "out");
    assert_eq!(kept(&r), [1, 4], "{r}");
    assert_eq!(r["result"]["added_back"], serde_json::json!([4]), "{r}");
    assert_eq!(r["result"]["complete"], true, "{r}");
    let out = stdout(&o);
    let line = out.lines().find(|l| l.contains("fence   4")).unwrap_or("");
    assert!(
        line.contains("found after a failed stability check"),
        "{out}"
    );
}

/// The runs leave coverage (`WMFIX_COVERAGE`, written here by the stand-in as the runtime
/// does): fences 0, 5-7 and 9 ran on shared or local memory only.
const GLOBAL: &str = "1-4,8";

#[test]
fn fences_never_run_on_global_memory_are_dropped_after_the_check_with_every_fence() {
    let (_tmp, dir) = standin(10);
    let o = reduce_cmd(&dir, "out", "3,8", 100, &["--jobs", "2"])
        .env("STANDIN_FENCES", "10")
        .env("STANDIN_GLOBAL", GLOBAL)
        .output()
        .unwrap();
    ok(&o);
    let r = report(&dir, "out");
    assert_eq!(kept(&r), [3, 8], "{}", stdout(&o));
    let dropped: Vec<u64> = r["off_global"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_u64().unwrap())
        .collect();
    assert_eq!(dropped, [0, 5, 6, 7, 9], "{r}");
    assert_eq!(
        r["result"]["off_global"],
        serde_json::json!([0, 5, 6, 7, 9])
    );
    assert!(
        stdout(&o).contains("off global memory: 5 fences dropped"),
        "{}",
        stdout(&o)
    );
    // Only the check with every fence recorded coverage; no later check enabled a dropped fence.
    let j = journal(&dir, "out");
    assert_eq!(j[0]["tally"]["coverage"]["global"], GLOBAL, "{j:?}");
    assert!(
        j[1..].iter().all(|e| e["tally"]["coverage"].is_null()),
        "{j:?}"
    );
    for e in j.iter().skip(2) {
        let Some(f) = e["fences"].as_str() else {
            continue;
        };
        let on = |id: u64| {
            f.split(',').any(|p| match p.split_once('-') {
                Some((a, b)) => (a.parse().unwrap()..=b.parse().unwrap()).contains(&id),
                None => p.parse() == Ok(id),
            })
        };
        for id in [0, 5, 6, 7, 9] {
            assert!(f == "none" || !on(id), "fence {id} in {f}");
        }
    }
}

/// `wmfix test` of the stand-in with `args`, whose runs would leave coverage.
fn test_covered(tmp: &Path, dir: &Path, out: &str, args: &[&str]) -> Output {
    let o = wmfix()
        .current_dir(tmp)
        .args(["test", dir.to_str().unwrap(), "--out", out, "--runs", "6"])
        .args(args)
        .env("STANDIN_REQUIRED", "3")
        .env("STANDIN_PERCENT", "0")
        .env("STANDIN_FENCES", "10")
        .env("STANDIN_GLOBAL", GLOBAL)
        .output()
        .unwrap();
    ok(&o);
    o
}

#[test]
fn a_test_records_each_runs_coverage_and_their_union_by_environment() {
    let (tmp, dir) = standin(10);
    // Unasked, the runs record none (they get no WMFIX_COVERAGE).
    test_covered(tmp.path(), &dir, "plain", &[]);
    let plain = std::fs::read_to_string(tmp.path().join("plain/test/runs.jsonl")).unwrap();
    assert!(!plain.contains("coverage"), "{plain}");
    let o = test_covered(tmp.path(), &dir, "out", &["--coverage"]);
    let out = tmp.path().join("out/test");
    let runs = std::fs::read_to_string(out.join("runs.jsonl")).unwrap();
    for line in runs.lines() {
        let r: Value = serde_json::from_str(line).unwrap();
        assert_eq!(
            r["coverage"],
            serde_json::json!({"fences": 10, "executed": "0-9", "global": "1-4,8"}),
            "{r}"
        );
    }
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["rows"][0]["coverage"]["global"], "1-4,8", "{s}");
    assert!(
        stdout(&o).contains(
            "sys-str+: 5 of 10 fence sites ran on global memory (or memory of unknown space); the others did not (not fenced); on shared or local memory only: 0, 5, 6, 7, 9\n"
        ),
        "{}",
        stdout(&o)
    );
}

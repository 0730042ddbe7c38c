//! scripts/gpu/evidence.sh's own logic, run without a GPU against a stand-in for wmfix: a
//! reduction cut short in one call resumes in the next on a fresh machine from the journal the
//! results folder kept, and starts again when wmfix refuses that journal; a reduction made on
//! an earlier machine is costed from the results folder's record; the call's archive holds only
//! the steps it ran; the declared table lists every step with its command, budget and outputs.

mod common;
use common::*;
use std::path::{Path, PathBuf};

/// A stand-in for `wmfix reduce` and `wmfix cost`: logs its arguments; refuses, as wmfix does,
/// an output folder that is not empty and has no marker (exit 73); with `--resume-from F` takes
/// F as its journal; resuming, it accepts only a journal whose first line is `{"h":"good"}`
/// (else exit 65, as wmfix for other settings); writes a reduce.json and appends a line to the
/// journal (cost: a cost.json).
const FAKE_WMFIX: &str = r#"#!/usr/bin/env bash
echo "$*" >> "$FAKE_LOG"
out=$(echo "$*" | sed 's/.*--out \([^ ]*\).*/\1/')
if [ -d "$out" ] && [ ! -f "$out/.wmfix-output" ] && [ -n "$(ls -A "$out")" ]; then exit 73; fi
[ "$1" = race ] && [ -f "$out/build.stamp" ] && echo "built already: $out" >> "$FAKE_LOG"
mkdir -p "$out/reduce" "$out/cost" && touch "$out/.wmfix-output"
if [ "$1" = race ]; then
  for f in build.stamp fences.json; do echo '{"fences":[]}' > "$out/$f"; done
  mkdir -p "$out/original" "$out/tree" "$out/runtime" "$out/race"
  echo '{"model":"ptx","rows":[],"runs":[{"run":0}]}' > "$out/race/race.json"
  exit 0
fi
[ "$1" = cost ] && { echo '{"rows":[]}' > "$out/cost/cost.json"; exit 0; }
from=$(echo "$*" | sed -n 's/.*--resume-from \([^ ]*\).*/\1/p')
[ -n "$from" ] && cp "$from" "$out/reduce/journal.jsonl"
case " $* " in *" --resume "*|*" --resume-from "*) [ "$(head -n 1 "$out/reduce/journal.jsonl")" = '{"h":"good"}' ] || exit 65 ;; esac
echo '{"fake":true}' > "$out/reduce/reduce.json"
echo '{"check":1}' >> "$out/reduce/journal.jsonl"
"#;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A scratch machine: results folder, work folder, the stand-in wmfix and its call log.
struct Machine {
    tmp: tempfile::TempDir,
    results: PathBuf,
    work: PathBuf,
}

impl Machine {
    fn new() -> Machine {
        let tmp = tempfile::tempdir().unwrap();
        let fake = tmp.path().join("wmfix");
        write(&fake, FAKE_WMFIX);
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        Machine {
            results: tmp.path().join("results"),
            work: tmp.path().join("work"),
            tmp,
        }
    }

    /// evidence.sh with these step patterns, which must succeed; the stand-in's calls.
    fn run(&self, steps: &[&str]) -> Vec<String> {
        let t = self.tmp.path();
        let o = std::process::Command::new("bash")
            .arg("scripts/gpu/evidence.sh")
            .args(steps)
            .current_dir(repo())
            .env("W", t.join("wmfix"))
            .env("RESULTS", &self.results)
            .env("WORK", &self.work)
            .env("OUT", t.join("out"))
            .env("FAKE_LOG", t.join("calls.log"))
            .env("GROUND_TRUTH", t.join("ground-truth"))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
        let calls = std::fs::read_to_string(t.join("calls.log")).unwrap();
        calls.lines().map(String::from).collect()
    }
}

#[test]
fn a_reduction_resumes_from_the_results_folders_journal_on_a_fresh_machine() {
    let m = Machine::new();
    let (results, work, tmp) = (&m.results, &m.work, &m.tmp);
    // An earlier call's journals: the reduction's, refused (other settings), and seed 2's, kept.
    write(
        &results.join("reduce-cbe-dot/journal.jsonl"),
        "{\"h\":\"other\"}\n",
    );
    write(
        &results.join("seeds-cbe-dot/journal-seed2.jsonl"),
        "{\"h\":\"good\"}\n{\"check\":0}\n",
    );
    // A step an earlier call finished: not run again, and not in this call's archive.
    write(&results.join("stress-cbe-dot-no/DONE"), "earlier\n");
    let calls = m.run(&["reduce-cbe-dot", "cost-cbe-dot", "seeds-cbe-dot"]);
    let ends = |i: usize, tail: &str| calls[i].ends_with(tail);
    assert_eq!(calls.len(), 5, "{calls:#?}");
    let kept = |step: &str| results.join(step).display().to_string();
    // Refused: tried with the kept journal, then again from the start.
    assert!(
        ends(
            0,
            &format!(
                "--jobs 8 --resume-from {}",
                kept("reduce-cbe-dot/journal.jsonl")
            )
        ) && ends(1, "--jobs 8"),
        "{calls:#?}"
    );
    // The cost of the reduction just recorded, from the results folder's record, unwrapped.
    let saved = work.join("cost-cbe-dot.reduce.json");
    assert!(
        calls[2].starts_with("cost case-studies/cbe-dot")
            && ends(2, &format!("--fences {}", saved.display())),
        "{calls:#?}"
    );
    assert_eq!(
        std::fs::read_to_string(&saved).unwrap(),
        r#"{"fake": true}"#
    );
    assert!(results.join("cost-cbe-dot/cost.json").is_file());
    // Seed 2 resumes from its kept journal; seed 3 has none and starts.
    assert!(
        ends(
            3,
            &format!(
                "--seed 2 --resume-from {}",
                kept("seeds-cbe-dot/journal-seed2.jsonl")
            )
        ) && ends(4, "--seed 3"),
        "{calls:#?}"
    );
    // The results folder keeps the journals as they now are, and says how each reduction ran.
    let seed2 = std::fs::read_to_string(results.join("seeds-cbe-dot/journal-seed2.jsonl")).unwrap();
    assert_eq!(seed2.lines().count(), 3, "{seed2}");
    let fresh = std::fs::read_to_string(results.join("reduce-cbe-dot/journal.jsonl")).unwrap();
    assert_eq!(fresh, "{\"check\":1}\n");
    let doc = std::fs::read_to_string(results.join("seeds-cbe-dot/reduce-seed2.json")).unwrap();
    assert!(doc.contains("--seed 2 --resume-from"), "{doc}");
    assert!(results.join("reduce-cbe-dot/DONE").is_file());
    // The archive holds the folders of the steps this call ran, and nothing else.
    let tar = std::process::Command::new("tar")
        .arg("tzf")
        .arg(tmp.path().join("out/evidence.tar.gz"))
        .output()
        .unwrap();
    let listed = stdout(&tar);
    for step in ["reduce-cbe-dot", "cost-cbe-dot", "seeds-cbe-dot"] {
        assert!(listed.contains(&format!("{step}/")), "{step}: {listed}");
    }
    assert!(!listed.contains("stress-cbe-dot-no"), "{listed}");
}

#[test]
fn the_builds_cells_test_and_reduce_a_copy_with_steps_and_stress_cells_test_one_step() {
    let m = Machine::new();
    let work = &m.work;
    let calls = m.run(&[
        "builds-ct-octree-10-no2",
        "reduce-ct-octree-b10",
        "reduce-sdk-red-nf-aim",
        "stress-ct-octree-sys-shipped",
    ]);
    assert_eq!(calls.len(), 4, "{calls:#?}");
    // The copy is the study as it is (its run command takes `{steps}`), in a folder of its own.
    let copy = work.join("ct-octree-builds-10");
    let toml = std::fs::read_to_string(copy.join("wmfix.toml")).unwrap();
    assert!(
        toml.contains("\nrun = \"./octree 16384 64 128 16 {steps}\"\n"),
        "{toml}"
    );
    assert!(
        calls[1].starts_with(&format!("test {} ", copy.display()))
            && calls[1].ends_with("--fences 0,3,9-10,13 --steps 10"),
        "{calls:#?}"
    );
    // Its stability check is sized by wmfix for 1% a step (--rare-rate's default).
    assert!(
        calls[2].starts_with(&format!("reduce {} ", copy.display()))
            && calls[2].ends_with("--steps 10"),
        "{calls:#?}"
    );
    // The copy was the step's own: the next step reduces the study itself.
    assert!(
        calls[3].starts_with("reduce case-studies/sdk-red-nf "),
        "{calls:#?}"
    );
    // A stress cell (first: steps run in priority order) tests one step a run, whatever the
    // study's `steps` (ct-octree's is 10).
    assert!(
        calls[0].starts_with("test case-studies/ct-octree ") && calls[0].ends_with("--steps 1"),
        "{calls:#?}"
    );
}

#[test]
fn a_seed_an_earlier_call_completed_is_kept_and_not_run_again() {
    let m = Machine::new();
    let record = m.results.join("seeds-cbe-dot/reduce-seed2.json");
    let complete = r#"{"meta": {"commit": "earlier"}, "result": {"result": {"complete": true}}}"#;
    write(&record, complete);
    write(
        &m.results.join("seeds-cbe-dot/journal-seed2.jsonl"),
        "{\"h\":\"other\"}\n",
    );
    let calls = m.run(&["seeds-cbe-dot"]);
    assert_eq!(calls.len(), 1, "{calls:#?}");
    assert!(calls[0].ends_with("--seed 3"), "{calls:#?}");
    assert_eq!(std::fs::read_to_string(&record).unwrap(), complete);
    let log = std::fs::read_to_string(m.results.join("seeds-cbe-dot/log.txt")).unwrap();
    assert!(
        log.contains("seed 2: complete in an earlier call, kept"),
        "{log}"
    );
}

#[test]
fn the_completed_check_tests_at_the_steps_a_run_of_its_reduction() {
    let m = Machine::new();
    let record = |steps: &str| {
        format!(
            r#"{{"meta": {{}}, "result": {{{steps}"result": {{"fences": [3, 0]}}, "model": {{"fences": [{{"id": 5}}]}}}}}}"#
        )
    };
    write(
        &m.results.join("reduce-ct-octree/reduce.json"),
        &record(r#""steps": 10, "#),
    );
    // A record from before wmfix had steps: one step a run.
    write(&m.results.join("reduce-cbe-dot/reduce.json"), &record(""));
    let calls = m.run(&["completed-ct-octree", "completed-cbe-dot"]);
    assert_eq!(calls.len(), 2, "{calls:#?}");
    let call = |study: &str| {
        calls
            .iter()
            .find(|c| c.starts_with(&format!("test case-studies/{study} ")))
            .unwrap_or_else(|| panic!("{study}: {calls:#?}"))
    };
    assert!(
        call("ct-octree").ends_with("--fences 0,3,5 --steps 10"),
        "{calls:#?}"
    );
    assert!(
        call("cbe-dot").ends_with("--fences 0,3,5 --steps 1"),
        "{calls:#?}"
    );
}

#[test]
fn a_cost_step_can_cost_another_steps_reduction() {
    let m = Machine::new();
    write(
        &m.results.join("reduce-ct-octree-steps10/reduce.json"),
        r#"{"meta": {}, "result": {"steps": 10, "result": {"fences": [0, 3]}}}"#,
    );
    let calls = m.run(&["cost-ct-octree-steps10"]);
    assert_eq!(calls.len(), 1, "{calls:#?}");
    let saved = m.work.join("cost-ct-octree-steps10.reduce.json");
    let out = m.work.join("cost-ct-octree-steps10");
    assert!(
        calls[0].starts_with(&format!(
            "cost case-studies/ct-octree --out {} ",
            out.display()
        )) && calls[0].ends_with(&format!("--fences {}", saved.display())),
        "{calls:#?}"
    );
    assert_eq!(
        std::fs::read_to_string(&saved).unwrap(),
        r#"{"steps": 10, "result": {"fences": [0, 3]}}"#
    );
    assert!(m.results.join("cost-ct-octree-steps10/cost.json").is_file());
}

#[test]
fn the_gpus_steps_run_one_gpu_and_two_with_eight_runs_at_a_time_a_gpu() {
    let m = Machine::new();
    let calls = m.run(&["gpus-*-test-cbe-dot", "gpus-*-reduce-ls-bh-nf"]);
    assert_eq!(calls.len(), 4, "{calls:#?}");
    let has = |call: &str, words: &[&str]| words.iter().all(|w| call.contains(w));
    assert!(
        calls[0].starts_with("test case-studies/cbe-dot ")
            && has(&calls[0], &["--jobs 8 ", "--gpus 0 ", "--runs 240 "]),
        "{calls:#?}"
    );
    assert!(
        calls[1].starts_with("test case-studies/cbe-dot ")
            && has(&calls[1], &["--jobs 16 ", "--gpus 0,1 ", "--runs 240 "]),
        "{calls:#?}"
    );
    assert!(
        calls[2].starts_with("reduce case-studies/ls-bh-nf ")
            && has(&calls[2], &["--jobs 8 "])
            && calls[2].ends_with("--gpus 0"),
        "{calls:#?}"
    );
    assert!(
        calls[3].starts_with("reduce case-studies/ls-bh-nf ")
            && has(&calls[3], &["--jobs 16 "])
            && calls[3].ends_with("--gpus 0,1"),
        "{calls:#?}"
    );
}

/// scripts/heartbeat.py, which scripts/test.sh and nvcc-env.sh pipe through: every line comes
/// through in order, and a silent stretch gets a line naming what ran last.
#[test]
fn heartbeat_passes_lines_through_and_speaks_up_when_a_command_is_silent() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/heartbeat.py");
    let o = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "(echo one; sleep 1.6; printf 'two\\nthree') | python3 {} 'the tests'",
            script.display()
        ))
        .env("WMFIX_HEARTBEAT_S", "0.5")
        .output()
        .unwrap();
    assert!(o.status.success());
    assert_eq!(String::from_utf8_lossy(&o.stdout), "one\ntwo\nthree\n");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("wmfix: the tests still running after") && err.contains("(last: one)"),
        "{err}"
    );
}

/// Listing the steps runs none of them and unpacks nothing: the old binary (`before` steps) is
/// unpacked from `carry/wmfix-old.xz` only by a step that runs it, the binary from
/// `carry/wmfix.xz` only to run steps (an unpacked one, left in carry/, took the device tool's
/// 64 MiB).
#[test]
fn listing_the_steps_leaves_the_carried_binaries_packed() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::create_dir_all(root.join("scripts/gpu")).unwrap();
    for f in ["evidence.sh", "evidence.py", "evidence_lib.sh", "steps.py"] {
        std::fs::copy(
            repo().join("scripts/gpu").join(f),
            root.join("scripts/gpu").join(f),
        )
        .unwrap();
    }
    std::fs::create_dir_all(root.join("carry")).unwrap();
    let packed = std::process::Command::new("sh")
        .arg("-c")
        .arg("echo old | xz > carry/wmfix-old.xz && echo new | xz > carry/wmfix.xz")
        .current_dir(root)
        .status()
        .unwrap();
    assert!(packed.success());
    let o = std::process::Command::new("bash")
        .args(["scripts/gpu/evidence.sh", "--list"])
        .current_dir(root)
        .env("RESULTS", root.join("results"))
        .env("WORK", root.join("work"))
        .env("OUT", root.join("out"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("serve-on-before-reduce-cbe-dot"));
    assert!(!root.join("carry/wmfix-old").exists());
    assert!(!root.join("carry/wmfix").exists());
}

#[test]
fn the_ground_truth_steps_of_a_call_share_one_build() {
    // The suite's build (the original and the detection variant) is most of a step's time:
    // the second step starts from the first's.
    let m = Machine::new();
    write(&m.tmp.path().join("ground-truth/labels.json"), "{}");
    let calls = m.run(&["ground-truth-ptx", "ground-truth-scoped-hrf"]);
    let races: Vec<&String> = calls.iter().filter(|c| c.starts_with("race ")).collect();
    assert_eq!(races.len(), 2, "{calls:?}");
    let built: Vec<&String> = calls
        .iter()
        .filter(|c| c.starts_with("built already"))
        .collect();
    assert_eq!(built.len(), 1, "{calls:?}");
    assert!(built[0].ends_with("/ground-truth-scoped-hrf"), "{calls:?}");
    assert!(m.work.join("ground-truth-scoped-hrf/race").is_dir());
}

#[test]
fn the_table_declares_each_steps_command_budget_and_outputs() {
    let o = std::process::Command::new("bash")
        .args(["scripts/gpu/evidence.sh", "--table"])
        .current_dir(repo())
        .env("RESULTS", "/nonexistent/results")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let row = |name: &str| -> Vec<String> {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{name}\t")))
            .unwrap_or_else(|| panic!("no {name} in {text}"));
        line.split('\t').map(String::from).collect()
    };
    assert_eq!(
        row("stress-fenced-sdk-red"),
        [
            "stress-fenced-sdk-red",
            "fenced_cell sdk-red sys-str+ 300",
            "150 s",
            "summary.json, failures.txt"
        ]
    );
    let gt = row("ground-truth-scoped-hrf-runs10");
    assert_eq!(gt[1], "ground_truth scoped-hrf --runs 10 --all-runs");
    assert_eq!(gt[2], "480 s");
    assert!(gt[3].contains("confusion.txt"), "{gt:?}");
    assert_eq!(row("cbe-ht-native")[2], "its own bounds");
    // Every step's function is defined by the library the driver sources.
    let fns: std::collections::BTreeSet<&str> = text
        .lines()
        .map(|l| l.split('\t').nth(1).unwrap().split(' ').next().unwrap())
        .collect();
    let script = format!(
        "source scripts/gpu/evidence_lib.sh; for f in {}; do declare -F $f >/dev/null || echo MISSING $f; done",
        fns.iter().copied().collect::<Vec<_>>().join(" ")
    );
    let o = std::process::Command::new("bash")
        .args(["-c", &script])
        .current_dir(repo())
        .output()
        .unwrap();
    assert_eq!(stdout(&o), "", "{}", stderr(&o));
}

//! `wmfix race` without a GPU: a stand-in whose run leaves the trace the test wrote where the
//! detection runtime writes one. The command builds the detection variant (the runtime switched
//! on in its copy of the runtime), runs it, and reports the racing pair with the fences that
//! order it; a trace with those fences has no race.

mod common;
use common::{fixture, stderr, stdout, wmfix};
use serde_json::Value;
use std::path::Path;

use common::race_trace::{D, F, rec, rec_in, trace};
use wmfix::race::format::{NO_SITE, Record, flag, kind};

fn race(dir: &Path, trace: &[u8], args: &[&str]) -> std::process::Output {
    race_env(dir, trace, args, Path::new("/dev/null"))
}

/// `race`, the stand-in appending the trace size it was given to `env`.
fn race_env(dir: &Path, trace: &[u8], args: &[&str], env: &Path) -> std::process::Output {
    let path = dir.parent().unwrap().join("trace.bin");
    std::fs::write(&path, trace).unwrap();
    wmfix()
        .args(["race", dir.to_str().unwrap(), "--out"])
        .arg(dir.parent().unwrap().join("out"))
        .args(args)
        .env("STANDIN_TRACE", &path)
        .env("STANDIN_STEPS", dir.parent().unwrap().join("steps.log"))
        .env("STANDIN_ENV", env)
        .output()
        .unwrap()
}

#[test]
fn a_message_without_fences_is_a_race_named_with_the_fences_that_order_it() {
    let (_tmp, dir) = fixture("race-standin");
    let o = race(&dir, &trace(false, 0), &["--json"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let rows = doc["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{doc}");
    let row = &rows[0];
    assert_eq!(row["kind"], "write-read");
    assert_eq!(row["first"]["location"], "kernel.cu:3:5");
    assert_eq!(row["second"]["location"], "kernel.cu:8:5");
    assert_eq!(row["example"]["first"], "block 0 thread 0");
    assert_eq!(row["example"]["second"], "block 1 thread 0");
    assert_eq!(row["suggested"], serde_json::json!([0, 2]));
    assert_eq!(doc["suggested"], serde_json::json!([0, 2]));
    assert_eq!(doc["left_with_suggested"], 0);
    assert_eq!(doc["runs"][0]["events"], 5);
    let table = stderr(&o);
    assert!(
        table.contains(
            "race (write-read): kernel.cu:3:5 -> kernel.cu:8:5: 1 pair(s) in 1 of 1 run(s)"
        ),
        "{table}"
    );
    assert!(
        table.contains("writer side needs fence 0; reader side needs fence 2"),
        "{table}"
    );
    // The detection variant was built from its own copy, with the runtime switched on.
    let out = dir.parent().unwrap().join("out");
    let header = std::fs::read_to_string(out.join("race/runtime/wmfix.cuh")).unwrap();
    assert!(header.starts_with("#define WMFIX_RACE 1\n"));
    let plain = std::fs::read_to_string(out.join("runtime/wmfix.cuh")).unwrap();
    assert!(!plain.contains("#define WMFIX_RACE 1"));
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("race/race.json")).unwrap())
            .unwrap();
    assert_eq!(saved["rows"], doc["rows"]);
}

/// An atomic's record (device scope) of thread 0 of `block`: `old` read, `new` written.
fn rmw(addr: u64, old: u64, new: u64, block: u32) -> Vec<u8> {
    rmw_at(addr, old, new, block, NO_SITE)
}

fn rmw_at(addr: u64, old: u64, new: u64, block: u32, site: u32) -> Vec<u8> {
    let mut r = Vec::new();
    Record {
        addr,
        a: old,
        b: new,
        launch: 9,
        block,
        site,
        kind: kind::RMW,
        flags: flag::DEVICE | flag::VALUE,
        ..Record::default()
    }
    .encode(&mut r);
    r
}

/// Block 0 stores d (site 0), fences, and sets the flag with an atomic; block 1 reads the flag
/// with an atomic, then d (site 3) with no fence between: an acquire missing under ptx.
fn atomic_flag_no_reader_fence() -> Vec<u8> {
    let mut t = b"wmfix-race-trace 1 capacity=100 dropped=0\n".to_vec();
    t.extend(rec(kind::ACCESS, 0, D, 0, 0, 0));
    t.extend(rec(kind::FENCE, flag::DEVICE, 0, 0, NO_SITE, 0));
    t.extend(rmw(F, 0, 1, 0));
    t.extend(rmw(F, 1, 1, 1));
    t.extend(rec(kind::LOAD, 0, D, 0, 3, 1));
    t
}

#[test]
fn a_missing_acquire_races_under_ptx_and_the_row_says_scoped_hrf_would_not_call_it_one() {
    let (_tmp, dir) = fixture("race-standin");
    let o = race(&dir, &atomic_flag_no_reader_fence(), &["--json"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(doc["model"], "ptx");
    let row = &doc["rows"][0];
    assert_eq!(row["class"], "data-race", "{doc}");
    assert_eq!(row["model"], "ptx");
    let other = row["other_model"].as_str().unwrap_or_default();
    assert!(
        other.starts_with("a missing acquire: ") && other.contains("scoped-hrf would not"),
        "{doc}"
    );
    let table = stderr(&o);
    assert!(table.contains("; under ptx\n"), "{table}");
    assert!(
        table.contains("scoped-hrf would not call it one"),
        "{table}"
    );
    let o = race(
        &dir,
        &atomic_flag_no_reader_fence(),
        &["--model", "scoped-hrf"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("no race in 3 run(s) under scoped-hrf"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn two_blocks_storing_one_word_unsynchronised_are_reported_as_their_own_class() {
    let (_tmp, dir) = fixture("race-standin");
    // Both blocks store the flag (volatile, site 1): no data race under ptx, but unordered.
    let mut t = b"wmfix-race-trace 1 capacity=100 dropped=0\n".to_vec();
    t.extend(rec(kind::ACCESS, flag::STRONG | flag::VALUE, F, 1, 1, 0));
    t.extend(rec(kind::ACCESS, flag::STRONG | flag::VALUE, F, 2, 1, 1));
    let o = race(&dir, &t, &["--json"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let rows = doc["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{doc}");
    assert_eq!(rows[0]["class"], "unordered-strong");
    assert_eq!(rows[0]["kind"], "write-write");
    let table = stderr(&o);
    assert!(
        table.contains(
            "unordered conflicting strong accesses: no synchronisation orders these writes"
        ),
        "{table}"
    );
}

#[test]
fn a_bad_model_is_refused() {
    let (_tmp, dir) = fixture("race-standin");
    let o = race(&dir, &trace(false, 0), &["--model", "hrf"]);
    assert_eq!(o.status.code(), Some(64), "{}", stderr(&o));
}

#[test]
fn no_race_in_a_trace_the_buffer_cut_short_is_inconclusive_not_a_verdict() {
    let (_tmp, dir) = fixture("race-standin");
    let o = race(&dir, &trace(true, 7), &["--runs", "1"]);
    // e1354e7 exited 0 here ("no race") though the one launch was never checked.
    assert_eq!(o.status.code(), Some(6), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(!text.contains("no race in 1 run"), "{text}");
    assert!(
        text.contains("not checked: 7 event(s) the trace buffer could not hold and 7 recorded event(s) of the launch it cut short"),
        "{text}"
    );
    assert!(
        text.contains("INCONCLUSIVE: no race in what was checked, but not everything was (0.00% of the events checked)"),
        "{text}"
    );
}

#[test]
fn a_whole_fenced_trace_is_a_verdict_of_no_race_and_the_trace_is_sized_without_a_flag() {
    let (_tmp, dir) = fixture("race-standin");
    let env = dir.parent().unwrap().join("env.log");
    let o = race_env(&dir, &trace(true, 0), &["--json"], &env);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(doc["complete"], true, "{doc}");
    assert_eq!(doc["checked_share"], 1.0, "{doc}");
    assert!(stderr(&o).contains("no race in 3 run(s) under ptx (every event checked"));
    // The runtime sizes the buffer from the device's free memory unless --events is given;
    // no race: all three runs, the later two with thread ids remapped.
    let said = std::fs::read_to_string(&env).unwrap();
    assert_eq!(
        said,
        "events=auto memory=0.25 env=no-str-\nevents=auto memory=0.25 env=no-str+\nevents=auto memory=0.25 env=no-str+\n"
    );
    assert!(
        stderr(&o).contains("schedules: 3 (no-str-, no-str+, no-str+)\n"),
        "{}",
        stderr(&o)
    );
    let o = race_env(&dir, &trace(true, 0), &["--events", "1000"], &env);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let said = std::fs::read_to_string(&env).unwrap();
    assert!(
        said.ends_with("events=1000 memory=0.25 env=no-str+\n"),
        "{said}"
    );
}

#[test]
fn a_run_that_wrote_no_trace_is_inconclusive_not_a_clean_run() {
    let (_tmp, dir) = fixture("race-standin");
    let path = dir.parent().unwrap().join("trace.bin");
    let o = wmfix()
        .args(["race", dir.to_str().unwrap(), "--out"])
        .arg(dir.parent().unwrap().join("out"))
        .env("STANDIN_TRACE", path.with_extension("missing"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(6), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("not checked: run 0 (") && text.contains("wrote no trace"),
        "{text}"
    );
    assert!(
        text.contains("(an unknown share of the events checked)"),
        "{text}"
    );
    // The original passes natively: the detection run's failure is the race build's doing.
    assert!(
        text.contains(
            "wmfix: warning: detection run(s) [0, 1, 2] ended otherwise than the original natively (pass)"
        ),
        "{text}"
    );
}

#[test]
fn a_race_found_in_an_incomplete_trace_still_stands() {
    let (_tmp, dir) = fixture("race-standin");
    // Two launches: the first whole and racing, the second cut short by a full buffer.
    let mut t = trace(false, 3);
    t.extend(rec_in(2, kind::ACCESS, 0, D, 0, 0, 0));
    let o = race(&dir, &t, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("race (write-read)"), "{text}");
    assert!(
        text.contains("the races above stand; others may be in what was not checked"),
        "{text}"
    );
}

#[test]
fn detection_runs_take_one_step_whatever_wmfix_toml_says_unless_told() {
    let (_tmp, dir) = fixture("race-standin");
    let log = dir.parent().unwrap().join("steps.log");
    let o = race(&dir, &trace(false, 0), &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    // The original natively (for the overhead), then the detection run: each at one step.
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "1\n1\n");
    std::fs::remove_file(&log).unwrap();
    let o = race(&dir, &trace(false, 0), &["--steps", "3"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "3\n3\n");
}

#[test]
fn fence_ids_the_program_does_not_have_are_refused_before_anything_runs() {
    let (_tmp, dir) = fixture("race-standin");
    let o = race(&dir, &trace(false, 0), &["--fences", "7"]);
    assert_eq!(o.status.code(), Some(64), "{}", stderr(&o));
    assert!(stderr(&o).contains("--fences"), "{}", stderr(&o));
}

/// `wmfix reduce --oracle race` on the reduce stand-in with the race stand-in's kernel: stress
/// runs err (half of them) unless every fence of `required` is on; the detection run leaves
/// `trace`.
fn reduce_by_race(trace: &[u8], required: &str) -> (tempfile::TempDir, Value, String) {
    let (tmp, dir) = fixture("reduce-standin");
    let (doc, err) = reduce_by_race_in(&dir, trace, required, &[]);
    (tmp, doc, err)
}

/// The same in the stand-in copy `dir` (made by `reduce_by_race`'s first call), with `args`.
fn reduce_by_race_in(dir: &Path, trace: &[u8], required: &str, args: &[&str]) -> (Value, String) {
    let kernel = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/race-standin/kernel.cu"),
    )
    .unwrap();
    std::fs::write(dir.join("kernel.cu"), kernel).unwrap();
    let path = dir.parent().unwrap().join("trace.bin");
    std::fs::write(&path, trace).unwrap();
    let o = wmfix()
        .args(["reduce", dir.to_str().unwrap(), "--out"])
        .arg(dir.parent().unwrap().join("out"))
        .args(["--hours", "1", "--oracle", "race", "--json"])
        .args(args)
        .env("STANDIN_TRACE", &path)
        .env("STANDIN_REQUIRED", required)
        .env("STANDIN_PERCENT", "50")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    (doc, stderr(&o))
}

#[test]
fn a_resumed_race_reduction_keeps_the_start_set_its_traces_decided() {
    let (tmp, first, _) = reduce_by_race(&trace(false, 0), "0,2");
    assert_eq!(first["race"]["fences"], serde_json::json!([0, 2]));
    // Another detection run would see no race now; the resume must not ask it.
    let dir = tmp.path().join("reduce-standin");
    let (again, err) = reduce_by_race_in(&dir, &trace(true, 0), "0,2", &["--resume"]);
    assert_eq!(again["race"], first["race"], "{err}");
    assert_eq!(again["result"]["fences"], serde_json::json!([0, 2]));
    assert_eq!(
        again["replayed_checks"], first["result"]["checks"],
        "{again}"
    );
}

#[test]
fn the_race_oracle_starts_from_the_fences_the_race_needs_and_stress_confirms_them() {
    let (_tmp, doc, err) = reduce_by_race(&trace(false, 0), "0,2");
    assert_eq!(doc["race"]["fences"], serde_json::json!([0, 2]), "{doc}");
    // Said once on stderr, when found: the summary that follows it there leaves it out.
    assert_eq!(err.matches("race oracle:").count(), 1, "{err}");
    assert_eq!(doc["race"]["named"], serde_json::json!([0, 2]));
    assert_eq!(doc["result"]["fences"], serde_json::json!([0, 2]));
    assert_eq!(doc["result"]["complete"], true);
    // No binary or linear reduction, no placement search and no check with every fence (the
    // start set's passing stability check stands for it): without fences, and the stability
    // check (sized for 5% of runs under the race oracle: 90 runs).
    assert_eq!(doc["result"]["checks"], 2, "{doc}");
    assert_eq!(doc["result"]["every_fence_checked"], false, "{doc}");
    assert!(err.contains("every fence: not run"), "{err}");
    assert_eq!(doc["result"]["stability_runs"], 90, "{doc}");
    assert!(err.contains("race oracle: 1 racing place pairs"), "{err}");
    assert!(err.contains("start set {0, 2}"), "{err}");
}

#[test]
fn race_proven_fences_are_kept_when_stress_never_shows_their_race() {
    // threadFenceReduction on a chip that does not reorder it: the stress runs never err.
    // e1354e7 ended "no fence is empirically needed" and dropped both.
    let (tmp, doc, err) = reduce_by_race(&trace(false, 0), "");
    assert_eq!(doc["result"]["fences"], serde_json::json!([0, 2]), "{doc}");
    assert_eq!(doc["result"]["proven"], serde_json::json!([0, 2]), "{doc}");
    assert!(
        err.contains("stress does not show the races the detector saw"),
        "{err}"
    );
    let why = doc["kept"][0]["proof"][0].as_str().unwrap();
    assert_eq!(
        why,
        "orders race kernel.cu:3 -> kernel.cu:8 (write-read) seen in detection run 0"
    );
    assert!(err.contains(&format!("why: {why}")), "{err}");
    let patch = std::fs::read_to_string(tmp.path().join("out/reduce/fences.patch")).unwrap();
    assert!(
        patch.starts_with(
            "wmfix reduce: why each fence is kept\n  fence 0 at kernel.cu:3:5: orders race"
        ),
        "{patch}"
    );
}

#[test]
fn a_race_oracle_start_that_misses_a_needed_fence_is_corrected_by_stress() {
    // The detection run saw the program's own fences on both sides: no race, no fence named;
    // the stress runs still need 0 and 2, which add-back and reduction find.
    let (_tmp, doc, err) = reduce_by_race(&trace(true, 0), "0,2");
    assert_eq!(doc["race"]["fences"], serde_json::json!([]), "{doc}");
    assert!(err.contains("no race in the traces"), "{err}");
    assert_eq!(doc["result"]["fences"], serde_json::json!([0, 2]), "{doc}");
    assert_eq!(doc["result"]["complete"], true);
}

#[test]
fn a_stress_reduction_that_drops_what_race_found_says_so() {
    // `wmfix race` on the build names fences 0 and 2; the stress reduction, whose runs never
    // err, keeps none of them: its summary and reduce.json say they disagree.
    let (tmp, dir) = fixture("reduce-standin");
    let kernel = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/race-standin/kernel.cu"),
    )
    .unwrap();
    std::fs::write(dir.join("kernel.cu"), kernel).unwrap();
    let path = tmp.path().join("trace.bin");
    std::fs::write(&path, trace(false, 0)).unwrap();
    let out = tmp.path().join("out");
    let o = wmfix()
        .args(["race", dir.to_str().unwrap(), "--out"])
        .arg(&out)
        .env("STANDIN_TRACE", &path)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = wmfix()
        .args(["reduce", dir.to_str().unwrap(), "--out"])
        .arg(&out)
        .args(["--hours", "1", "--json"])
        .env("STANDIN_REQUIRED", "")
        .env("STANDIN_PERCENT", "50")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(doc["result"]["fences"], serde_json::json!([]), "{doc}");
    let said = doc["disagreement"][0].as_str().unwrap();
    assert!(
        said.contains("it names fence(s) 0, 2 for the races it saw, which this reduction dropped"),
        "{said}"
    );
    assert!(
        stderr(&o).contains(&format!("wmfix: warning: {said}")),
        "{}",
        stderr(&o)
    );
}

#[test]
fn the_race_oracle_finds_races_under_the_model_asked() {
    // The reader's atomic flag read at fence site 2: under ptx its fence is the acquire.
    let mut t = b"wmfix-race-trace 1 capacity=100 dropped=0\n".to_vec();
    t.extend(rec(kind::ACCESS, 0, D, 0, 0, 0));
    t.extend(rec(kind::FENCE, flag::DEVICE, 0, 0, NO_SITE, 0));
    t.extend(rmw(F, 0, 1, 0));
    t.extend(rmw_at(F, 1, 1, 1, 2));
    t.extend(rec(kind::LOAD, 0, D, 0, 3, 1));
    let (_tmp, ptx, _) = reduce_by_race(&t, "");
    assert_eq!(ptx["race"]["fences"], serde_json::json!([2]), "{ptx}");
    assert_eq!(ptx["race"]["model"], "ptx");
    let (tmp, dir) = fixture("reduce-standin");
    let (hrf, err) = reduce_by_race_in(&dir, &t, "", &["--model", "scoped-hrf"]);
    assert_eq!(hrf["race"]["fences"], serde_json::json!([]), "{err}");
    assert_eq!(hrf["race"]["model"], "scoped-hrf");
    drop(tmp);
}

#[test]
fn detection_stops_at_the_first_run_that_shows_a_race_unless_all_runs_are_asked() {
    let (_tmp, dir) = fixture("race-standin");
    let env = dir.parent().unwrap().join("env.log");
    let o = race_env(&dir, &trace(false, 0), &["--json"], &env);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&env).unwrap().lines().count(), 1);
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(doc["runs"].as_array().unwrap().len(), 1, "{doc}");
    assert_eq!(doc["rows"][0]["in_runs"], serde_json::json!([0]), "{doc}");
    assert!(
        stderr(&o).contains(
            "schedules: 1 (no-str-); stopped after run 0 showed a race (`--all-runs` runs all 3)"
        ),
        "{}",
        stderr(&o)
    );
    std::fs::remove_file(&env).unwrap();
    let o = race_env(
        &dir,
        &trace(false, 0),
        &["--json", "--all-runs", "--runs", "4"],
        &env,
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&env).unwrap().lines().count(), 4);
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        doc["rows"][0]["in_runs"],
        serde_json::json!([0, 1, 2, 3]),
        "{doc}"
    );
    assert_eq!(doc["runs"][3]["env"], "no-str+", "{doc}");
}

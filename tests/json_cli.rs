//! `--json` (issue 11, item 6): one JSON document on stdout, read back into the types that
//! write it, agreeing with the files the command leaves; the human output goes to stderr.

mod common;
use common::*;
use std::path::Path;
use wmfix::cmd::insert::InsertJson;
use wmfix::cmd::test::{ReplayJson, Summary, TestJson};
use wmfix::fences::id::FenceId;

fn kernel(dir: &Path, n: usize) {
    let body: String = (0..n).map(|i| format!("  a[{i}] = {i};\n")).collect();
    std::fs::write(
        dir.join("kernel.cu"),
        format!("__global__ void k(int *a) {{\n{body}}}\n"),
    )
    .unwrap();
}

#[test]
fn test_json_is_the_table() {
    let (tmp, dir) = fixture("standin");
    let o = wmfix()
        .current_dir(tmp.path())
        .args(["test", dir.to_str().unwrap(), "--out", "out", "--json"])
        .args(["--env", "sys-str+,no-str-", "--runs", "40"])
        .envs([("STANDIN_MODE", "rate"), ("STANDIN_PERCENT", "25")])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let doc: TestJson = serde_json::from_slice(&o.stdout).expect("stdout is one JSON document");
    let summary: Summary = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("out/test/summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(doc.rows, wmfix::cmd::test::table_rows(&summary));
    assert_eq!(doc.rows.len(), 2);
    for r in &doc.rows {
        assert_eq!(r.counts.runs, 40);
        assert_eq!(r.errors, r.counts.fail);
        assert!(r.errors > 0 && r.effective, "{r:?}");
        assert_eq!(r.error_rate, r.errors as f64 / 40.0);
        assert!(r.ci95.0 < r.error_rate && r.error_rate < r.ci95.1, "{r:?}");
    }
    assert!(doc.records.join("runs.jsonl").is_file());
    assert!(!doc.interrupted);
    // The table is still shown, on stderr.
    assert!(stderr(&o).contains("95% CI"), "{}", stderr(&o));
}

#[test]
fn reduce_and_cost_json_are_their_reports() {
    let (tmp, dir) = fixture("reduce-standin");
    kernel(&dir, 10);
    let o = wmfix()
        .current_dir(tmp.path())
        .args(["reduce", "reduce-standin", "--out", "out", "--json"])
        .envs([("STANDIN_REQUIRED", "3,8"), ("STANDIN_PERCENT", "100")])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: wmfix::reduce::record::Report = serde_json::from_slice(&o.stdout).unwrap();
    let ids = |v: &[usize]| -> Vec<FenceId> { v.iter().copied().map(FenceId).collect() };
    assert_eq!(
        doc.result.fences.iter().copied().collect::<Vec<_>>(),
        ids(&[3, 8])
    );
    assert_eq!(
        doc.kept.iter().map(|k| k.id).collect::<Vec<_>>(),
        ids(&[3, 8])
    );
    assert!(doc.result.complete && !doc.interrupted);
    let file: wmfix::reduce::record::Report = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("out/reduce/reduce.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(file.result.fences, doc.result.fences);
    assert!(stderr(&o).contains("10 -> 2 fences"), "{}", stderr(&o));

    let o = run(
        tmp.path(),
        &[
            "cost",
            "reduce-standin",
            "--out",
            "out",
            "--rounds",
            "2",
            "--json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: wmfix::cost::measure::Report = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<&str> = doc.rows.iter().map(|r| r.variant.as_str()).collect();
    assert_eq!(names, ["none", "reduced", "all"]);
    assert_eq!(
        doc.rows.iter().map(|r| r.fences).collect::<Vec<_>>(),
        [0, 2, 10]
    );
    assert!(doc.rows.iter().all(|r| r.runs == 2 && r.wall_s.is_some()));
    assert_eq!(doc.rounds_done, 2);
    assert!(stderr(&o).contains("x none"), "{}", stderr(&o));
}

#[test]
fn insert_json_counts_what_it_wrote() {
    let (tmp, _root) = fixture("multi");
    let o = run(tmp.path(), &["insert", "multi", "--out", "out", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: InsertJson = serde_json::from_slice(&o.stdout).unwrap();
    let fences: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&doc.fences_json).unwrap()).unwrap();
    assert_eq!(doc.fences as u64, fences["total"].as_u64().unwrap());
    assert!(doc.fences > 0 && doc.instrumented > 0 && doc.files >= doc.instrumented);
    assert!(doc.tree.join("main.cu").is_file());
    assert!(stderr(&o).contains("wmfix: "), "{}", stderr(&o));
}

#[test]
fn replay_json_is_the_run_recorded_and_run_again() {
    let (tmp, dir) = fixture("standin");
    let test = |extra: &[&str]| {
        wmfix()
            .current_dir(tmp.path())
            .args(["test", dir.to_str().unwrap(), "--out", "out", "--runs", "4"])
            .args(extra)
            .envs([("STANDIN_MODE", "rate"), ("STANDIN_PERCENT", "100")])
            .output()
            .unwrap()
    };
    assert_eq!(test(&[]).status.code(), Some(2));
    let o = test(&["--replay", "1", "--json"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let doc: ReplayJson = serde_json::from_slice(&o.stdout).expect("stdout is one JSON document");
    assert_eq!(doc.recorded.id, 1);
    assert_eq!(doc.outcome, doc.recorded.outcome);
    assert!(doc.outcome.is_error(), "{doc:?}");
    assert!(!doc.exit.contains("Code("), "{doc:?}");
    // The human line is still shown, on stderr.
    assert!(stderr(&o).contains("replayed:"), "{}", stderr(&o));
}

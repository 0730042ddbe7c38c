//! `wmfix cost` on stand-ins: a program whose run time grows with the fences compiled into it
//! (tests/fixtures/cost-standin), and the reduction stand-in for the default, reduced variant.

mod common;
use common::*;
use serde_json::Value;
use std::path::Path;

fn cost_json(cwd: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(cwd.join("out/cost/cost.json")).unwrap()).unwrap()
}

fn fences_in(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .unwrap()
        .matches("__threadfence();")
        .count()
}

#[test]
fn each_variant_gets_its_fences_and_is_timed_in_interleaved_rounds() {
    let (tmp, dir) = fixture("cost-standin");
    let before = snapshot_bytes(&dir);
    let o = run(
        tmp.path(),
        &[
            "cost",
            "cost-standin",
            "--out",
            "out",
            "--fences",
            "1,4",
            "--rounds",
            "4",
        ],
    );
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    assert_eq!(snapshot_bytes(&dir), before, "the sources were modified");

    let out = tmp.path().join("out");
    assert_eq!(fences_in(&out.join("original/kernel.cu")), 0);
    assert_eq!(fences_in(&out.join("cost/chosen/kernel.cu")), 2);
    assert_eq!(fences_in(&out.join("cost/all/kernel.cu")), 6);

    let r = cost_json(tmp.path());
    assert_eq!(r["rounds_done"], 4);
    let rows = r["rows"].as_array().unwrap();
    let names: Vec<&str> = rows
        .iter()
        .map(|r| r["variant"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["none", "chosen", "all"]);
    let fences: Vec<u64> = rows.iter().map(|r| r["fences"].as_u64().unwrap()).collect();
    assert_eq!(fences, [0, 2, 6]);
    // The stand-in reports 1 + 10 ms per fence and sleeps 40 + 40 ms per fence.
    let reported: Vec<f64> = rows
        .iter()
        .map(|r| r["reported_ms"]["mean"].as_f64().unwrap())
        .collect();
    assert_eq!(reported, [1.0, 21.0, 61.0]);
    // Wall time: the sleeps add 80 and 240 ms to the program as written; start-up costs vary
    // with the machine's load, so only the differences are checked, with room to spare.
    let wall: Vec<f64> = rows
        .iter()
        .map(|r| r["wall_s"]["mean"].as_f64().unwrap())
        .collect();
    assert!(
        wall[1] - wall[0] > 0.05 && wall[2] - wall[1] > 0.1,
        "{wall:?}"
    );
    assert_eq!(rows[0]["wall_ratio"][0].as_f64(), Some(1.0));
    assert!(rows[2]["wall_ratio"][0].as_f64().unwrap() > 1.0);
    for row in rows {
        assert_eq!(row["runs"], 4);
        assert_eq!(row["errors"], 0);
    }
    if r["gpu"].is_null() {
        assert!(r["energy_note"].as_str().unwrap().contains("NVML"), "{r}");
        assert!(rows.iter().all(|r| r["energy_j"].is_null()));
    }
    // Every timed run is a line, and every round ran each variant once.
    let runs = std::fs::read_to_string(out.join("cost/runs.jsonl")).unwrap();
    let lines: Vec<Value> = runs
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 12);
    for round in 1..=4 {
        let mut v: Vec<&str> = lines
            .iter()
            .filter(|l| l["round"] == round)
            .map(|l| l["variant"].as_str().unwrap())
            .collect();
        v.sort();
        assert_eq!(v, ["all", "chosen", "none"], "round {round}");
    }
    let s = stdout(&o);
    assert!(s.contains("chosen") && s.contains("61.000"), "{s}");
}

#[test]
fn the_reduced_variant_comes_from_the_last_reduction_of_these_sources() {
    let (tmp, dir) = fixture("reduce-standin");
    let body: String = (0..10).map(|i| format!("  a[{i}] = {i};\n")).collect();
    std::fs::write(
        dir.join("kernel.cu"),
        format!("__global__ void k(int *a) {{\n{body}}}\n"),
    )
    .unwrap();
    let cost = |extra: &[&str]| {
        let mut args = vec!["cost", "reduce-standin", "--out", "out", "--rounds", "2"];
        args.extend_from_slice(extra);
        run(tmp.path(), &args)
    };
    let o = cost(&[]);
    assert_eq!(o.status.code(), Some(66), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("run `wmfix reduce` first"),
        "{}",
        stderr(&o)
    );

    let o = wmfix()
        .current_dir(tmp.path())
        .args(["reduce", "reduce-standin", "--out", "out", "--hours", "1"])
        .env("STANDIN_REQUIRED", "3")
        .env("STANDIN_PERCENT", "100")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let o = cost(&[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let reduced = std::fs::read_to_string(tmp.path().join("out/cost/reduced/kernel.cu")).unwrap();
    assert_eq!(reduced.matches("__threadfence();").count(), 1);
    assert!(reduced.contains("a[3] = 3; __threadfence();"), "{reduced}");
    let fences: Vec<u64> = cost_json(tmp.path())["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["fences"].as_u64().unwrap())
        .collect();
    assert_eq!(fences, [0, 1, 10]);

    let o = cost(&["--fences", "10"]);
    assert_eq!(o.status.code(), Some(64), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no fence 10; the program has 10"),
        "{}",
        stderr(&o)
    );

    // A reduction made elsewhere, given by its reduce.json, into a fresh output folder.
    let kept = tmp.path().join("kept-reduce.json");
    std::fs::copy(tmp.path().join("out/reduce/reduce.json"), &kept).unwrap();
    let elsewhere = |tmp: &Path| {
        let args = ["cost", "reduce-standin", "--out", "other", "--rounds", "2"];
        run(
            tmp,
            &[&args[..], &["--fences", "kept-reduce.json"]].concat(),
        )
    };
    let o = elsewhere(tmp.path());
    assert!(o.status.success(), "{}", stderr(&o));
    let there = std::fs::read_to_string(tmp.path().join("other/cost/reduced/kernel.cu")).unwrap();
    assert_eq!(there, reduced);

    // Fence ids belong to the sources they were numbered in.
    std::fs::write(
        dir.join("kernel.cu"),
        format!("__global__ void k(int *a) {{\n  a[99] = 0;\n{body}}}\n"),
    )
    .unwrap();
    let o = cost(&[]);
    assert_eq!(o.status.code(), Some(65), "{}", stderr(&o));
    assert!(stderr(&o).contains("sources changed"), "{}", stderr(&o));
    let o = elsewhere(tmp.path());
    assert_eq!(o.status.code(), Some(65), "{}", stderr(&o));
}

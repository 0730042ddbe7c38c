//! `--warm`: runs served by processes that call the program's main once a run.

mod common;
use common::*;
use std::collections::BTreeMap;
use std::path::Path;

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
    // A process serves runs until one fails: at most one per failure, plus one per worker.
    let line = stderr(&warm)
        .lines()
        .find(|l| l.contains("warm: 40 runs in "))
        .map(str::to_string)
        .unwrap_or_else(|| panic!("no warm line in {}", stderr(&warm)));
    let processes: usize = line
        .rsplit("in ")
        .next()
        .and_then(|w| w.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(processes <= fails + 2, "{line} with {fails} failures");
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

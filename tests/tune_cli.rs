//! `wmfix tune --analyse` on the raw counts of a synthetic Titan-style run
//! (tests/fixtures/tune/titan.json, written by `tune::tests::cli_fixture_is_current`):
//! the printed analysis, profile.toml (read back by the runtime's own parser, built with nvcc),
//! analysis.json, the plots, and the errors for bad input.

mod common;
use common::*;
use std::path::{Path, PathBuf};

fn fixture_json() -> PathBuf {
    repo().join("tests/fixtures/tune/titan.json")
}

fn tune(cwd: &Path, args: &[&str]) -> std::process::Output {
    let mut all = vec!["tune"];
    all.extend_from_slice(args);
    run(cwd, &all)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn analyses_a_titan_style_run() {
    let tmp = tempfile::tempdir().unwrap();
    let before = read(&fixture_json());
    let o = tune(
        tmp.path(),
        &["--analyse", fixture_json().to_str().unwrap(), "--out", "t"],
    );
    let out = stdout(&o);
    assert!(o.status.success(), "{out}\n{}", stderr(&o));
    for want in [
        "critical patch size: 32 (MP 32, LB 32, SB 32)",
        "  1 ld3 st ld      153k",
        " 62 st",
        "ld st2 ld      104k *",
        "Pareto-optimal (4): st2 ld",
        "chosen sequence: ld st2 ld (\"ld st st ld\"): more effective than each other \
         Pareto-optimal one for two of the three tests",
        "    2     10000     10000     10000 *",
        "chosen spread: 2: the only Pareto-optimal one",
        "wmfix: profile in t/profile.toml",
    ] {
        assert!(out.contains(want), "missing {want:?} in\n{out}");
    }
    assert!(!out.contains("warning"), "{out}");
    let dir = tmp.path().join("t");

    let profile: toml::Table = read(&dir.join("profile.toml")).parse().unwrap();
    assert_eq!(profile["patch_size"].as_integer(), Some(32));
    assert_eq!(profile["sequence"].as_str(), Some("ld st st ld"));
    assert_eq!(profile["spread"].as_integer(), Some(2));
    assert_eq!(profile["name"].as_str(), Some("synthetic-titan"));
    assert_eq!(profile.len(), 5, "{profile:?}");

    let a: serde_json::Value = serde_json::from_str(&read(&dir.join("analysis.json"))).unwrap();
    assert_eq!(a["patch"]["critical"], 32);
    assert_eq!(a["patch"]["tests"]["MP"]["size"], 32);
    assert_eq!(a["sequence"]["chosen"], "ld st st ld");
    assert_eq!(a["sequence"]["decided_by"], "two_of_three");
    assert_eq!(a["sequence"]["all"].as_array().unwrap().len(), 62);
    assert_eq!(a["spread"]["chosen"], 2);

    // Fig. 3 for d = 0 and 32 (64 is beyond D = 64), Fig. 4 with the chosen spread.
    let patches = read(&dir.join("patches.svg"));
    assert!(patches.starts_with("<svg") && patches.ends_with("</svg>\n"));
    assert!(patches.contains("MP, d = 0 (max "));
    assert!(patches.contains("SB, d = 32 (max "));
    assert!(!patches.contains("d = 64"));
    // A bar per hot location, in the hot colour (blue): at least a 32-wide region per test.
    let hot = patches
        .lines()
        .filter(|l| l.starts_with("<rect") && l.contains("fill=\"#1F77B4\""))
        .count();
    assert!(hot >= 3 * 32, "a hot region per test: {hot} bars");
    let spread = read(&dir.join("spread.svg"));
    assert!(spread.contains("chosen: 2"));
    // One line per test, in the tests' colours (the dashed line at the chosen spread is grey).
    for colour in ["#1F77B4", "#FF7F0E", "#2CA02C"] {
        let lines = spread
            .lines()
            .filter(|l| l.starts_with("<polyline") && l.contains(&format!("stroke=\"{colour}\"")));
        assert_eq!(lines.count(), 1, "{colour}");
    }

    assert_eq!(read(&fixture_json()), before, "the input is only read");
}

#[test]
fn default_output_directory_and_epsilon_override() {
    let tmp = tempfile::tempdir().unwrap();
    let o = tune(
        tmp.path(),
        &[
            "--analyse",
            fixture_json().to_str().unwrap(),
            "--epsilon",
            "100000",
        ],
    );
    let out = stdout(&o);
    assert!(o.status.success(), "{out}\n{}", stderr(&o));
    assert!(
        out.contains("no critical patch size: no epsilon-patch in any test"),
        "{out}"
    );
    let text = read(&tmp.path().join("wmfix-out/tune/profile.toml"));
    // The patch size falls back to the one the sequence phase was run with, and says so.
    assert!(text.contains("\npatch_size = 32\n"), "{text}");
    assert!(
        text.contains("the patch size the sequence phase was run with"),
        "{text}"
    );
}

#[test]
fn bad_input_is_reported_with_the_file_name() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let fixture = read(&fixture_json());

    // Missing file: 66.
    let o = tune(dir, &["--analyse", "nope.json"]);
    assert_eq!(o.status.code(), Some(66), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("nope.json: cannot read raw counts"),
        "{}",
        stderr(&o)
    );

    // Not JSON (cut off): 65, with the position.
    std::fs::write(dir.join("cut.json"), &fixture[..fixture.len() / 2]).unwrap();
    let o = tune(dir, &["--analyse", "cut.json"]);
    assert_eq!(o.status.code(), Some(65));
    let e = stderr(&o);
    assert!(
        e.contains("cut.json: not a raw-counts JSON file: EOF while parsing"),
        "{e}"
    );
    assert!(e.contains(" line "), "{e}");

    // JSON of the wrong shape: 65, naming the table.
    let mut v: serde_json::Value = serde_json::from_str(&fixture).unwrap();
    v["patch"]["counts"]["LB"][5].as_array_mut().unwrap().pop();
    std::fs::write(dir.join("short.json"), v.to_string()).unwrap();
    let o = tune(dir, &["--analyse", "short.json"]);
    assert_eq!(o.status.code(), Some(65));
    assert!(
        stderr(&o).contains("short.json: patch.counts.LB[5] has 127 entries, expected 128"),
        "{}",
        stderr(&o)
    );

    // A bad access sequence.
    let bad = fixture.replace("\"sequence\": \"st ld\"", "\"sequence\": \"st lx\"");
    std::fs::write(dir.join("seq.json"), bad).unwrap();
    let o = tune(dir, &["--analyse", "seq.json"]);
    assert_eq!(o.status.code(), Some(65));
    assert!(
        stderr(&o).contains(
            "seq.json: not a raw-counts JSON file: access sequence \"st lx\": unknown access \"lx\""
        ),
        "{}",
        stderr(&o)
    );

    // An output directory that cannot be created: 73.
    std::fs::write(dir.join("file"), "").unwrap();
    let o = tune(
        dir,
        &[
            "--analyse",
            fixture_json().to_str().unwrap(),
            "--out",
            "file/sub",
        ],
    );
    assert_eq!(o.status.code(), Some(73), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("file/sub: cannot write"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn help_names_the_paper_sizes_and_the_gpu_free_analysis() {
    let tmp = tempfile::tempdir().unwrap();
    let o = tune(tmp.path(), &["--help"]);
    assert!(o.status.success());
    for flag in [
        "--analyse <FILE>",
        "--quick",
        "--distances",
        "--executions",
        "--patch-size",
        "--sync",
    ] {
        assert!(stdout(&o).contains(flag), "{flag}: {}", stdout(&o));
    }
    assert!(stdout(&o).contains("(paper: 256)"), "{}", stdout(&o));
}

/// Reads each profile file with runtime-cu's own parser (`wmfix::host::parse_profile_text`, host code
/// built with nvcc in `dir`; no GPU needed): one line per file, `patch_size=N` and each variant's
/// ` sequence=... seq_len=N seq_bits=X spread=N` (separated by ` |`), or `error: ...`.
fn read_with_runtime(dir: &Path, files: &[PathBuf]) -> String {
    let main = format!(
        r#"#include "{}/runtime-cu/wmfix_plan.h"
#include <cstdio>
#include <fstream>
#include <sstream>
int main(int argc, char** argv) {{
  int status = 0;
  for (int i = 1; i < argc; ++i) {{
    std::ifstream in(argv[i]);
    std::stringstream text;
    text << in.rdbuf();
    wmfix::host::Profile p;
    std::string err;
    if (!in || !wmfix::host::parse_profile_text(text.str(), &p, &err)) {{
      std::printf("error: %s\n", err.c_str());
      status = 1;
      continue;
    }}
    std::printf("patch_size=%u", p.patch_size);
    for (size_t k = 0; k < p.variants.size(); ++k)
      std::printf("%s sequence=%s seq_len=%u seq_bits=%x spread=%u", k ? " |" : "",
                  p.variants[k].sequence.c_str(), p.variants[k].seq_len, p.variants[k].seq_bits,
                  p.variants[k].spread);
    std::printf("\n");
  }}
  return status;
}}
"#,
        repo().display()
    );
    std::fs::write(dir.join("read_profile.cu"), main).unwrap();
    let paths: Vec<String> = files.iter().map(|f| format!("'{}'", f.display())).collect();
    let o = nvcc_command(dir)
        .arg("-c")
        .arg(format!(
            "nvcc -arch=sm_90 -std=c++17 -o read_profile read_profile.cu && ./read_profile {}",
            paths.join(" ")
        ))
        .output()
        .unwrap();
    let out = stdout(&o);
    assert!(o.status.success(), "{out}\n{}", stderr(&o));
    out
}

/// The profile is read by the runtime's parser with the values the analysis chose.
#[test]
fn the_runtime_reads_the_written_profile() {
    let tmp = tempfile::tempdir().unwrap();
    let o = tune(
        tmp.path(),
        &["--analyse", fixture_json().to_str().unwrap(), "--out", "t"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = read_with_runtime(tmp.path(), &[tmp.path().join("t/profile.toml")]);
    // ld st st ld: stores at accesses 1 and 2.
    assert_eq!(
        out.trim(),
        "patch_size=32 sequence=ld st st ld seq_len=4 seq_bits=6 spread=2"
    );
}

/// Every profile wmfix ships (built into the binary from runtime-cu/profiles/) is one the
/// runtime's parser accepts, with the patch size and spread wmfix's own reader sees; and the
/// example of several variants (runtime-cu/profiles/examples/mix.toml) reads as two variants.
#[test]
fn the_runtime_reads_every_shipped_profile() {
    let tmp = tempfile::tempdir().unwrap();
    let shipped = wmfix::chip::PROFILE_FILES;
    let on_disk = std::fs::read_dir(repo().join("runtime-cu/profiles"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "toml")
        })
        .count();
    assert!(
        !shipped.is_empty() && shipped.len() == on_disk,
        "{shipped:?}"
    );
    let mut files = Vec::new();
    for (name, text) in shipped {
        files.push(tmp.path().join(format!("{name}.toml")));
        std::fs::write(files.last().unwrap(), text).unwrap();
    }
    files.push(repo().join("runtime-cu/profiles/examples/mix.toml"));
    let out = read_with_runtime(tmp.path(), &files);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), files.len(), "{out}");
    for ((name, text), line) in shipped.iter().zip(&lines) {
        let s = wmfix::litmus::profile::Stress::parse(text, name).unwrap();
        let want = format!("patch_size={} sequence=", s.patch_size);
        assert!(line.starts_with(&want), "{name}: {line}");
        assert!(
            line.ends_with(&format!(" spread={}", s.spread)),
            "{name}: {line}"
        );
    }
    assert_eq!(
        lines[shipped.len()],
        "patch_size=64 sequence=st st st st seq_len=4 seq_bits=f spread=5 | \
         sequence=ld st st ld seq_len=4 seq_bits=6 spread=2"
    );
}

#[test]
fn litmus_and_tune_without_a_gpu_exit_69_with_a_clear_message() {
    if std::path::Path::new("/proc/driver/nvidia/version").exists() {
        return; // a GPU machine: the commands would run
    }
    let tmp = tempfile::tempdir().unwrap();
    for args in [
        &["litmus", "mp"][..],
        &["tune", "--quick", "--out", "t"][..],
    ] {
        let o = run(tmp.path(), args);
        assert_eq!(o.status.code(), Some(69), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("needs a GPU"), "{}", stderr(&o));
    }
    let o = run(tmp.path(), &["litmus", "xy"]);
    assert_eq!(o.status.code(), Some(64));
    assert!(stderr(&o).contains("invalid value 'xy'"), "{}", stderr(&o));
    assert!(stderr(&o).contains("mp, lb, sb"), "{}", stderr(&o));
    let o = run(tmp.path(), &["litmus", "mp", "--stress-blocks", "5..3"]);
    assert_eq!(o.status.code(), Some(64));
    assert!(stderr(&o).contains("MIN <= MAX"), "{}", stderr(&o));
}

/// Sizes the engine or the runtime cannot take are refused before the GPU is looked for, so
/// they cost no GPU time (and on this machine: 64, not 69 for the missing GPU).
#[test]
fn tune_and_litmus_refuse_bad_sizes_before_opening_the_gpu() {
    let tmp = tempfile::tempdir().unwrap();
    for (args, says) in [
        (&["tune", "--max-spread", "65"][..], "--max-spread 65"),
        (&["tune", "--max-spread", "0"][..], "--max-spread 0"),
        (&["tune", "--max-sequence", "9"][..], "--max-sequence 9"),
        (&["tune", "--patch-size", "0"][..], "--patch-size 0"),
        (&["tune", "--distances", "300"][..], "--stride 256"),
        (&["tune", "--executions", "0"][..], "must be positive"),
        (&["tune", "--instances", "1000"][..], "power of two"),
        (&["litmus", "mp", "--distance", "1024"][..], "--stride 256"),
        (
            &["litmus", "mp", "--distance", "200", "--distances", "57"][..],
            "--stride 256",
        ),
        (&["litmus", "mp", "--distances", "0"][..], "at least one"),
        (
            &["litmus", "mp", "--dual", "--sync"][..],
            "--dual with --sync",
        ),
        (
            &["litmus", "mp", "--dual", "--instances", "256"][..],
            "--dual needs",
        ),
    ] {
        let o = run(tmp.path(), args);
        assert_eq!(o.status.code(), Some(64), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
        assert!(
            !tmp.path().join("wmfix-out").exists(),
            "{args:?} wrote output"
        );
    }
}

//! The test command's selection (`scripts/test-select.sh`, issue 44): a test that needs
//! Chromium or Slurm runs where that is here and is otherwise left to the runner to report as
//! skipped, never as passed; under CI=true a missing one fails the run. Run with a PATH of
//! stand-ins, so the machine's own programs do not decide.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Output;

/// The program `name` as the test's own PATH finds it.
fn on_path(name: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap();
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("no {name} on PATH"))
}

/// A folder for PATH holding `timeout` and, as stand-ins, the given programs (name, script).
fn bin(tmp: &Path, programs: &[(&str, &str)]) -> PathBuf {
    let dir = tmp.join("bin");
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(on_path("timeout"), dir.join("timeout")).unwrap();
    for (name, script) in programs {
        let p = dir.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{script}\n")).unwrap();
        let mut perms = std::fs::metadata(&p).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&p, perms).unwrap();
    }
    dir
}

/// The selection for `runner`, with only `bin` on PATH and no cluster configured.
fn select(bin: &Path, runner: &str, ci: bool, args: &[&str]) -> Output {
    let mut c = std::process::Command::new(on_path("bash"));
    c.arg(repo().join("scripts/test-select.sh"))
        .arg(runner)
        .args(args)
        .env_clear()
        .env("PATH", bin)
        .env("WMFIX_SLURM_DIR", bin.join("no-cluster"));
    if ci {
        c.env("CI", "true");
    }
    c.output().unwrap()
}

/// The commands printed (one a line) and the notes (lines starting with "# ").
fn commands(o: &Output) -> (Vec<String>, Vec<String>) {
    assert!(o.status.success(), "{}", stderr(o));
    let out = stdout(o);
    let (notes, commands): (Vec<_>, Vec<_>) = out.lines().partition(|l| l.starts_with("# "));
    let trim = |v: Vec<&str>| v.into_iter().map(|l| l.trim_end().to_string()).collect();
    (trim(commands), trim(notes))
}

const NEXTEST: &str = "cargo nextest run --cargo-profile test-fast --locked --no-fail-fast";
const CARGO: &str = "cargo test --profile test-fast --locked --no-fail-fast";
const CHROMIUM: (&str, &str) = ("chromium", "exit 0");
const SINFO_IDLE: (&str, &str) = ("sinfo", "echo idle");

#[test]
fn without_chromium_or_slurm_their_tests_are_left_ignored_and_said_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    let bin = bin(tmp.path(), &[]);
    let (run, notes) = commands(&select(&bin, "nextest", false, &[]));
    assert_eq!(
        run,
        [NEXTEST],
        "no --run-ignored: nextest counts them skipped"
    );
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(
        notes[0].starts_with("# tests/report_browser.rs: skipped")
            && notes[0].contains("no chromium on PATH")
    );
    assert!(
        notes[1].starts_with("# tests/slurm.rs: skipped") && notes[1].contains("no sinfo on PATH")
    );
    let (run, _) = commands(&select(&bin, "cargo", false, &[]));
    assert_eq!(run, [CARGO], "cargo test reports them ignored, with why");
}

#[test]
fn where_both_are_here_every_test_but_the_corpus_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let bin = bin(tmp.path(), &[CHROMIUM, SINFO_IDLE]);
    let (run, notes) = commands(&select(&bin, "nextest", false, &[]));
    let filter = r"not\ \(test\(=rewrite::matcher::tests::corpus\)\)";
    assert_eq!(run, [format!("{NEXTEST} --run-ignored all -E {filter}")]);
    assert_eq!(
        notes,
        ["# tests/report_browser.rs: runs", "# tests/slurm.rs: runs"]
    );
    let (run, _) = commands(&select(&bin, "cargo", false, &[]));
    let second = format!("{CARGO} --test report_browser --test slurm -- --ignored");
    assert_eq!(run, [CARGO.to_string(), second]);
    // Under CI=true too.
    let o = select(&bin, "nextest", true, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn with_chromium_alone_the_slurm_tests_are_filtered_out_and_said_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    let bin = bin(
        tmp.path(),
        &[CHROMIUM, ("sinfo", "echo down; echo 'drain*'")],
    );
    let (run, notes) = commands(&select(&bin, "nextest", false, &[]));
    let filter =
        r"not\ \(test\(=rewrite::matcher::tests::corpus\)\ \|\ binary_id\(wmfix::slurm\)\)";
    assert_eq!(run, [format!("{NEXTEST} --run-ignored all -E {filter}")]);
    assert!(
        notes[1].contains("no node idle, mixed or allocated: down drain*"),
        "{notes:?}"
    );
    let (run, _) = commands(&select(&bin, "cargo", false, &[]));
    let second = format!("{CARGO} --test report_browser -- --ignored");
    assert_eq!(run, [CARGO.to_string(), second]);
    // A cluster whose sinfo fails is none either.
    let bin = tmp.path().join("bin");
    std::fs::write(
        bin.join("sinfo"),
        "#!/bin/sh\necho 'cannot reach slurmctld' >&2\nexit 1\n",
    )
    .unwrap();
    let (_, notes) = commands(&select(&bin, "cargo", false, &[]));
    assert!(
        notes[1].contains("sinfo failed: cannot reach slurmctld"),
        "{notes:?}"
    );
}

#[test]
fn under_ci_a_test_that_cannot_run_fails_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let bin = bin(tmp.path(), &[SINFO_IDLE]);
    for runner in ["nextest", "cargo"] {
        let o = select(&bin, runner, true, &[]);
        assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
        assert!(
            stderr(&o).contains("CI=true and tests cannot run")
                && stderr(&o).contains("tests/report_browser.rs: no chromium on PATH")
                && !stderr(&o).contains("tests/slurm.rs"),
            "{}",
            stderr(&o)
        );
    }
}

#[test]
fn arguments_choose_the_tests_themselves() {
    let tmp = tempfile::tempdir().unwrap();
    let bin = bin(tmp.path(), &[CHROMIUM, SINFO_IDLE]);
    let (run, _) = commands(&select(&bin, "nextest", false, &["-E", "test(a b)"]));
    assert_eq!(run, [format!(r"{NEXTEST} -E test\(a\ b\)")]);
    let (run, _) = commands(&select(&bin, "cargo", false, &["--test", "slurm"]));
    assert_eq!(run, [format!("{CARGO} --test slurm")]);
}

/// Every test of a file the selection knows is ignored with the reason it needs something, and
/// every test so ignored is in a file the selection knows: none passes unrun, none is forgotten.
#[test]
fn the_tests_that_need_something_are_ignored_and_known_to_the_selection() {
    let script = std::fs::read_to_string(repo().join("scripts/test-select.sh")).unwrap();
    let known = script
        .lines()
        .find_map(|l| l.strip_prefix("groups=("))
        .and_then(|l| l.strip_suffix(')'))
        .expect("groups=(...) in test-select.sh");
    let known: Vec<&str> = known.split_whitespace().collect();
    for e in std::fs::read_dir(repo().join("tests")).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_none_or(|x| x != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.file_stem().unwrap().to_str().unwrap();
        let tests = text.matches("#[test]\n").count();
        let needs = text.matches("#[test]\n#[ignore = \"needs ").count();
        if known.contains(&name) {
            assert!(
                tests > 0 && needs == tests,
                "{name}.rs: {needs} of {tests} tests ignored as needing something"
            );
        } else {
            assert_eq!(
                needs, 0,
                "{name}.rs has tests that need something: add it to test-select.sh's groups"
            );
        }
    }
}

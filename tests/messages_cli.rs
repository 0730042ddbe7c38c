//! What wmfix says (issue 11, item 5): outcomes in words, not Rust's Debug text; in a terminal,
//! a spinner naming the build step, a bar with its ETA, and the table on a line of its own.

mod common;
use common::*;
use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;

fn standin() -> (tempfile::TempDir, std::path::PathBuf) {
    fixture("standin")
}

fn test(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    wmfix()
        .current_dir(dir.parent().unwrap())
        .args(["test", dir.to_str().unwrap(), "--out", "out"])
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

/// Debug text of the types that describe runs.
fn no_debug_text(text: &str) {
    for debug in [
        "Code(",
        "Signal(",
        "Crash (",
        "Fail (",
        "Timeout (",
        "Pass (",
    ] {
        assert!(!text.contains(debug), "Debug text {debug:?} in: {text}");
    }
}

#[test]
fn outcomes_are_said_in_words() {
    let (_tmp, dir) = standin();
    // Refused: the original fails natively, and so does the program with every fence.
    let o = test(
        &dir,
        &["--runs", "2"],
        &[
            ("STANDIN_BASELINE", "1"),
            ("STANDIN_MODE", "rate"),
            ("STANDIN_PERCENT", "100"),
        ],
    );
    assert_eq!(o.status.code(), Some(3));
    assert!(
        stderr(&o).contains("(failed its post-condition (exit code 1))"),
        "{}",
        stderr(&o)
    );
    no_debug_text(&stderr(&o));
    let o = test(&dir, &["--runs", "2"], &[("STANDIN_BASELINE", "139")]);
    assert!(
        stderr(&o)
            .contains("crashed: killed by signal 11 (SIGSEGV) (exit code 139 from the shell)"),
        "{}",
        stderr(&o)
    );
    no_debug_text(&stderr(&o));

    // A replayed run says how it and its record ended.
    let env = [("STANDIN_MODE", "cudaerr")];
    let o = test(&dir, &["--runs", "1"], &env);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = test(&dir, &["--replay", "0"], &env);
    assert!(
        stdout(&o)
            .contains("recorded: crashed with exit code 3; replayed: crashed with exit code 3"),
        "{}",
        stdout(&o)
    );
    no_debug_text(&stdout(&o));

    // A failed build.
    let cfg = std::fs::read_to_string(dir.join("wmfix.toml"))
        .unwrap()
        .replace("cp app.sh app && chmod +x app", "exit 7");
    std::fs::write(dir.join("wmfix.toml"), cfg).unwrap();
    let o = test(&dir, &[], &[]);
    assert_eq!(o.status.code(), Some(4));
    assert!(stderr(&o).contains("(exit code 7)"), "{}", stderr(&o));
    no_debug_text(&stderr(&o));
}

/// Runs wmfix with its stdout and stderr on a terminal (a pty 150 columns wide); returns what
/// it wrote there and whether it succeeded.
fn on_a_terminal(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> (String, bool) {
    let (mut master, mut slave) = (0, 0);
    let size = libc::winsize {
        ws_row: 50,
        ws_col: 150,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: openpty(3) writes two descriptors; no name buffer or termios is passed.
    let r = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &size,
        )
    };
    assert_eq!(r, 0, "openpty");
    // SAFETY: both descriptors were just opened and are owned here alone.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    let mut child = wmfix()
        .current_dir(cwd)
        .args(args)
        .envs(env.iter().copied())
        .env("TERM", "xterm")
        .stdin(std::process::Stdio::null())
        .stdout(slave.try_clone().unwrap())
        .stderr(slave)
        .spawn()
        .unwrap();
    let mut bytes = Vec::new();
    // Reading ends with EIO once the child (the last holder of the terminal) has exited.
    let _ = std::fs::File::from(master).read_to_end(&mut bytes);
    let ok = child.wait().unwrap().success();
    (String::from_utf8_lossy(&bytes).into_owned(), ok)
}

/// What a terminal shows after `text`: lines of characters, with `\r`, erase-line and cursor
/// up/down.
fn screen(text: &str) -> Vec<String> {
    let mut lines: Vec<Vec<char>> = vec![vec![]];
    let (mut row, mut col) = (0usize, 0usize);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if let Some(esc) = rest.strip_prefix("\x1b[") {
            let end = esc.find(|c: char| c.is_ascii_alphabetic()).unwrap();
            let n: usize = esc[..end].parse().unwrap_or(1);
            match &esc[end..end + 1] {
                "A" => row = row.saturating_sub(n),
                "B" => row += n,
                "K" => lines[row].clear(),
                _ => {}
            }
            rest = &esc[end + 1..];
        } else {
            match c {
                '\n' => row += 1,
                '\r' => col = 0,
                c => {
                    let line = &mut lines[row];
                    if line.len() <= col {
                        line.resize(col + 1, ' ');
                    }
                    line[col] = c;
                    col += 1;
                }
            }
            rest = &rest[c.len_utf8()..];
        }
        while lines.len() <= row {
            lines.push(vec![]);
        }
    }
    lines
        .iter()
        .map(|l| l.iter().collect::<String>().trim_end().to_string())
        .collect()
}

#[test]
fn in_a_terminal_the_bar_has_an_eta_and_the_table_a_line_of_its_own() {
    let (tmp, dir) = standin();
    let (text, _) = on_a_terminal(
        tmp.path(),
        &[
            "test",
            dir.to_str().unwrap(),
            "--out",
            "out",
            "--runs",
            "6",
            "--env",
            "sys-str+,no-str-",
        ],
        &[("STANDIN_SLEEP", "0.05")],
    );
    let lines = screen(&text);
    let shown = lines.join("\n");
    let bar = |env: &str| {
        lines
            .iter()
            .position(|l| l.trim_start().starts_with(&format!("{env} [")))
            .unwrap_or_else(|| panic!("no bar for {env}:\n{shown}"))
    };
    let (first, second) = (bar("sys-str+"), bar("no-str-"));
    assert!(first < second, "{shown}");
    for i in [first, second] {
        assert!(
            lines[i].contains("6/6") && lines[i].contains("runs/s") && lines[i].contains("ETA"),
            "{shown}"
        );
    }
    assert!(
        lines[second + 1].starts_with("env "),
        "the table does not start on its own line:\n{shown}"
    );
}

#[test]
fn a_build_shows_a_spinner_naming_its_step() {
    let (tmp, dir) = standin();
    let cfg = std::fs::read_to_string(dir.join("wmfix.toml"))
        .unwrap()
        .replace("cp app.sh app", "sleep 0.5; cp app.sh app");
    std::fs::write(dir.join("wmfix.toml"), cfg).unwrap();
    // The spinner is cleared when the build ends; what it said is in the bytes written.
    let (text, ok) = on_a_terminal(
        tmp.path(),
        &["build", dir.to_str().unwrap(), "--out", "out"],
        &[],
    );
    assert!(ok, "{text}");
    for step in [
        "building the original program",
        "building the instrumented program (0 fences)",
    ] {
        assert!(text.contains(step), "{step}: {text:?}");
    }
}

/// Help that fits a screen (issue 28): `-h` at most 25 lines a subcommand, each option on one
/// line at 100 columns; `--help` still has every option, in full.
#[test]
fn short_help_fits_a_screen_and_long_help_keeps_everything() {
    for sub in [
        "", "insert", "init", "build", "test", "reduce", "race", "apply", "cost", "tune", "litmus",
        "report",
    ] {
        let args: Vec<&str> = [sub, "-h"].into_iter().filter(|a| !a.is_empty()).collect();
        let short = wmfix().args(args).output().unwrap();
        let text = String::from_utf8_lossy(&short.stdout).to_string();
        assert!(short.status.success(), "{sub}: {text}");
        assert!(
            text.lines().count() <= 25,
            "{sub} -h is {} lines:\n{text}",
            text.lines().count()
        );
        assert!(text.lines().all(|l| l.len() <= 100), "{sub}:\n{text}");
    }
    let long = wmfix().args(["reduce", "--help"]).output().unwrap();
    let text = String::from_utf8_lossy(&long.stdout).to_string();
    for full in [
        "--rare-rate",
        "--stable-minutes",
        "--resume-from",
        "(add-back)",
    ] {
        assert!(text.contains(full), "{full}:\n{text}");
    }
    // `help -h` is help (it was exit 64), and insert's paths are shown as required, with the
    // other way to call it; each option's first sentence says what it does.
    for args in [["help", "-h"], ["help", "--help"]] {
        let o = wmfix().args(args).output().unwrap();
        let text = String::from_utf8_lossy(&o.stdout).to_string();
        assert!(
            o.status.success() && text.contains("Commands:"),
            "{args:?}: {text}"
        );
    }
    let o = wmfix().args(["insert", "-h"]).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        text.contains("wmfix insert [OPTIONS] <PATHS>...")
            && text.contains("wmfix insert --dump-tree <FILE>"),
        "{text}"
    );
    let preprocess = text
        .lines()
        .skip_while(|l| !l.contains("--preprocess"))
        .nth(1);
    assert!(
        preprocess.is_some_and(|l| l.contains("Instrument each `.cu` file as this preprocessor")),
        "{text}"
    );
}

/// Every warning `insert` prints has one form, `wmfix: warning: ` and then its place where it
/// has one: a parse error's too (it lacked the prefix), a fence with no place, a macro that may
/// access memory, the files nested too deep (issue 47). `--json` lists the texts alone.
#[test]
fn every_warning_has_one_form() {
    let tmp = tempfile::tempdir().unwrap();
    let app = tmp.path().join("app");
    std::fs::create_dir(&app).unwrap();
    std::fs::write(
        app.join("parse.cu"),
        "__global__ void k(int *a) {\n  a[0] = 1;\n  int x = ) ;\n}\n",
    )
    .unwrap();
    std::fs::write(
        app.join("macro.cu"),
        "#define LOCK(p) while (atomicCAS(p, 0, 1)) {}\n__global__ void k(int *m) {\n  LOCK(m);\n}\n",
    )
    .unwrap();
    let n = 70_000;
    std::fs::write(
        app.join("deep.cu"),
        format!(
            "__global__ void k(int *a) {{\n{}a[0] = 1;{}\n}}\n",
            "{".repeat(n),
            "}".repeat(n)
        ),
    )
    .unwrap();
    let o = wmfix()
        .current_dir(tmp.path())
        .args(["insert", "app", "--out", "out"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let lines: Vec<&str> = err.lines().collect();
    for (place, says) in [
        ("app/parse.cu:3:", "syntax error"),
        ("app/macro.cu:3:3: ", "macro `LOCK` may access memory"),
        ("app/deep.cu:2:", "nesting deeper than 65000 levels"),
    ] {
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with(&format!("wmfix: warning: {place}")) && l.contains(says)),
            "{place} {says}: {err}"
        );
    }
    assert_eq!(lines.len(), 3, "{err}");
    let o = wmfix()
        .current_dir(tmp.path())
        .args(["insert", "app", "--out", "out", "--json"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let warnings = doc["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 3, "{doc}");
    for w in warnings {
        let w = w.as_str().unwrap();
        assert!(w.starts_with("app/") && !w.contains("warning"), "{w}");
        assert!(
            err.contains(&format!("wmfix: warning: {w}\n")),
            "{w}: {err}"
        );
    }
}

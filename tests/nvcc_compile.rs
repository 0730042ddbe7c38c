//! Instrumented code compiles and links with real nvcc (13.0, `-arch=sm_90`), no GPU needed.
//! Each tree is also built uninstrumented, so a failure is the rewriter's, not the fixture's.

mod common;
use common::*;
use std::path::Path;

/// Runs a shell command with nvcc on PATH; panics with its output when it fails.
fn sh(cwd: &Path, script: &str) {
    let o = nvcc_command(cwd).arg("-c").arg(script).output().unwrap();
    assert!(
        o.status.success(),
        "`{script}` failed in {}:\n{}{}",
        cwd.display(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Instruments `src` into a temp dir; returns (temp, original copy, instrumented tree).
fn instrument(src: &Path) -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let orig = copy_tree(src, tmp.path());
    let o = run(
        tmp.path(),
        &["insert", orig.to_str().unwrap(), "--out", "out"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let tree = tmp.path().join("out/tree");
    (tmp, orig, tree)
}

/// Builds each `.cu` file of a tree on its own, linked to an executable, with extra `flags`.
fn build_each(dir: &Path, flags: &str) {
    for f in ["control.cu", "memory.cu", "templates.cu"] {
        sh(
            dir,
            &format!("nvcc -arch=sm_90 -std=c++17 -Werror all-warnings {flags} -o {f}.out {f}"),
        );
    }
}

#[test]
fn constructs_compile() {
    let (_tmp, orig, tree) = instrument(&repo().join("tests/fixtures/constructs"));
    build_each(&orig, "");
    build_each(&tree, "");
}

#[test]
fn constructs_compile_with_rdc_and_other_fence_scopes() {
    let tmp = tempfile::tempdir().unwrap();
    let orig = copy_tree(&repo().join("tests/fixtures/constructs"), tmp.path());
    for scope in ["block", "system"] {
        let out = format!("out-{scope}");
        let o = run(
            tmp.path(),
            &[
                "insert",
                orig.to_str().unwrap(),
                "--out",
                &out,
                "--fence",
                scope,
            ],
        );
        assert!(o.status.success());
        build_each(&tmp.path().join(&out).join("tree"), "-rdc=true");
    }
}

#[test]
fn header_with_device_code_compiles() {
    let (_tmp, orig, tree) = instrument(&repo().join("tests/fixtures/multi"));
    for dir in [&orig, &tree] {
        sh(dir, "nvcc -arch=sm_90 -std=c++17 -o main main.cu");
    }
}

#[test]
fn kernel_launched_from_another_unit_links() {
    let (_tmp, orig, tree) = instrument(&repo().join("tests/fixtures/two_tu"));
    for dir in [&orig, &tree] {
        sh(dir, "./build.sh");
        assert!(dir.join("two_tu").is_file() && dir.join("two_tu_rdc").is_file());
    }
}

/// The build command of a case study's wmfix.toml.
fn build_command(dir: &Path) -> String {
    let cfg: toml::Table = std::fs::read_to_string(dir.join("wmfix.toml"))
        .unwrap()
        .parse()
        .unwrap();
    cfg["build"].as_str().unwrap().to_string()
}

#[test]
fn case_studies_build_and_link() {
    let studies: Vec<_> = std::fs::read_dir(repo().join("case-studies"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("wmfix.toml").is_file())
        .collect();
    assert!(!studies.is_empty());
    for study in studies {
        let (_tmp, orig, tree) = instrument(&study);
        let build = build_command(&orig);
        sh(&orig, &build);
        sh(&tree, &build);
    }
}

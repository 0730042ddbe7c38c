//! Output-folder ownership (issue 11): wmfix deletes or renames only inside folders it marked as
//! its own, refuses a user's folder before writing anything, checks `--out` against the input
//! before the first write, and never takes an output folder (new or old) as a source.

mod common;
use common::*;
use std::path::{Path, PathBuf};

/// A user's folder that shares wmfix's names: `original/`, `tree/`, `runtime/`, `test/`, ...
fn users_folder(at: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    for (rel, text) in [
        ("original/thesis.tex", "chapter 1"),
        ("tree/oak.jpg", "leaves"),
        ("runtime/timings.csv", "1,2,3"),
        ("test.old/old.txt", "old"),
        ("test/data.txt", "data"),
        ("fences.json", "[1, 2]"),
    ] {
        let p = at.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    snapshot_bytes(at)
}

fn fences_total(out: &Path) -> u64 {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("fences.json")).unwrap()).unwrap();
    v["total"].as_u64().unwrap()
}

#[test]
fn a_users_folder_given_as_out_is_refused_and_left_as_it_was() {
    let tmp = tempfile::tempdir().unwrap();
    let app = standin_with_kernel(tmp.path());
    let other = tmp.path().join("other");
    let before = users_folder(&other);
    for args in [
        vec!["test", "standin", "--out", "other", "--runs", "2"],
        vec!["build", "standin", "--out", "other"],
        vec!["reduce", "standin", "--out", "other", "--hours", "0.01"],
        vec!["cost", "standin", "--out", "other", "--fences", "0"],
        vec!["insert", "standin/kernel.cu", "--out", "other"],
    ] {
        let o = run(tmp.path(), &args);
        assert_eq!(o.status.code(), Some(73), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("not made by wmfix") && stderr(&o).contains("nothing was written"),
            "{args:?}: {}",
            stderr(&o)
        );
        assert_eq!(
            snapshot_bytes(&other),
            before,
            "{args:?} touched the folder"
        );
    }
    assert!(!app.join("wmfix-out").exists());
}

#[test]
fn out_around_the_input_is_refused_before_anything_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let app = standin_with_kernel(tmp.path());
    // In the app's parent, beside a folder of the user's named `original/`.
    std::fs::create_dir(tmp.path().join("original")).unwrap();
    std::fs::write(tmp.path().join("original/mine.txt"), "mine").unwrap();
    let parent = snapshot_bytes(tmp.path());
    let o = run(tmp.path(), &["build", "standin", "--out", "."]);
    assert_eq!(o.status.code(), Some(65), "{}", stderr(&o));
    assert!(stderr(&o).contains("contains the input"), "{}", stderr(&o));
    assert_eq!(snapshot_bytes(tmp.path()), parent, "the parent was touched");
    assert!(!tmp.path().join(".wmfix-lock").exists());

    // Inside the app.
    for args in [
        vec!["test", ".", "--out", ".", "--runs", "2"],
        vec!["reduce", ".", "--out", "."],
        vec!["build", ".", "--out", "sub/.."],
    ] {
        let o = run(&app, &args);
        assert_eq!(o.status.code(), Some(65), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(&format!(
                "contains the input {}",
                app.canonicalize().unwrap().display()
            )),
            "{args:?}: {}",
            stderr(&o)
        );
        assert_eq!(
            snapshot_bytes(tmp.path()),
            parent,
            "{args:?} wrote something"
        );
        let names: Vec<_> = std::fs::read_dir(&app)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 3, "{args:?} left files in the app: {names:?}");
    }
}

#[test]
fn output_folders_old_and_new_are_never_sources() {
    let tmp = tempfile::tempdir().unwrap();
    let app = standin_with_kernel(tmp.path());
    // The default output folder, inside the app.
    let o = run(&app, &["build", "."]);
    assert!(o.status.success(), "{}", stderr(&o));
    let own = fences_total(&app.join("wmfix-out"));
    assert_eq!(own, 2);
    // Another --out: the marked folder inside the app is not instrumented again.
    let o = run(&app, &["build", ".", "--out", "../elsewhere"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(fences_total(&tmp.path().join("elsewhere")), own);
    assert!(!tmp.path().join("elsewhere/tree/wmfix-out").exists());

    // A folder an older wmfix made (the same layout, no marker).
    std::fs::rename(app.join("wmfix-out"), app.join("old-out")).unwrap();
    std::fs::remove_file(app.join("old-out/.wmfix-output")).unwrap();
    let o = run(&app, &["build", ".", "--out", "../elsewhere"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(fences_total(&tmp.path().join("elsewhere")), own);
    assert!(!tmp.path().join("elsewhere/tree/old-out").exists());

    // Naming an output folder as the input is refused.
    let o = run(
        tmp.path(),
        &["insert", "standin/old-out/tree", "--out", "x"],
    );
    assert_eq!(o.status.code(), Some(65), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("never taken as a source"),
        "{}",
        stderr(&o)
    );
    assert!(!tmp.path().join("x").exists());
}

#[test]
fn an_output_folder_of_an_older_wmfix_is_reused_and_marked() {
    let tmp = tempfile::tempdir().unwrap();
    let app = standin_with_kernel(tmp.path());
    let o = run(&app, &["build", "."]);
    assert!(o.status.success(), "{}", stderr(&o));
    // As an earlier wmfix left it: no marker.
    let out = app.join("wmfix-out");
    std::fs::remove_file(out.join(".wmfix-output")).unwrap();
    let o = run(&app, &["build", "."]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("made by an earlier wmfix"),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).contains("(up to date)"), "{}", stdout(&o));
    assert!(out.join(".wmfix-output").is_file());
    // With one file of the user's in it, it is no longer wmfix's alone: refused.
    std::fs::remove_file(out.join(".wmfix-output")).unwrap();
    std::fs::write(out.join("notes.txt"), "mine").unwrap();
    let before = snapshot_bytes(&out);
    let o = run(&app, &["build", "."]);
    assert_eq!(o.status.code(), Some(73), "{}", stderr(&o));
    assert_eq!(snapshot_bytes(&out), before);
}

/// The output folder defaults to the application's `wmfix-out`, wherever wmfix runs from
/// (issue 28: it was `./wmfix-out` of the current folder).
#[test]
fn the_default_output_folder_is_beside_the_application() {
    let tmp = tempfile::tempdir().unwrap();
    let app = standin_with_kernel(tmp.path());
    let o = run(tmp.path(), &["build", "standin"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(app.join("wmfix-out/.wmfix-output").is_file());
    assert!(!tmp.path().join("wmfix-out").exists());
    let o = run(tmp.path(), &["build", "standin", "--out", "here"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(tmp.path().join("here/.wmfix-output").is_file());
}

/// An application of `n` kernels and as many other files, so that `insert` takes long enough
/// to be stopped part way; its build leaves `built.txt` in the folder it builds.
fn many_kernels(at: &Path, n: usize) -> PathBuf {
    let app = at.join("app");
    std::fs::create_dir_all(&app).unwrap();
    std::fs::write(
        app.join("wmfix.toml"),
        "build = \"touch built.txt\"\nrun = \"true\"\ngpu = false\n",
    )
    .unwrap();
    for i in 0..n {
        let kernel = format!("__global__ void k{i}(int *a) {{ a[{i}] = {i}; a[0] += a[1]; }}\n");
        std::fs::write(app.join(format!("k{i}.cu")), kernel).unwrap();
        std::fs::write(app.join(format!("notes{i}.txt")), format!("{i}\n")).unwrap();
    }
    app
}

/// What a build reads from an output folder: the instrumented tree, runtime and fence list
/// (a missing one is missing from the list).
fn output(out: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut all: Vec<_> = ["tree", "runtime", "fences.json"]
        .iter()
        .flat_map(|part| walkdir::WalkDir::new(out.join(part)).into_iter().flatten())
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            let rel = e.path().strip_prefix(out).unwrap().to_path_buf();
            (rel, std::fs::read(e.path()).unwrap())
        })
        .collect();
    all.sort();
    all
}

/// The paths where `now` differs from each of two outputs, a few of each.
fn differences(
    now: &[(PathBuf, Vec<u8>)],
    a: &[(PathBuf, Vec<u8>)],
    b: &[(PathBuf, Vec<u8>)],
) -> String {
    let differ = |x: &[(PathBuf, Vec<u8>)]| -> Vec<String> {
        let x: std::collections::BTreeMap<_, _> = x.iter().cloned().collect();
        let y: std::collections::BTreeMap<_, _> = now.iter().cloned().collect();
        let keys: std::collections::BTreeSet<_> = x.keys().chain(y.keys()).collect();
        let odd = keys.into_iter().filter(|k| x.get(*k) != y.get(*k));
        odd.take(3).map(|k| k.display().to_string()).collect()
    };
    format!("{:?} from one, {:?} from the other", differ(a), differ(b))
}

/// Issue 44: ctrl-c while `insert` rewrote a folder left the previous `fences.json` beside a
/// half-written `tree/` and no `runtime/`, marked nowhere; and a folder a build had made kept
/// its build stamp, so the next `build` took the new, unbuilt tree as built. Now the folder is
/// always one whole output or marked incomplete, and `build` builds again after an insert.
#[test]
fn an_insert_stopped_part_way_leaves_a_whole_output_and_build_builds_again() {
    let tmp = tempfile::tempdir().unwrap();
    many_kernels(tmp.path(), 1500);
    let insert = ["insert", "app", "--out", "out", "--fence", "system"];
    let t0 = std::time::Instant::now();
    let o = run(
        tmp.path(),
        &["insert", "app", "--out", "new", "--fence", "system"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let whole = t0.elapsed();
    let new = output(&tmp.path().join("new"));
    let o = run(tmp.path(), &["build", "app", "--out", "out"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = tmp.path().join("out");
    let built = output(&out);
    assert!(out.join("tree/built.txt").is_file());
    let marker = out.join(".wmfix-incomplete");
    let mut stopped = 0;
    let trials = 12;
    for i in 0..trials {
        let child = wmfix()
            .current_dir(tmp.path())
            .args(insert)
            .spawn()
            .unwrap();
        std::thread::sleep(whole * i / trials);
        // SAFETY: kill(2) sends SIGINT to a process this test started.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let o = child.wait_with_output().unwrap();
        stopped += usize::from(!o.status.success());
        let now = output(&out);
        assert!(
            marker.is_file() || now == built || now == new,
            "trial {i}: ctrl-c after {:?} left a mix of two outputs, not marked incomplete: {}",
            whole * i / trials,
            differences(&now, &built, &new)
        );
    }
    assert!(
        stopped > 0,
        "no insert was stopped: the test proves nothing"
    );
    // A whole insert into the built folder: the build must not be taken as up to date.
    let o = run(tmp.path(), &insert);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!marker.exists());
    let o = run(tmp.path(), &["build", "app", "--out", "out"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(output(&out), built, "build used the insert's unbuilt tree");
}

/// A folder whose switch did not finish (the marker `insert` writes first and removes last) is
/// instrumented and built again by `build`, which says so.
#[test]
fn build_redoes_a_folder_marked_incomplete() {
    let tmp = tempfile::tempdir().unwrap();
    many_kernels(tmp.path(), 2);
    let o = run(tmp.path(), &["build", "app", "--out", "out"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = tmp.path().join("out");
    let built = output(&out);
    std::fs::remove_dir_all(out.join("runtime")).unwrap();
    std::fs::write(out.join(".wmfix-incomplete"), "").unwrap();
    let o = run(tmp.path(), &["build", "app", "--out", "out"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("an insert stopped part way left"),
        "{}",
        stderr(&o)
    );
    assert_eq!(output(&out), built);
    assert!(!out.join(".wmfix-incomplete").exists());
}

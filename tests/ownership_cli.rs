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

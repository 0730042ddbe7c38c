use super::*;

fn touch(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

#[test]
fn a_second_lock_on_the_same_directory_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let first = OutDir::open(&tmp.path().join("o"), &[]).unwrap();
    assert!(first.locked());
    let e = OutDir::open(&tmp.path().join("o"), &[]).err().unwrap();
    assert_eq!(exit_code::code_of(&e), exit_code::BUSY);
    assert!(e.to_string().contains("another wmfix"), "{e}");
    drop(first);
    OutDir::open(&tmp.path().join("o"), &[]).unwrap();
}

#[test]
fn a_new_or_empty_folder_is_marked_a_users_folder_is_refused_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let new = tmp.path().join("a/b");
    let o = OutDir::open(&new, &[]).unwrap();
    assert!(new.join(MARKER).is_file() && is_output(&new));
    assert_eq!(o.tree(), new.canonicalize().unwrap().join("tree"));
    let users = tmp.path().join("users");
    touch(&users.join("tree/notes.txt"), "mine");
    touch(&users.join("test/data.csv"), "mine");
    let e = OutDir::open(&users, &[]).err().unwrap();
    assert_eq!(exit_code::code_of(&e), exit_code::CANT_WRITE);
    assert!(e.to_string().contains("not made by wmfix"), "{e}");
    assert!(!users.join(MARKER).exists() && !users.join(LOCK).exists());
    assert!(!is_output(&users));
}

#[test]
fn an_output_folder_of_an_older_wmfix_is_recognised_by_its_signature() {
    let tmp = tempfile::tempdir().unwrap();
    let old = tmp.path().join("old");
    touch(&old.join("tree/k.cu"), "");
    touch(&old.join("runtime/wmfix.cuh"), "");
    touch(
        &old.join(FENCES),
        r#"{"version": 1, "fence_scope": "device", "root": "/x", "total": 0, "fences": []}"#,
    );
    assert!(made_by_old_wmfix(&old) && is_output(&old));
    OutDir::open(&old, &[]).unwrap();
    assert!(old.join(MARKER).is_file());
    // The same names without a signature, or with one more entry, are the user's.
    let lookalike = tmp.path().join("lookalike");
    touch(&lookalike.join("tree/k.cu"), "");
    touch(&lookalike.join(FENCES), r#"{"fences": []}"#);
    touch(&lookalike.join(STAMP), "not a stamp\n");
    assert!(!made_by_old_wmfix(&lookalike));
    let extra = tmp.path().join("extra");
    touch(&extra.join(STAMP), "0123456789abcdef\n");
    assert!(made_by_old_wmfix(&extra));
    touch(&extra.join("thesis.tex"), "");
    assert!(!made_by_old_wmfix(&extra));
}

#[test]
fn old_kernel_caches_and_tune_folders_are_recognised_too() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("wmfix-out");
    let cache = out.join("cache");
    touch(
        &cache.join("litmus.cu"),
        "// wmfix litmus engine: MP, LB and SB\n",
    );
    touch(&cache.join("litmus-0123456789abcdef-sm_90.cubin"), "");
    assert!(made_by_old_wmfix(&cache) && is_output(&cache));
    // The folder that holds only that cache is wmfix's too.
    assert!(made_by_old_wmfix(&out));
    let tune = tmp.path().join("tune");
    touch(&tune.join("raw.json"), r#"{"format": 1, "params": {}}"#);
    touch(&tune.join("nvidia-h200.toml"), "");
    touch(&tune.join("patches.svg"), "");
    assert!(made_by_old_wmfix(&tune));
    // The same names without wmfix's signature are the user's.
    let mine = tmp.path().join("mine");
    touch(&mine.join("litmus.cu"), "__global__ void mp() {}\n");
    touch(&mine.join("litmus-1.cubin"), "");
    assert!(!made_by_old_wmfix(&mine) && !is_output(&mine));
    let notes = tmp.path().join("notes");
    touch(&notes.join("raw.json"), "[1, 2]");
    touch(&notes.join("settings.toml"), "");
    assert!(!made_by_old_wmfix(&notes));
    assert_eq!(cubin_name("litmus-0123456789abcdef-sm_90.tmp"), Some(true));
    assert_eq!(cubin_name("litmus-0123456789abcdef-sm_.cubin"), None);
}

#[test]
fn a_folder_holding_the_input_is_refused_before_it_is_made() {
    let tmp = tempfile::tempdir().unwrap();
    let app = tmp.path().join("app");
    std::fs::create_dir(&app).unwrap();
    let e = OutDir::open(tmp.path(), std::slice::from_ref(&app))
        .err()
        .unwrap();
    assert_eq!(exit_code::code_of(&e), exit_code::BAD_INPUT);
    let e = OutDir::open(&app.join("sub/.."), std::slice::from_ref(&app))
        .err()
        .unwrap();
    assert_eq!(exit_code::code_of(&e), exit_code::BAD_INPUT);
    assert!(!tmp.path().join(MARKER).exists(), "{e}");
    assert!(!app.join(MARKER).exists(), "{e}");
}

#[test]
fn nothing_outside_the_folder_is_deleted() {
    let tmp = tempfile::tempdir().unwrap();
    let o = OutDir::open(&tmp.path().join("o"), &[]).unwrap();
    let outside = tmp.path().join("keep");
    touch(&outside, "x");
    for p in [
        outside.clone(),
        o.root().join("../keep"),
        o.root().to_path_buf(),
    ] {
        let e = o.remove(&p).unwrap_err();
        assert_eq!(exit_code::code_of(&e), exit_code::INTERNAL);
    }
    assert!(outside.exists());
    touch(&o.tree().join("a/b"), "x");
    o.remove(&o.tree()).unwrap();
    assert!(!o.tree().exists());
    o.remove(&o.tree()).unwrap();
}

#[test]
fn existing_wants_the_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let e = OutDir::existing(&tmp.path().join("none"), &[])
        .err()
        .unwrap();
    assert_eq!(exit_code::code_of(&e), exit_code::NO_INPUT);
    assert!(!tmp.path().join("none").exists());
}

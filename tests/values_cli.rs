//! Bad option values and config values (issue 11, item 4): refused with exit 64 naming the
//! option, or exit 78 naming wmfix.toml:LINE, before anything runs; never a panic.

mod common;
use common::*;

#[test]
fn bad_option_values_exit_64_naming_the_option() {
    let tmp = tempfile::tempdir().unwrap();
    standin_with_kernel(tmp.path());
    let cases: &[(&[&str], &str)] = &[
        (&["test", "--minutes", "nan"], "--minutes"),
        (&["test", "--minutes=-1"], "--minutes"),
        (&["test", "--minutes", "0"], "--minutes"),
        (&["test", "--minutes", "inf"], "--minutes"),
        (&["test", "--runs", "0"], "--runs"),
        (&["test", "--runs", "-1"], "--runs"),
        (&["test", "--jobs", "-3"], "--jobs"),
        (
            &["test", "--seed", "-1"],
            "expected a whole number from 0 to",
        ),
        (&["test", "--replay", "-2"], "--replay"),
        (&["reduce", "--seed", "1.5"], "--seed"),
        (&["cost", "--warmup", "abc"], "--warmup"),
        (&["test", "--jobs", "0"], "--jobs"),
        (&["test", "--gpus", "abc"], "--gpus"),
        (&["test", "--gpus", "0,,1"], "--gpus"),
        (&["test", "--fences", "1-x"], "--fences"),
        (&["test", "--fences", "0-99999999999"], "--fences"),
        (&["reduce", "--hours", "nan"], "--hours"),
        (&["reduce", "--hours", "0"], "--hours"),
        (&["reduce", "--hours=-2"], "--hours"),
        (&["reduce", "--iterations", "0"], "--iterations"),
        (&["reduce", "--stable-minutes", "nan"], "--stable-minutes"),
        (&["reduce", "--confidence", "1"], "--confidence"),
        (&["reduce", "--jobs", "0"], "--jobs"),
        (&["cost", "--rounds", "0"], "--rounds"),
        (&["cost", "--fences", "abc"], "--fences"),
        (&["insert", "--macro", "1X=__device__"], "--macro"),
        (&["insert", "--macro", "NO_EXPANSION"], "--macro"),
    ];
    for (args, option) in cases {
        let mut all = vec![args[0], "standin", "--out", "out"];
        all.extend_from_slice(&args[1..]);
        let o = run(tmp.path(), &all);
        assert_eq!(o.status.code(), Some(64), "{all:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(option), "{all:?}: {}", stderr(&o));
        assert!(!tmp.path().join("out").exists(), "{all:?} wrote something");
    }
}

#[test]
fn counts_out_of_range_are_refused_in_words_naming_the_range() {
    let tmp = tempfile::tempdir().unwrap();
    standin_with_kernel(tmp.path());
    for value in ["0", "-1", "abc"] {
        let o = run(tmp.path(), &["test", "standin", "--runs", value]);
        assert_eq!(o.status.code(), Some(64), "{value}: {}", stderr(&o));
        let want = format!("expected a whole number of at least 1, not `{value}`");
        assert!(stderr(&o).contains(&want), "{value}: {}", stderr(&o));
        assert!(!stderr(&o).contains("tip:"), "{value}: {}", stderr(&o));
    }
}

#[test]
fn fence_ids_the_program_does_not_have_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    standin_with_kernel(tmp.path());
    for args in [
        vec!["test", "standin", "--out", "out", "--fences", "0,5"],
        vec!["cost", "standin", "--out", "out", "--fences", "5"],
    ] {
        let o = run(tmp.path(), &args);
        assert_eq!(o.status.code(), Some(64), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("--fences: no fence 5; the program has 2 (0 to 1)"),
            "{args:?}: {}",
            stderr(&o)
        );
        assert!(
            !tmp.path().join("out/test/runs.jsonl").exists(),
            "{args:?} ran"
        );
    }
}

#[test]
fn empty_commands_and_sources_outside_the_app_exit_78_with_their_line() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = standin_with_kernel(tmp.path());
    std::fs::create_dir(tmp.path().join("outside")).unwrap();
    std::fs::write(tmp.path().join("outside/k.cu"), "__global__ void k() {}\n").unwrap();
    let base = "run = \"./app\"\nbuild = \"cp app.sh app\"\ngpu = false\n";
    let cases = [
        (
            base.replace("build = \"cp app.sh app\"", "build = \"\""),
            2,
            "`build` is empty",
        ),
        (
            base.replace("run = \"./app\"", "run = \" \""),
            1,
            "`run` is empty",
        ),
        (
            format!("{base}sources = [\"../outside/k.cu\"]\n"),
            4,
            "source `../outside/k.cu` is outside the application's folder",
        ),
        (
            format!("{base}\nsources = [\n  \"kernel.cu\",\n  \"/etc\",\n]\n"),
            7,
            "source `/etc` is outside the application's folder",
        ),
    ];
    for (config, line, what) in cases {
        std::fs::write(dir.join("wmfix.toml"), &config).unwrap();
        for cmd in ["build", "test", "reduce"] {
            let o = run(tmp.path(), &[cmd, "standin", "--out", "out"]);
            assert_eq!(o.status.code(), Some(78), "{cmd} {config}: {}", stderr(&o));
            assert!(
                stderr(&o).contains(&format!("wmfix.toml:{line}: {what}")),
                "{cmd} {config}: {}",
                stderr(&o)
            );
            assert!(!tmp.path().join("out").exists());
        }
    }
}

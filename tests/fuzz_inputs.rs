//! Random inputs (issue 11, item 7): random bytes and CUDA-like token soup as sources, random
//! option values for `wmfix insert`, and random `wmfix.toml` texts for the config loader. Each
//! case must end in success or a documented refusal: no panic, no exit 70 (internal error), no
//! death by a signal, and the inputs byte for byte as they were. Seeded (splitmix64), so a
//! failure names the seed that reproduces it; `WMFIX_FUZZ_CASES=N` runs more cases than the
//! default, which is kept small for CI (a few seconds).

mod common;
use common::*;
use std::path::{Path, PathBuf};

fn cases(default: usize) -> usize {
    std::env::var("WMFIX_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Pieces of CUDA and of what breaks parsers: unbalanced brackets, open comments and strings,
/// preprocessor lines, NUL, non-ASCII.
const TOKENS: &[&str] = &[
    "__global__",
    "__device__",
    "__shared__",
    "void",
    "int",
    "float",
    "k",
    "a",
    "b",
    "i",
    "(",
    ")",
    "{",
    "}",
    "[",
    "]",
    ";",
    ",",
    "=",
    "+",
    "*",
    "&",
    "->",
    ".",
    "<<<",
    ">>>",
    "atomicAdd(",
    "atomicCAS(",
    "threadIdx.x",
    "blockIdx.x",
    "__syncthreads();",
    "__threadfence();",
    "if",
    "else",
    "for",
    "while",
    "do",
    "return",
    "switch",
    "case 1:",
    "#define M(x) x",
    "#pragma unroll",
    "#include \"k.cuh\"",
    "#if 0",
    "#endif",
    "/*",
    "*/",
    "//",
    "\"",
    "'",
    "\\",
    "\n",
    " ",
    "\t",
    "\0",
    "é",
    "∀",
    "0x1p3",
    "1e9",
    "template<int N>",
    "[=] __device__ (int x) {",
    "::",
    "asm volatile(\"membar.gl;\");",
];

/// A file's bytes: random bytes (often not UTF-8), or a soup of tokens.
fn contents(r: &mut Rng) -> Vec<u8> {
    let n = r.below(3000);
    match r.below(3) {
        0 => (0..n).map(|_| r.next() as u8).collect(),
        1 => {
            let mut s = String::new();
            while s.len() < n {
                s += r.pick(TOKENS);
                s += if r.below(4) == 0 { "\n" } else { " " };
            }
            s.into_bytes()
        }
        // Valid-looking code with one random byte flipped.
        _ => {
            let mut b = b"__global__ void k(int *a, int *b) {\n  int i = threadIdx.x;\n  if (a[i]) { atomicAdd(&b[0], 1); }\n  while (atomicCAS(a, 0, 1) != 0) ;\n  b[i] = a[i] + 1;\n}\n".to_vec();
            let at = r.below(b.len());
            b[at] = r.next() as u8;
            b
        }
    }
}

/// Every file under `root` but those under `skip`, with its bytes.
fn snapshot_except(root: &Path, skip: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    snapshot_bytes(root)
        .into_iter()
        .filter(|(p, _)| !p.starts_with(skip))
        .collect()
}

/// The paths whose bytes differ between two snapshots, or that are in only one.
fn changed(a: &[(PathBuf, Vec<u8>)], b: &[(PathBuf, Vec<u8>)]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = a
        .iter()
        .filter(|x| !b.contains(x))
        .chain(b.iter().filter(|x| !a.contains(x)))
        .map(|(p, _)| p.clone())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Exit codes a refusal may have (README): bad usage, bad input, missing input, cannot write.
const DOCUMENTED: &[i32] = &[0, 64, 65, 66, 73];

fn check(o: &std::process::Output, what: &str) {
    let code = o.status.code();
    assert!(
        code.is_some_and(|c| DOCUMENTED.contains(&c)),
        "{what}: exit {:?}\n{}",
        o.status,
        stderr(o)
    );
    assert!(!stderr(o).contains("panicked"), "{what}: {}", stderr(o));
}

#[test]
fn insert_survives_random_sources_and_option_values() {
    let names = [
        "a.cu",
        "b.cuh",
        "c.h",
        "d.hpp",
        "sub/e.cu",
        "sub/deep/f.inl",
        "g.txt",
        "h.cc",
    ];
    let fences = [
        "block",
        "device",
        "system",
        "",
        "gpu",
        "DEVICE",
        "device,block",
    ];
    let on_error = ["fail", "warn", "skip", "", "abort", "WARN"];
    let outs = [
        "out",
        "in/out",
        ".",
        "in",
        "in/a.cu",
        "out/../out",
        "new/deeper",
    ];
    for case in 0..cases(40) {
        let seed = 0xf022_0000 + case as u64;
        let mut r = Rng(seed);
        let tmp = tempfile::tempdir().unwrap();
        let input = tmp.path().join("in");
        std::fs::create_dir(&input).unwrap();
        for _ in 0..1 + r.below(4) {
            let p = input.join(r.pick(&names));
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, contents(&mut r)).unwrap();
        }
        let out = r.pick(&outs);
        let mut args: Vec<String> = vec!["insert".into()];
        args.push(if r.below(4) == 0 {
            "in/a.cu".into()
        } else {
            "in".into()
        });
        args.extend(["--out".into(), out.to_string()]);
        if r.below(2) == 0 {
            args.extend(["--fence".into(), r.pick(&fences).to_string()]);
        }
        if r.below(2) == 0 {
            args.extend(["--on-parse-error".into(), r.pick(&on_error).to_string()]);
        }
        if r.below(3) == 0 {
            args.push("--json".into());
        }
        if r.below(3) == 0 {
            args.push("--stats".into());
        }
        // An output folder inside the input is allowed (and skipped as a source).
        let skip = tmp.path().join(out);
        let before = snapshot_except(&input, &skip);
        let o = wmfix()
            .current_dir(tmp.path())
            .args(&args)
            .output()
            .unwrap();
        let what = format!("seed {seed:#x}: wmfix {}", args.join(" "));
        check(&o, &what);
        let after = snapshot_except(&input, &skip);
        let diff = changed(&before, &after);
        assert!(diff.is_empty(), "{what}: the input changed: {diff:?}");
        if o.status.success() && args.contains(&"--json".to_string()) {
            let doc: wmfix::cmd::insert::InsertJson = serde_json::from_slice(&o.stdout)
                .unwrap_or_else(|e| panic!("{what}: stdout is not the JSON document: {e}"));
            assert!(doc.fences_json.is_file(), "{what}");
        }
    }
}

/// Keys of wmfix.toml and values of every TOML type, sensible and not.
fn config_text(r: &mut Rng) -> String {
    if r.below(5) == 0 {
        return String::from_utf8_lossy(&contents(r)).into_owned();
    }
    let keys = [
        "build",
        "run",
        "sources",
        "timeout_s",
        "check",
        "crash_exit_codes",
        "gpu",
        "runs",
    ];
    let values = [
        "\"true\"",
        "\"\"",
        "\"  \"",
        "\"exit 3\"",
        "[\".\"]",
        "[\"../x\"]",
        "[\"/etc\"]",
        "[\"sub\"]",
        "[\"nope\"]",
        "[\"a\\u0000b\"]",
        "[]",
        "[1, 2]",
        "30",
        "0",
        "-1",
        "nan",
        "inf",
        "1e300",
        "0.5",
        "true",
        "false",
        "{ a = 1 }",
        "\"\\uD800\"",
        "'''x'''",
        "1979-05-27",
        "[[1]]",
    ];
    let mut text = String::new();
    for _ in 0..r.below(8) {
        let line = match r.below(10) {
            0 => format!("[{}]", r.pick(&keys)),
            1 => r.pick(TOKENS).to_string(),
            _ => format!("{} = {}", r.pick(&keys), r.pick(&values)),
        };
        text += &line;
        text.push('\n');
    }
    text
}

#[test]
fn the_config_loader_survives_random_configs() {
    for case in 0..cases(400) {
        let seed = 0xc0f1_0000 + case as u64;
        let mut r = Rng(seed);
        let tmp = tempfile::tempdir().unwrap();
        let app = tmp.path().join("app");
        std::fs::create_dir_all(app.join("sub")).unwrap();
        std::fs::write(app.join("sub/k.cu"), "__global__ void k() {}\n").unwrap();
        let text = config_text(&mut r);
        std::fs::write(app.join("wmfix.toml"), &text).unwrap();
        let before = snapshot_bytes(tmp.path());
        let what = format!("seed {seed:#x}: wmfix.toml\n{text}");
        let loaded = std::panic::catch_unwind(|| wmfix::app::config::App::load(&app))
            .unwrap_or_else(|_| panic!("{what}: panicked"));
        match loaded {
            Ok(a) => {
                let c = &a.config;
                assert!(
                    !c.build.trim().is_empty() && !c.run.trim().is_empty(),
                    "{what}"
                );
                assert!(c.timeout_s > 0.0 && c.timeout_s <= 1e10, "{what}");
                for s in &c.sources {
                    assert!(a.root.join(s).canonicalize().unwrap().starts_with(&a.root));
                }
            }
            Err(e) => {
                let code = wmfix::exit_code::code_of(&e);
                assert_eq!(code, wmfix::exit_code::CONFIG, "{what}: {e:#}");
                assert!(format!("{e}").contains("wmfix.toml"), "{what}: {e:#}");
            }
        }
        let diff = changed(&before, &snapshot_bytes(tmp.path()));
        assert!(diff.is_empty(), "{what}: files changed: {diff:?}");
    }
    // A few through the binary: `build` refuses before it runs anything, or builds with the
    // harmless command the config may hold ("true", "exit 3").
    for case in 0..cases(400) / 20 {
        let seed = 0xc0f2_0000 + case as u64;
        let mut r = Rng(seed);
        let tmp = tempfile::tempdir().unwrap();
        let app = tmp.path().join("app");
        std::fs::create_dir_all(app.join("sub")).unwrap();
        std::fs::write(
            app.join("sub/k.cu"),
            "__global__ void k(int *a) { a[0] = 1; }\n",
        )
        .unwrap();
        let text = config_text(&mut r);
        std::fs::write(app.join("wmfix.toml"), &text).unwrap();
        let before = snapshot_bytes(&app);
        let o = run(tmp.path(), &["build", "app", "--out", "out"]);
        let what = format!("seed {seed:#x}: wmfix.toml\n{text}");
        let code = o.status.code();
        assert!(
            code.is_some_and(|c| [0, 4, 78].contains(&c)),
            "{what}: exit {:?}\n{}",
            o.status,
            stderr(&o)
        );
        assert!(!stderr(&o).contains("panicked"), "{what}: {}", stderr(&o));
        let diff = changed(&before, &snapshot_bytes(&app));
        assert!(diff.is_empty(), "{what}: the app changed: {diff:?}");
    }
}

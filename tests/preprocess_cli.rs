//! `insert --preprocess`: each `.cu` file instrumented as its compiler front end sees it, so
//! device functions declared through a macro of another header get fences; fences map back
//! to file:line through the line markers; library headers' fences are listed as findings; the
//! instrumented translation unit builds with nvcc; `reduce` and `apply` patch the user's files
//! only, a library header's kept fences being findings for that library.

mod common;
use common::*;

/// `wmfix ARGS` run through a shell in `cwd` with nvcc on PATH (not yet run: add env, output).
fn wmfix_sh(cwd: &std::path::Path, args: &str) -> std::process::Command {
    let mut c = nvcc_command(cwd);
    c.args(["-c", &format!("{} {args}", env!("CARGO_BIN_EXE_wmfix"))]);
    c
}

/// `tmp/app/`, with `qual.h`: a macro that declares device functions.
fn app_with_macro_header(tmp: &std::path::Path) -> std::path::PathBuf {
    let app = tmp.join("app");
    std::fs::create_dir_all(&app).unwrap();
    std::fs::write(
        app.join("qual.h"),
        "#define DEVFN __device__ __forceinline__\n",
    )
    .unwrap();
    app
}

/// `insert INPUT --out out --preprocess COMMAND --json` in `cwd`, which must succeed: its summary.
fn insert_preprocessed(cwd: &std::path::Path, input: &str, command: &str) -> serde_json::Value {
    let args = [
        "insert",
        input,
        "--out",
        "out",
        "--preprocess",
        command,
        "--json",
    ];
    let o = run(cwd, &args);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn macro_declared_device_functions_and_library_headers_are_instrumented() {
    let tmp = tempfile::tempdir().unwrap();
    let app = app_with_macro_header(tmp.path());
    let lib = tmp.path().join("lib/include/mylib");
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::write(
        lib.join("count.cuh"),
        "#pragma once\nnamespace mylib {\n__device__ inline int bump(int *c) {\n  return atomicAdd(c, 1);\n}\n}\n",
    )
    .unwrap();
    std::fs::write(
        app.join("k.cu"),
        "#include <cstdio>\n#include \"qual.h\"\n#include <mylib/count.cuh>\nDEVFN void f(int *a) { a[threadIdx.x] = 1; }\n__global__ void k(int *a) { f(a); mylib::bump(a); }\nint main() {\n  int *a = nullptr;\n  k<<<1, 32>>>(a);\n  printf(\"ok\\n\");\n  return 0;\n}\n",
    )
    .unwrap();
    let nvcc = nvcc();
    let command = format!(
        "{} -E -x cu -arch=sm_90 -isystem ../lib/include",
        nvcc.display()
    );
    let summary = insert_preprocessed(tmp.path(), "app", &command);
    let list: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("out/fences.json")).unwrap())
            .unwrap();
    let at: Vec<String> = list["fences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{}:{} {}",
                f["file"].as_str().unwrap(),
                f["line"],
                f["function"].as_str().unwrap()
            )
        })
        .collect();
    // `f` is declared through DEVFN, a macro of qual.h: today's text-only rewriter misses it.
    assert!(at.contains(&"k.cu:4 f".to_string()), "{at:?}");
    assert!(at.contains(&"mylib/count.cuh:4 bump".to_string()), "{at:?}");
    assert_eq!(
        summary["library_fences"],
        serde_json::json!(["mylib/count.cuh:4 (fence 0)"])
    );
    // The edits are written back into copies of the original files: k.cu as the user wrote it
    // (not the preprocessed text) and the library header in the include overlay, which the
    // build finds first through CPATH; the original header is untouched.
    let tree = tmp.path().join("out/tree");
    let k = std::fs::read_to_string(tree.join("k.cu")).unwrap();
    assert!(
        k.contains("#include <mylib/count.cuh>\nDEVFN void f"),
        "{k}"
    );
    assert!(k.contains("WMFIX_FENCE"), "{k}");
    let copy = std::fs::read_to_string(tree.join(".wmfix-include/0/mylib/count.cuh")).unwrap();
    assert!(
        copy.contains("WMFIX_AFTER_RETURN(0, atomicAdd(c, 1))"),
        "{copy}"
    );
    assert!(
        !std::fs::read_to_string(lib.join("count.cuh"))
            .unwrap()
            .contains("WMFIX")
    );
    let o = nvcc_command(&tree)
        .env("CPATH", tree.join(".wmfix-include/0"))
        .args([
            "-c",
            "nvcc -arch=sm_90 -std=c++17 -isystem ../../lib/include k.cu -o k -keep -keep-dir .",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    // The device pass compiled the copy with the fence.
    let ii = std::fs::read_dir(&tree)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".cpp1.ii"))
        .unwrap();
    let ii = std::fs::read_to_string(ii).unwrap();
    assert!(
        ii.contains(".wmfix-include/0/mylib/count.cuh"),
        "device pass read the original"
    );
}

/// The CUB case study in preprocessed mode: CUB's own look-back (its tile state in
/// single_pass_scan_operators.cuh) gets fences, listed with CUB's paths and written into a copy
/// of CUB's header. (That copy does not compile yet: see the study's README.)
#[test]
fn cub_scan_lib_fences_are_listed_with_cub_paths() {
    let tmp = tempfile::tempdir().unwrap();
    let study = copy_tree(&repo().join("case-studies/cub-scan-lib"), tmp.path());
    let command = format!("{} -E -x cu -O3 -arch=sm_90", nvcc().display());
    let summary = insert_preprocessed(tmp.path(), study.to_str().unwrap(), &command);
    let library: Vec<&str> = summary["library_fences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        library
            .iter()
            .any(|f| f.starts_with("cub/agent/single_pass_scan_operators.cuh:")),
        "{library:?}"
    );
    // Its fences are written back into a copy of CUB's header in the include overlay (the
    // toolkit's include/cccl), at the line fences.json names.
    let list: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("out/fences.json")).unwrap())
            .unwrap();
    let header = "cub/agent/single_pass_scan_operators.cuh";
    let copy = tmp.path().join("out/tree/.wmfix-include/0").join(header);
    let copy = std::fs::read_to_string(&copy).unwrap();
    let lines: Vec<&str> = copy.lines().skip(4).collect(); // the prologue ends in `#line 1`
    let placed = list["fences"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["file"] == header)
        .filter(|f| {
            let line = lines[f["line"].as_u64().unwrap() as usize - 1];
            line.contains(&format!("({}", f["id"]))
        })
        .count();
    assert!(
        placed > 10,
        "{placed} of CUB's tile-state fences in the copy"
    );
}

/// thrust's device_vector and sort, CUB's DeviceScan and BlockReduce and libcu++'s atomic_ref in
/// one program (tests/fixtures/thrust_cub, `preprocess` set): `wmfix build` writes the fences
/// into the include overlay and builds the original and the instrumented program with nvcc; the
/// device pass compiled the copies of CUB's tile state, of its onesweep radix sort (thrust's
/// sort) and of thrust's temporary arrays, fences included.
/// libcu++'s <chrono> (constexpr functions whose value is wrapped) and thrust's calls of
/// `ns::advance`, a name libcu++ also gives a `__device__` object, broke this build before.
#[test]
fn thrust_and_cub_build_instrumented_in_preprocessed_mode() {
    let tmp = tempfile::tempdir().unwrap();
    let app = copy_tree(&repo().join("tests/fixtures/thrust_cub"), tmp.path());
    let toml = std::fs::read_to_string(app.join("wmfix.toml")).unwrap();
    assert!(toml.contains("\npreprocess = "), "{toml}");
    // Keep nvcc's intermediate files, to see which header text the device pass compiled.
    let toml = toml.replace("thrust_cub.cu\"\n", "thrust_cub.cu -keep -keep-dir .\"\n");
    std::fs::write(app.join("wmfix.toml"), toml).unwrap();
    let o = wmfix_sh(tmp.path(), &format!("build {} --out out", app.display()))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let tree = tmp.path().join("out/tree");
    assert!(tree.join("thrust_cub").is_file());
    let ii = std::fs::read_dir(&tree)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".cpp1.ii"))
        .expect("the device pass's preprocessed text");
    let ii = std::fs::read_to_string(ii).unwrap();
    for copy in [
        ".wmfix-include/0/cub/agent/single_pass_scan_operators.cuh",
        ".wmfix-include/0/cub/agent/agent_radix_sort_onesweep.cuh",
        ".wmfix-include/0/thrust/detail/temporary_array.inl",
    ] {
        assert!(ii.contains(copy), "the device pass did not read {copy}");
        let text = std::fs::read_to_string(tree.join(copy)).unwrap();
        assert!(text.contains("WMFIX_FENCE"), "{copy} has no fence");
    }
}

/// The CUB study hardened with every fence kept (what `reduce` and `apply` write): `scan.cu`
/// has no device code of its own, so the patch changes no file and every fence is a finding
/// for its library, CUB's tile state among them.
#[test]
fn cub_scan_lib_hardened_changes_no_file_and_lists_library_findings() {
    let tmp = tempfile::tempdir().unwrap();
    let study = copy_tree(&repo().join("case-studies/cub-scan-lib"), tmp.path());
    let app = wmfix::app::config::App::load(&study).unwrap();
    let every = wmfix::fences::id::FenceId::all(100_000);
    let done = wmfix::reduce::patch::harden(
        &app,
        &tmp.path().join("out"),
        &every,
        wmfix::fences::scope::FenceScope::Device,
    )
    .unwrap();
    assert!(done.files.is_empty(), "{:?}", done.files[0].rel);
    assert!(done.unplaced.is_empty(), "{:?}", done.unplaced);
    assert!(done.library.len() > 1000, "{}", done.library.len());
    assert!(
        done.library
            .iter()
            .any(|f| f.starts_with("cub/agent/single_pass_scan_operators.cuh:")),
        "{:?}",
        &done.library[..5]
    );
}

/// wmfix.toml's `preprocess` key: `wmfix build` instruments the preprocessed TU.
#[test]
fn the_config_key_builds_preprocessed() {
    let tmp = tempfile::tempdir().unwrap();
    let app = app_with_macro_header(tmp.path());
    std::fs::write(
        app.join("k.cu"),
        "#include \"qual.h\"\nDEVFN void f(int *a) { a[threadIdx.x] = 1; }\n__global__ void k(int *a) { f(a); }\nint main() { k<<<1, 1>>>(nullptr); return 0; }\n",
    )
    .unwrap();
    std::fs::write(
        app.join("wmfix.toml"),
        format!(
            "build = \"nvcc -arch=sm_90 -o k k.cu\"\nrun = \"./k\"\ngpu = false\npreprocess = \"{} -E -x cu -arch=sm_90\"\n",
            nvcc().display()
        ),
    )
    .unwrap();
    let o = wmfix_sh(tmp.path(), "build app --out out")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let list = std::fs::read_to_string(tmp.path().join("out/fences.json")).unwrap();
    assert!(
        list.contains("\"file\": \"k.cu\"") && list.contains("\"line\": 2"),
        "{list}"
    );
}

/// The reduction stand-in (tests/fixtures/reduce-standin/app.sh) as an application in
/// preprocessed mode: `k.cu` includes the user's `qual.h` (a device function declared through
/// its macro, and a macro `TWO` of two stores) and a library header from an `-I` folder
/// outside the application's folder.
fn preprocessed_standin() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let app = tmp.path().join("app");
    let lib = tmp.path().join("lib/include/mylib");
    std::fs::create_dir_all(&app).unwrap();
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::copy(
        repo().join("tests/fixtures/reduce-standin/app.sh"),
        app.join("app.sh"),
    )
    .unwrap();
    let config = format!(
        "sources = [\"k.cu\"]\nbuild = \"cp app.sh app && chmod +x app\"\nrun = \"./app\"\ntimeout_s = 10\ngpu = false\npreprocess = \"{} -E -x cu -arch=sm_90 -I ../lib/include\"\n",
        nvcc().display()
    );
    let files = [
        (
            lib.join("put.cuh"),
            "#pragma once\nnamespace mylib {\n__device__ inline void put(int *c, int v) {\n  c[0] = v;\n}\n}\n",
        ),
        (
            app.join("qual.h"),
            "#pragma once\n#define DEVFN __device__ __forceinline__\n#define TWO(p) p[0] = 1; p[1] = 2\nDEVFN void publish(int *d, int *f) {\n  d[0] = 42;\n  f[0] = 1;\n}\n",
        ),
        (
            app.join("k.cu"),
            "#include \"qual.h\"\n#include <mylib/put.cuh>\n__global__ void k(int *a, int *d, int *f) {\n  publish(d, f);\n  mylib::put(a, 7);\n  TWO(a);\n  a[2] = 3;\n}\nint main() { return 0; }\n",
        ),
        (app.join("wmfix.toml"), config.as_str()),
    ];
    for (path, text) in files {
        std::fs::write(path, text).unwrap();
    }
    (tmp, app)
}

/// The id of the fence whose record names `file` and whose access is `access`.
fn fence_id(list: &serde_json::Value, file: &str, access: &str) -> u64 {
    let f = list["fences"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["file"] == file && f["access"].as_str().unwrap().starts_with(access));
    f.unwrap_or_else(|| panic!("no fence at {file} `{access}`: {list}"))["id"]
        .as_u64()
        .unwrap()
}

/// `wmfix reduce` in preprocessed mode (refused with exit 64 before): the reduction switches
/// the TU's fences by id as in normal mode; `fences.patch` adds the kept fences to the user's
/// files only (k.cu and qual.h), each where the build writes it back; the kept fence of the
/// library header is a finding in reduce.json and the report, and the one inside a macro's
/// expansion is listed as not in the patch. `patch -p1` and `wmfix apply` give the same files,
/// which nvcc compiles.
#[test]
fn reduce_in_preprocessed_mode_patches_the_users_files_and_reports_library_fences() {
    let (tmp, app) = preprocessed_standin();
    let before = copy_tree(&app, &tmp.path().join("before"));
    let o = wmfix_sh(tmp.path(), "build app --out out")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let list: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("out/fences.json")).unwrap())
            .unwrap();
    let header = fence_id(&list, "qual.h", "d[0] = 42;");
    let library = fence_id(&list, "mylib/put.cuh", "c[0] = v;");
    let in_macro = fence_id(&list, "k.cu", "a[0] = 1;");
    let own = fence_id(&list, "k.cu", "a[2] = 3;");
    let mut required = [header, library, in_macro, own];
    required.sort();
    let required: Vec<String> = required.iter().map(u64::to_string).collect();
    let o = wmfix_sh(tmp.path(), "reduce app --out out --hours 1")
        .env("STANDIN_REQUIRED", required.join(","))
        .env("STANDIN_PERCENT", "100")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let r: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("out/reduce/reduce.json")).unwrap(),
    )
    .unwrap();
    let kept: Vec<String> = r["result"]["fences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.to_string())
        .collect();
    assert_eq!(kept, required, "{r}");
    assert_eq!(
        r["library_fences"],
        serde_json::json!([format!("mylib/put.cuh:4 (fence {library})")]),
        "{r}"
    );
    assert_eq!(
        r["unplaced_fences"],
        serde_json::json!([format!("fence {in_macro} (k.cu:6)")]),
        "{r}"
    );
    // Kept fences name the file:line their code came from, placements included.
    let k = r["kept"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["id"] == own);
    let k = k.unwrap();
    assert_eq!(k["location"].as_str().unwrap(), "k.cu:7:3", "{k}");
    assert_eq!(k["placements"][0]["line"], 7, "{k}");
    let s = stdout(&o);
    assert!(
        s.contains(&format!("library: mylib/put.cuh:4 (fence {library})")),
        "{s}"
    );
    // The patch: the user's two files, each fence after its statement; nothing of the library.
    let patch_path = tmp.path().join("out/reduce/fences.patch");
    let patch = std::fs::read_to_string(&patch_path).unwrap();
    assert!(
        patch.contains("+++ b/k.cu") && patch.contains("+++ b/qual.h"),
        "{patch}"
    );
    // The head says why each kept fence is kept, the library's too; the diff leaves it out.
    let diff = &patch[patch.find("--- ").unwrap()..];
    assert!(!diff.contains("put.cuh"), "{patch}");
    assert!(
        patch.contains(&format!(
            "+  d[0] = 42; __threadfence(); /* wmfix fence {header}: after store `d[0] = 42;` */"
        )),
        "{patch}"
    );
    assert!(
        patch.contains(&format!(
            "+  a[2] = 3; __threadfence(); /* wmfix fence {own}: after store `a[2] = 3;` */"
        )),
        "{patch}"
    );
    assert_eq!(patch.matches("__threadfence();").count(), 2, "{patch}");
    // patch -p1 on a clean copy gives what `wmfix apply` writes; the library is untouched.
    let clean = copy_tree(&before, &tmp.path().join("clean"));
    let p = std::process::Command::new("patch")
        .args(["-p1", "-i", patch_path.to_str().unwrap()])
        .current_dir(&clean)
        .output()
        .unwrap();
    assert!(p.status.success(), "{}", stderr(&p));
    let a = wmfix_sh(tmp.path(), "apply app --out out")
        .output()
        .unwrap();
    assert!(a.status.success(), "{}", stderr(&a));
    assert!(
        stdout(&a).contains(&format!("mylib/put.cuh:4 (fence {library})")),
        "{}",
        stdout(&a)
    );
    for f in ["k.cu", "qual.h"] {
        let applied = std::fs::read_to_string(app.join(f)).unwrap();
        assert_eq!(
            applied,
            std::fs::read_to_string(clean.join(f)).unwrap(),
            "{f}"
        );
        assert_ne!(
            applied,
            std::fs::read_to_string(before.join(f)).unwrap(),
            "{f}"
        );
    }
    let lib = std::fs::read_to_string(tmp.path().join("lib/include/mylib/put.cuh")).unwrap();
    assert!(!lib.contains("threadfence"), "{lib}");
    // The hardened program compiles.
    let c = nvcc_command(&app)
        .args(["-c", "nvcc -arch=sm_90 -I ../lib/include -c k.cu -o k.o"])
        .output()
        .unwrap();
    assert!(c.status.success(), "{}", stderr(&c));
    // `wmfix cost` still refuses preprocessed mode: its variants would lack the library's fence.
    let c = run(tmp.path(), &["cost", "app", "--out", "out"]);
    assert_eq!(c.status.code(), Some(64), "{}", stderr(&c));
    assert!(stderr(&c).contains("preprocessed mode"), "{}", stderr(&c));
}

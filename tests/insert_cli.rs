//! `wmfix insert` run as a user would: the real binary on copied fixture trees, with insta
//! snapshots of the instrumented text and of fences.json.

mod common;
use common::*;
use std::path::Path;

fn instrumented(out: &Path, rel: &str) -> String {
    std::fs::read_to_string(out.join("tree").join(rel)).unwrap()
}

fn fences_json(out: &Path, root: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(out.join("fences.json")).unwrap();
    serde_json::from_str(&text.replace(root.to_str().unwrap(), "[ROOT]")).unwrap()
}

/// Every `WMFIX_FENCE*(id`/`WMFIX_AFTER*(id` in the text, grouped by form.
fn fence_ids(text: &str) -> Vec<usize> {
    let mut ids = Vec::new();
    for pat in [
        "WMFIX_FENCE(",
        "WMFIX_FENCE_AT(",
        "WMFIX_FENCE_PTR(",
        "WMFIX_FENCE_AIM(",
        "WMFIX_FENCE_AIM_PTR(",
        "WMFIX_FENCE_AIM_IF(",
        "WMFIX_FENCE_EXPR(",
        "WMFIX_AFTER(",
        "WMFIX_AFTER_RETURN(",
        "WMFIX_AFTER_IF(",
        "WMFIX_AFTER_RETURN_IF(",
    ] {
        for (at, _) in text.match_indices(pat) {
            let rest = &text[at + pat.len()..];
            let end = rest.find(|c: char| !c.is_ascii_digit()).unwrap();
            ids.push(rest[..end].parse().unwrap());
        }
    }
    ids
}

#[test]
fn constructs_are_instrumented_and_originals_untouched() {
    let (tmp, root) = fixture("constructs");
    let before = snapshot_bytes(&root);
    let out = tmp.path().join("out");
    let o = run(tmp.path(), &["insert", "constructs", "--out", "out"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(snapshot_bytes(&root), before, "the user's sources changed");
    for f in ["control.cu", "memory.cu", "templates.cu"] {
        insta::assert_snapshot!(format!("constructs_{f}"), instrumented(&out, f));
    }
    let json = fences_json(&out, &root);
    insta::assert_json_snapshot!("constructs_fences", json);

    // Ids are 0..N-1 in source order and each one listed appears in the text.
    let total = json["total"].as_u64().unwrap() as usize;
    let listed: Vec<usize> = json["fences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_u64().unwrap() as usize)
        .collect();
    assert_eq!(listed, (0..total).collect::<Vec<_>>());
    let mut used: Vec<usize> = ["control.cu", "memory.cu", "templates.cu"]
        .iter()
        .flat_map(|f| fence_ids(&instrumented(&out, f)))
        .collect();
    used.sort();
    used.dedup();
    assert_eq!(used, listed);
    assert!(
        instrumented(&out, "control.cu").contains(&format!("#define WMFIX_NUM_FENCES {total}\n"))
    );
}

#[test]
fn shared_local_and_address_of_get_no_fence() {
    let (tmp, _root) = fixture("constructs");
    let o = run(tmp.path(), &["insert", "constructs", "--out", "out"]);
    assert!(o.status.success());
    let text = instrumented(&tmp.path().join("out"), "memory.cu");
    for unfenced in [
        "  dyn[wmfix_threadIdx().x] = 0.0f;\n",
        "  regs[1] = regs[0] + 1.0f;\n",
        "  row[1] = regs[1];\n",
        "  *p = 2.0f;\n",
        "  total = 0;\n",
        "  atomicAdd(&total, 1);\n",
        "  int *where = &hist[3];\n",
    ] {
        assert!(text.contains(unfenced), "expected no fence on {unfenced:?}");
    }
    assert!(
        text.contains("counter = counter + 1; WMFIX_FENCE("),
        "a file-scope __device__ variable is global memory"
    );
}

/// `function: kind: access` for each access of each fence in one file of fences.json.
fn fenced_accesses(json: &serde_json::Value, file: &str) -> Vec<String> {
    let fences = json["fences"].as_array().unwrap();
    let in_file = fences.iter().filter(|f| f["file"] == file);
    in_file
        .flat_map(|f| {
            let accesses = f["accesses"].as_array().unwrap();
            accesses.iter().map(move |a| {
                format!(
                    "{}: {}",
                    f["function"].as_str().unwrap(),
                    a.as_str().unwrap()
                )
            })
        })
        .collect()
}

fn scoping_fences(file: &str) -> Vec<String> {
    let (tmp, root) = fixture("scoping");
    let o = run(tmp.path(), &["insert", "scoping", "--out", "out"]);
    assert!(o.status.success(), "{}", stderr(&o));
    fenced_accesses(&fences_json(&tmp.path().join("out"), &root), file)
}

#[test]
fn local_arrays_are_not_global_memory_only_in_their_scope() {
    assert_eq!(
        scoping_fences("locals.cu"),
        [
            "params: store: buf[1]",
            "params: store: alias[0]",
            "params: store: tile[0]",
            "blocks: store: local[1]",
            "blocks: store: p[0]",
            "blocks: store: q[1]",
        ]
    );
}

#[test]
fn function_prototypes_are_not_variables() {
    assert_eq!(
        scoping_fences("prototypes.cu"),
        ["calls: store: counter", "calls: store: *p"]
    );
}

#[test]
fn a_tree_with_headers_is_mirrored() {
    let (tmp, root) = fixture("multi");
    let o = run(tmp.path(), &["insert", "multi", "--out", "out"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = tmp.path().join("out");
    let header = instrumented(&out, "kernels/k.cuh");
    assert!(header.starts_with("#define WMFIX_NUM_FENCES 5\n#define WMFIX_FENCE_SCOPE 1\n#include \"../../runtime/wmfix.cuh\"\n#line 1\n"));
    insta::assert_snapshot!("multi_k.cuh", header);
    insta::assert_snapshot!("multi_main.cu", instrumented(&out, "main.cu"));
    for unchanged in ["kernels/host_only.h", "notes.txt"] {
        assert_eq!(
            instrumented(&out, unchanged),
            std::fs::read_to_string(root.join(unchanged)).unwrap()
        );
    }
    assert!(out.join("runtime/wmfix.cuh").is_file());
}

#[test]
fn rerunning_regenerates_the_output() {
    let (tmp, _root) = fixture("multi");
    assert!(
        run(tmp.path(), &["insert", "multi", "--out", "out"])
            .status
            .success()
    );
    let stale = tmp.path().join("out/tree/stale.cu");
    std::fs::write(&stale, "stale").unwrap();
    assert!(
        run(
            tmp.path(),
            &["insert", "multi", "--out", "out", "--fence", "system"]
        )
        .status
        .success()
    );
    assert!(!stale.exists());
    assert!(
        instrumented(&tmp.path().join("out"), "main.cu").contains("#define WMFIX_FENCE_SCOPE 2\n")
    );
}

#[test]
fn output_inside_the_input_is_skipped_and_around_it_refused() {
    let (tmp, root) = fixture("multi");
    let o = run(&root, &["insert", ".", "--out", "wmfix-out"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&root, &["insert", ".", "--out", "wmfix-out"]);
    assert!(o.status.success());
    assert!(
        !root.join("wmfix-out/tree/wmfix-out").exists(),
        "the output was instrumented as input"
    );
    let o = run(tmp.path(), &["insert", "multi/kernels", "--out", "multi"]);
    assert_eq!(o.status.code(), Some(65));
    assert!(stderr(&o).contains("contains the input"), "{}", stderr(&o));
}

/// `insert INPUT --on-parse-error fail` in `cwd` exits 65, naming the syntax error at `at`
/// (`file:line:column`).
fn refused_at(cwd: &Path, input: &str, at: &str) {
    let o = run(
        cwd,
        &["insert", input, "--out", "out", "--on-parse-error", "fail"],
    );
    assert_eq!(o.status.code(), Some(65));
    let err = stderr(&o);
    assert!(err.contains(&format!("{at}: syntax error")), "{err}");
}

/// Files are planned on several threads; what is reported must not depend on which finished
/// first.
#[test]
fn many_files_report_in_tree_order_and_number_fences_across_files() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    std::fs::create_dir(&src).unwrap();
    let kernel = "__global__ void k(int *a) { a[0] = 1; }\n";
    for i in 0..40 {
        // A large file early on, so that a later, small one is planned before it.
        let text = match i {
            3 => kernel.repeat(400) + "void broken() { int x = ; }\n",
            30 => "void broken() { int x = ; }\n".to_string(),
            _ => kernel.to_string(),
        };
        std::fs::write(src.join(format!("f{i:02}.cu")), text).unwrap();
    }
    refused_at(tmp.path(), "src", "f03.cu:401:23");

    let o = run(tmp.path(), &["insert", "src", "--out", "out"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let errors: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("syntax error"))
        .map(|l| {
            l.trim_start_matches("wmfix: warning: ")
                .split(':')
                .next()
                .unwrap()
        })
        .collect();
    assert_eq!(errors, ["src/f03.cu", "src/f30.cu"]);
    let out = tmp.path().join("out");
    assert_eq!(fence_ids(&instrumented(&out, "f00.cu")), [0]);
    assert_eq!(
        fence_ids(&instrumented(&out, "f03.cu")),
        (3..403).collect::<Vec<_>>()
    );
    assert_eq!(fence_ids(&instrumented(&out, "f39.cu")), [437]);
}

#[test]
fn parse_errors_name_file_line_and_column() {
    let (tmp, root) = fixture("bad");
    refused_at(tmp.path(), "bad/broken.cu", "bad/broken.cu:4:8");

    let o = run(tmp.path(), &["insert", "bad/broken.cu", "--out", "out"]);
    assert!(o.status.success());
    assert!(
        stderr(&o).contains("bad/broken.cu:4:8: syntax error"),
        "{}",
        stderr(&o)
    );
    let text = instrumented(&tmp.path().join("out"), "broken.cu");
    assert!(
        text.contains(
            "__global__ void ok(int *a) { WMFIX_KERNEL_ENTRY(); a[0] = 1; WMFIX_FENCE_AT(0, a[0]); }"
        ),
        "{text}"
    );

    let o = run(
        tmp.path(),
        &[
            "insert",
            "bad/broken.cu",
            "--out",
            "out",
            "--on-parse-error",
            "skip",
        ],
    );
    assert!(o.status.success());
    assert_eq!(
        instrumented(&tmp.path().join("out"), "broken.cu"),
        std::fs::read_to_string(root.join("broken.cu")).unwrap()
    );
}

/// Instruments `tests/fixtures/bad/<file>` (which must succeed) and returns what it printed on stderr.
fn warnings_of(file: &str) -> (tempfile::TempDir, String) {
    let (tmp, _root) = fixture("bad");
    let o = run(
        tmp.path(),
        &["insert", &format!("bad/{file}"), "--out", "out"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    (tmp, err)
}

#[test]
fn macros_that_hide_code_are_reported() {
    let (tmp, err) = warnings_of("macros.cu");
    // DEVICE is learnt (macros.rs): its function is instrumented, and no warning says otherwise.
    assert!(!err.contains("expands to a CUDA qualifier"), "{err}");
    assert!(
        err.contains("wmfix: warning: bad/macros.cu:9:3: macro `LOCK` may access memory"),
        "{err}"
    );
    let text = instrumented(&tmp.path().join("out"), "macros.cu");
    assert!(
        text.contains("return WMFIX_AFTER_RETURN(0, a[0]);"),
        "{text}"
    );
    assert!(text.contains("#define TID (wmfix_threadIdx().x + wmfix_blockIdx().x * blockDim.x)"));
}

#[test]
fn missing_input_and_bad_usage_have_their_own_codes() {
    let tmp = tempfile::tempdir().unwrap();
    let o = run(tmp.path(), &["insert", "nope", "--out", "out"]);
    assert_eq!(o.status.code(), Some(66));
    assert!(stderr(&o).contains("nope"));
    let o = run(tmp.path(), &["insert", "--fence", "warp", "x"]);
    assert_eq!(o.status.code(), Some(64));
    let o = run(tmp.path(), &["insert", "--help"]);
    assert!(o.status.success());
    assert!(stdout(&o).contains("--on-parse-error"));
}

#[test]
fn dump_tree_prints_the_parse_tree() {
    let (tmp, _root) = fixture("bad");
    let o = run(tmp.path(), &["insert", "--dump-tree", "bad/broken.cu"]);
    assert!(o.status.success());
    let s = stdout(&o);
    assert!(s.contains("function_definition [1:1]"), "{s}");
    assert!(s.contains("ERROR"), "{s}");
}

#[test]
fn cbe_dot_has_the_papers_four_fences() {
    let tmp = tempfile::tempdir().unwrap();
    let root = copy_tree(&repo().join("case-studies/cbe-dot"), tmp.path());
    let o = run(tmp.path(), &["insert", "cbe-dot", "--out", "out"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let json = fences_json(&tmp.path().join("out"), &root);
    let accesses: Vec<&str> = json["fences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["access"].as_str().unwrap())
        .collect();
    assert_eq!(
        accesses,
        [
            "(atomicCAS(mutex, 0, 1) != 0)",
            "atomicExch(mutex, 0);",
            "temp += a[tid] * b[tid];",
            "*c += cache[0];"
        ]
    );
}

#[test]
fn grid_wide_synchronisation_is_reported() {
    let (_tmp, err) = warnings_of("grid_sync.cu");
    assert!(
        err.contains(
            "wmfix: warning: bad/grid_sync.cu:7:3: grid-wide synchronisation (`cg::this_grid`)"
        ),
        "{err}"
    );
    assert!(
        err.contains(
            "wmfix: warning: bad/grid_sync.cu:14:3: a cooperative launch (`cudaLaunchCooperativeKernel`)"
        ),
        "{err}"
    );
}

#[test]
fn launches_through_cuda_launch_kernel_ex_are_rewritten() {
    let (tmp, _root) = fixture("launch_ex");
    let o = run(tmp.path(), &["insert", "launch_ex", "--out", "out"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = instrumented(&tmp.path().join("out"), "launch_ex.cu");
    insta::assert_snapshot!("launch_ex_launch_ex.cu", text);
    // Five launches; the call inside the copy of cuda_runtime.h's template is none.
    assert_eq!(text.matches("wmfix_launch_ex(").count(), 5, "{text}");
    assert!(text.contains("return ::cudaLaunchKernelExC(config, (const void *)kernel, pArgs);"));
    // Whether a cudaLaunchKernelEx launch is cooperative is up to its config, at run time: no
    // warning names it; the grid-wide barrier is still reported.
    let err = stderr(&o);
    assert!(!err.contains("cudaLaunchKernelEx"), "{err}");
    assert!(
        err.contains("launch_ex.cu:23:3: grid-wide synchronisation (`cg::this_grid`)"),
        "{err}"
    );
}

#[test]
fn launches_from_device_code_are_reported_and_left_alone() {
    let (tmp, err) = warnings_of("device_launch.cu");
    for at in ["5:8", "6:22"] {
        let warning = format!(
            "wmfix: warning: bad/device_launch.cu:{at}: kernel launch from device code (dynamic parallelism) is not instrumented"
        );
        assert!(err.contains(&warning), "{err}");
    }
    let text = instrumented(&tmp.path().join("out"), "device_launch.cu");
    assert!(
        text.contains("  child<<<1, 32>>>(a);\n  cudaLaunchKernelEx(config, child, a);\n"),
        "{text}"
    );
}

#[test]
fn rewriter_bugs_found_by_the_random_test_stay_fixed() {
    // tests/fixtures/regressions/random.cu: one function per bug that tests/rewriter_random.rs
    // found; the text must also build (nvcc_compile.rs).
    let (tmp, root) = fixture("regressions");
    let o = run(tmp.path(), &["insert", "regressions", "--out", "out"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stderr(&o), "", "no warnings");
    let out = tmp.path().join("out");
    insta::assert_snapshot!("regressions_random.cu", instrumented(&out, "random.cu"));
    let json = fences_json(&out, &root);
    let hows: Vec<String> = json["fences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let p = f["placements"].as_array().unwrap().iter();
            let hows: Vec<&str> = p.map(|p| p["how"].as_str().unwrap()).collect();
            format!("{}: {}", f["line"], hows.join(" "))
        })
        .collect();
    assert_eq!(
        hows[8..13],
        ["30: wrap", "31: comma", "32: wrap", "33: wrap", "34: wrap"],
        "conditions: values wrapped, an expression init-statement gets a comma"
    );
    assert_eq!(
        fenced_accesses(&json, "random.cu"),
        [
            "comments: load: a[0]",
            "comments: store: a[1]",
            "comments: store: a[2]",
            "comments: load: a[3]",
            "labels: store: a[0]",
            "labels: store: a[1]",
            "labels: store: a[2]",
            "labels: load: a[3]",
            "conditions: load: a[0]",
            "conditions: load: a[1]",
            "conditions: load: a[2]",
            "conditions: load: a[3]",
            "conditions: load: a[4]",
            // not_global: none
            "pointers: load: p->next",
            "pointers: load: p->next",
            "pointers: store: p->next->val",
            "pointers: store: table[4]",
            "pointers: store: out[0]",
            "pointers: store: out[1]",
            "stores: store: nodes[1]",
            "stores: store: *p",
            "ranges: load: table",
            "ranges: load: table",
        ]
    );
}

#[test]
fn fences_no_launched_kernel_reaches_are_marked_unreachable() {
    let (tmp, root) = fixture("reach");
    let o = run(tmp.path(), &["insert", "reach", "--out", "out"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let json = fences_json(&tmp.path().join("out"), &root);
    insta::assert_json_snapshot!("reach_fences", json);
    let unreachable: Vec<&str> = json["fences"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["unreachable"] == true)
        .map(|f| f["function"].as_str().unwrap())
        .collect();
    // `unused_store` is called by no one and `old_kernel` launched nowhere; `through_pointer`
    // is reached through a pointer and `elsewhere` is launched from the copied host.cpp.
    assert_eq!(unreachable, ["unused_store", "old_kernel"]);
    assert!(
        stdout(&o).contains("wmfix: 2 of them in functions no launched kernel reaches"),
        "{}",
        stdout(&o)
    );
}

/// Nesting deeper than tree-sitter's queries see (issue 28): a kernel of 70,000 nested blocks
/// got "0 fences" and no word, 200,000 ran past 300 s (the query cursor is quadratic in depth);
/// now a parse error naming file:line, which `fail` stops at, in about a second. No mode
/// instruments any of such a file: `warn` and `skip` copy it unchanged and instrument the other
/// files, and `fail`'s message says so (it said "warn instruments the rest"; issue 47).
#[test]
fn nesting_too_deep_for_the_queries_is_reported_and_fail_stops() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("app")).unwrap();
    let n = 200_000;
    let text = format!(
        "__global__ void k(int *a) {{\n  a[1] = 2;\n{}a[0] = 1;{}\n}}\n",
        "{".repeat(n),
        "}".repeat(n)
    );
    std::fs::write(tmp.path().join("app/k.cu"), &text).unwrap();
    std::fs::write(
        tmp.path().join("app/j.cu"),
        "__global__ void j(int *a) { a[0] = 1; }\n",
    )
    .unwrap();
    for mode in ["warn", "skip"] {
        let out = format!("out-{mode}");
        let o = run(
            tmp.path(),
            &["insert", "app", "--out", &out, "--on-parse-error", mode],
        );
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("app/k.cu:3:")
                && stderr(&o).contains("nesting deeper than 65000 levels")
                && stderr(&o).contains(": file copied unchanged"),
            "{mode}: {}",
            stderr(&o)
        );
        // Not even the fence above the deep part: the file is as it was, and not counted.
        assert_eq!(
            std::fs::read_to_string(tmp.path().join(&out).join("tree/k.cu")).unwrap(),
            text,
            "{mode}"
        );
        assert!(
            stdout(&o).contains("wmfix: 1 fences in 1 of 2 CUDA files"),
            "{mode}: {}",
            stdout(&o)
        );
    }
    let o = run(
        tmp.path(),
        &["insert", "app", "--out", "out2", "--on-parse-error", "fail"],
    );
    assert_eq!(o.status.code(), Some(65), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(!err.contains("instruments the rest"), "{err}");
    assert!(
        err.contains("app/k.cu:3:")
            && err.contains("nesting deeper than 65000 levels")
            && err.contains("(--on-parse-error warn or skip copies this file unchanged and instruments the others)"),
        "{err}"
    );
}

/// `--dump-tree FILE | head`: the reader going away is no panic.
#[test]
fn dump_tree_into_a_closed_pipe_exits_quietly() {
    use std::io::Read;
    let tmp = tempfile::tempdir().unwrap();
    let text = "__global__ void k(int *a) { a[0] = 1; }\n".repeat(20_000);
    std::fs::write(tmp.path().join("k.cu"), text).unwrap();
    let mut child = wmfix()
        .current_dir(tmp.path())
        .args(["insert", "--dump-tree", "k.cu"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 64];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// The insert guide's examples of what `insert` writes are what it writes: a spin loop's fence
/// in the body guarded by `WMFIX_IN_LOOP` (the guide's example predated it; issue 47), a
/// value fenced before its use, a comma's fence.
#[test]
fn the_insert_guides_examples_are_what_insert_writes() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("app")).unwrap();
    std::fs::write(
        tmp.path().join("app/k.cu"),
        "__global__ void k(int *m, int *a, int *p, int i) {\n  while (atomicCAS(m,0,1) != 0);\n  a[0] = 1;\n  switch (a[1]) { default: break; }\n  if (int v = a[2]; v) { a[3] = v; }\n}\n__device__ int get(int *p, int i) { return p[i]; }\n",
    )
    .unwrap();
    let o = run(tmp.path(), &["insert", "app", "--out", "out"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = instrumented(&tmp.path().join("out"), "k.cu");
    let guide = std::fs::read_to_string(repo().join("docs/src/insert.md")).unwrap();
    let guide = guide.split_whitespace().collect::<Vec<_>>().join(" ");
    for (before, after) in [
        (
            "while (atomicCAS(m,0,1) != 0);",
            "while (atomicCAS(m,0,1) != 0) { if (WMFIX_IN_LOOP(0)) WMFIX_FENCE(0);; } WMFIX_FENCE(0);",
        ),
        ("switch (a[1])", "switch (WMFIX_AFTER(2, a[1]))"),
        (
            "if (int v = a[2]; v)",
            "if (int v = WMFIX_AFTER(3, a[2]); v)",
        ),
        ("return p[i];", "return WMFIX_AFTER_RETURN(5, p[i]);"),
    ] {
        assert!(text.contains(after), "{after}: {text}");
        let says = format!("`{before}` becomes `{after}`");
        assert!(guide.contains(&says), "the guide does not say {says}");
    }
}

//! Fewer spurious fences and fewer missed ones: pointer parameters that every call passes
//! shared or per-thread memory get none; `__device__` variables declared in include guards,
//! namespaces and other headers get them; both counted in `--stats` and `--json`.

mod common;
use common::*;

fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for (rel, text) in files {
        let p = tmp.path().join("app").join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    tmp
}

/// `insert --json`, and the texts of the accesses fenced in `file`.
fn fenced(tmp: &tempfile::TempDir, file: &str) -> (serde_json::Value, Vec<String>) {
    let o = run(tmp.path(), &["insert", "app", "--out", "out", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let summary: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let list: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("out/fences.json")).unwrap())
            .unwrap();
    let mut out = Vec::new();
    for f in list["fences"].as_array().unwrap() {
        if f["file"] != file {
            continue;
        }
        for a in f["accesses"].as_array().unwrap() {
            // `kind: text`
            let a = a.as_str().unwrap();
            out.push(a.split_once(": ").unwrap().1.to_string());
        }
    }
    (summary, out)
}

#[test]
fn shared_and_local_arrays_through_a_pointer_parameter_get_no_fence() {
    let tmp = tree(&[(
        "k.cu",
        "__device__ void add(int *p, int v) { p[threadIdx.x] += v; }\n\
         __device__ int twice(const int *q) { return q[1] * 2; }\n\
         __global__ void k(int *out) {\n\
           __shared__ int s[64];\n\
           int r[4];\n\
           add(s, 1);\n\
           add(s + 2, out[0]);\n\
           out[1] = twice(r);\n\
         }\n\
         __global__ void k2(int *out) { out[2] = twice(out); }\n",
    )]);
    let (summary, accesses) = fenced(&tmp, "k.cu");
    // `add` gets only shared memory; `twice` also gets `out`, global: its access keeps a fence.
    assert!(
        !accesses.contains(&"p[threadIdx.x]".to_string()),
        "{accesses:?}"
    );
    assert!(accesses.contains(&"q[1]".to_string()), "{accesses:?}");
    assert!(accesses.contains(&"out[0]".to_string()), "{accesses:?}");
    assert_eq!(summary["local_params"], 1);
}

#[test]
fn device_variables_in_guards_namespaces_and_headers_get_fences() {
    let tmp = tree(&[
        (
            "inc/g.cuh",
            "#ifndef G_CUH\n#define G_CUH\n__device__ int counter;\n#endif\n",
        ),
        (
            "k.cu",
            "#include \"inc/g.cuh\"\n\
             #ifndef K_CU\n#define K_CU\n__device__ int done;\n#endif\n\
             namespace app { __device__ int flag; }\n\
             __global__ void k(int *out) {\n\
               counter = 1;\n\
               done = 2;\n\
               app::flag = 3;\n\
             }\n\
             __global__ void k2(int counter) { out_of_scope(counter); }\n",
        ),
    ]);
    let (summary, accesses) = fenced(&tmp, "k.cu");
    for name in ["counter", "done", "flag"] {
        assert!(accesses.contains(&name.to_string()), "{name}: {accesses:?}");
    }
    // k2's parameter `counter` hides the header's variable: one `counter` fenced, not two.
    assert_eq!(accesses.iter().filter(|a| *a == "counter").count(), 1);
    assert_eq!(summary["hidden_globals"], 3);
}

#[test]
fn stats_print_both_counts() {
    let tmp = tree(&[(
        "k.cu",
        "#ifndef K\n#define K\n__device__ int g;\n#endif\n\
         __device__ void set(int *p) { p[0] = 1; }\n\
         __global__ void k() { __shared__ int s[2]; set(s); g = 1; }\n",
    )]);
    let o = run(tmp.path(), &["insert", "app", "--out", "out", "--stats"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("1 uses of __device__ variables declared in include guards, namespaces or headers; 1 pointer parameters passed only shared or per-thread memory"),
        "{}",
        stdout(&o)
    );
}

use super::*;
use crate::rewrite::render::plan_files;
use crate::rewrite::source::SourceFile;

/// The planned files' functions as `name: reachable`, in file order; `copies` are written to
/// a folder and read as copied files.
fn reach(files: &[(&str, &str)], copies: &[(&str, &[u8])]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    for (rel, bytes) in copies {
        std::fs::write(dir.path().join(rel), bytes).unwrap();
    }
    let sources = files
        .iter()
        .map(|(rel, text)| SourceFile::new(rel.into(), rel.into(), text.to_string()))
        .collect();
    let mut planned = plan_files(sources, Default::default());
    let copied: Vec<PathBuf> = copies.iter().map(|(rel, _)| rel.into()).collect();
    mark(&mut planned, dir.path(), &copied);
    planned
        .iter()
        .flat_map(|p| &p.plan.functions)
        .map(|f| format!("{}: {}", f.name, f.reachable))
        .collect()
}

const HOST: &str = "int main() { k<<<1, 1>>>(0); return 0; }\n";

#[test]
fn uncalled_functions_and_kernels_nobody_launches_are_unreachable() {
    let text = format!(
        "__device__ void leaf(int *p) {{ p[0] = 1; }}\n\
         __device__ void mid(int *p) {{ leaf(p); }}\n\
         __device__ void dead(int *p) {{ p[1] = 1; mid(p); }}\n\
         __global__ void k(int *p) {{ mid(p); }}\n\
         __global__ void unlaunched(int *p) {{ leaf(p); p[2] = 1; }}\n{HOST}"
    );
    assert_eq!(
        reach(&[("a.cu", &text)], &[]),
        [
            "leaf: true",
            "mid: true",
            "dead: false",
            "k: true",
            "unlaunched: false"
        ]
    );
}

#[test]
fn a_cycle_no_kernel_enters_is_unreachable() {
    let text = format!(
        "__device__ void b(int *p);\n\
         __device__ void a(int *p) {{ b(p); }}\n\
         __device__ void b(int *p) {{ a(p); }}\n\
         __device__ void c(int *p) {{ c(p); }}\n\
         __global__ void k(int *p) {{ p[0] = 1; }}\n{HOST}"
    );
    // `b` has a prototype: a mention outside any body, so it (and `a`, which it calls) count.
    assert_eq!(
        reach(&[("a.cu", &text)], &[]),
        ["a: true", "b: true", "c: false", "k: true"]
    );
}

#[test]
fn pointers_macros_strings_and_host_code_count_as_mentions() {
    let text = format!(
        "#define CALL(p) by_macro(p)\n\
         __device__ void by_pointer(int *p) {{ p[0] = 1; }}\n\
         __device__ void by_macro(int *p) {{ p[0] = 1; }}\n\
         __device__ void by_host(int *p) {{ p[0] = 1; }}\n\
         __device__ void by_name(int *p) {{ p[0] = 1; }}\n\
         __global__ void k(int *p) {{ void (*f)(int *) = by_pointer; f(p); CALL(p); }}\n\
         void host() {{ by_host(0); const char *s = \"by_name\"; }}\n{HOST}"
    );
    let all = reach(&[("a.cu", &text)], &[]);
    assert!(all.iter().all(|f| f.ends_with("true")), "{all:?}");
}

#[test]
fn methods_and_operators_are_always_reachable() {
    let text = format!(
        "struct S {{ __device__ void m(int *p) {{ p[0] = 1; }} }};\n\
         __device__ int operator+(S a, S b) {{ return 1; }}\n\
         __global__ void k(int *p) {{ p[0] = 1; }}\n{HOST}"
    );
    assert_eq!(
        reach(&[("a.cu", &text)], &[]),
        ["m: true", "operator+: true", "k: true"]
    );
}

#[test]
fn without_any_launch_seen_everything_is_reachable() {
    let text = "__device__ void dead(int *p) { p[0] = 1; }\n\
                __global__ void k(int *p) { p[0] = 1; }\n";
    assert_eq!(reach(&[("a.cu", text)], &[]), ["dead: true", "k: true"]);
}

#[test]
fn a_kernel_mentioned_but_never_launched_is_no_sign_that_the_launches_are_seen() {
    // `k<int>` names `k` outside any body, but nothing launches anything here.
    let text = "template <typename T> __global__ void k(T *p) { p[0] = 1; }\n\
                template <> __global__ void k<int>(int *p) { p[1] = 1; }\n\
                __global__ void other(int *p) { p[0] = 1; }\n";
    let all = reach(&[("a.cu", text)], &[]);
    assert!(all.iter().all(|f| f.ends_with("true")), "{all:?}");
}

#[test]
fn copied_files_and_mangled_names_launch_too() {
    let kernels = format!(
        "__global__ void k(int *p) {{ p[0] = 1; }}\n\
         __global__ void from_cpp(int *p) {{ p[0] = 1; }}\n\
         __global__ void from_binary(int *p) {{ p[0] = 1; }}\n\
         __global__ void nowhere(int *p) {{ p[0] = 1; }}\n{HOST}"
    );
    let binary: &[u8] = b"\x7fELF\0\0_Z11from_binaryPi\0\x01";
    let copies: [(&str, &[u8]); 2] = [
        (
            "host.cpp",
            b"void go() { cudaLaunchKernel((void *)from_cpp, 1, 1, 0, 0, 0); }\n",
        ),
        ("app.o", binary),
    ];
    assert_eq!(
        reach(&[("a.cu", &kernels)], &copies),
        [
            "k: true",
            "from_cpp: true",
            "from_binary: true",
            "nowhere: false"
        ]
    );
}

#[test]
fn a_name_reached_reaches_every_function_of_that_name() {
    let a = format!(
        "__device__ void f(int *p) {{ p[0] = 1; }}\n__global__ void k(int *p) {{ f(p); }}\n{HOST}"
    );
    let b = "static __device__ void f(int *p) { p[1] = 1; }\n\
             __device__ void f(float *p) { p[1] = 1; }\n";
    assert_eq!(
        reach(&[("a.cu", &a), ("b.cu", b)], &[]),
        ["f: true", "k: true", "f: true", "f: true"]
    );
}

#[test]
fn words_and_mangled_parts() {
    let w: Vec<&[u8]> = words(b"a1 = 2x + _b(c_d);").map(|(_, w)| w).collect();
    assert_eq!(w, [&b"a1"[..], b"_b", b"c_d"]);
    assert_eq!(mangled_parts(b"_ZN2ns6helperEPi"), [&b"ns"[..], b"helper"]);
    assert_eq!(mangled_parts(b"_Z99k"), Vec::<&[u8]>::new());
}

#[test]
fn a_word_across_chunks_is_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.txt");
    let mut text = vec![b' '; (1 << 20) - 3];
    text.extend_from_slice(b"kernel_name rest");
    std::fs::write(&path, &text).unwrap();
    let mut seen = Vec::new();
    scan_file(&path, &mut |w| {
        seen.push(String::from_utf8(w.to_vec()).unwrap())
    })
    .unwrap();
    assert_eq!(seen, ["kernel_name", "rest"]);
}

#[test]
fn templates_are_reached_by_their_name() {
    let text = "template <typename T> __device__ void used(T *p) { p[0] = 1; }\n\
                template <typename T> __device__ void unused(T *p) { p[0] = 1; }\n\
                template <> __device__ void unused<int>(int *p) { p[1] = 1; }\n\
                template <typename T> __global__ void k(T *p) { used<T>(p); }\n\
                int main() { k<float><<<1, 1>>>(0); return 0; }\n";
    // The explicit specialisation names its primary outside any body: both count.
    assert_eq!(
        reach(&[("a.cu", text)], &[]),
        ["used: true", "unused: true", "unused<int>: true", "k: true"]
    );
    let text = text.replace(
        "template <> __device__ void unused<int>(int *p) { p[1] = 1; }\n",
        "",
    );
    assert_eq!(
        reach(&[("a.cu", &text)], &[]),
        ["used: true", "unused: false", "k: true"]
    );
}

#[test]
fn a_launch_through_cuda_launch_kernel_ex_is_a_launch_seen() {
    let text = "__device__ void dead(int *p) { p[1] = 1; }\n\
                __global__ void k(int *p) { p[0] = 1; }\n\
                void go(cudaLaunchConfig_t *c, int *p) { cudaLaunchKernelEx(c, k, p); }\n";
    assert_eq!(reach(&[("a.cu", text)], &[]), ["dead: false", "k: true"]);
}

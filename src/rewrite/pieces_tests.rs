use crate::fences::scope::FenceScope;
use crate::rewrite::macros::Macros;
use crate::rewrite::render;
use crate::rewrite::source::SourceFile;
use std::cell::Cell;

thread_local! {
    /// For this thread's files: the size of a piece.
    pub static FORCED: Cell<Option<usize>> = const { Cell::new(None) };
    /// For this thread's files: every piece planned alone first, told nothing.
    pub static ALONE: Cell<bool> = const { Cell::new(false) };
    /// How many of this thread's files were planned in pieces.
    pub static PIECED: Cell<usize> = const { Cell::new(0) };
}

/// Everything `insert` makes of one file (text, fence records, warnings, `--stats` counts,
/// syntax error) in pieces of `piece` bytes (`None`: whole), and whether it was cut.
fn instrumented(rel: &str, text: &str, piece: Option<usize>) -> (String, bool) {
    FORCED.set(piece);
    PIECED.set(0);
    let file = SourceFile::new(rel.into(), rel.into(), text.to_string());
    let macros = Macros::learn([text], &[]);
    let mut files = render::plan_files(vec![file], macros);
    FORCED.set(None);
    let p = &files[0];
    let seen = format!(
        "{:?}\n{}\n{:?}\n{}",
        p.plan.precision,
        p.plan.warnings.join("\n"),
        p.syntax_error,
        p.plan.functions.len()
    );
    let done = render::render(&mut files, FenceScope::Device, |_| "wmfix.cuh".into()).unwrap();
    let fences = serde_json::to_string_pretty(&done.fences).unwrap();
    let text = done.texts[0].clone().unwrap_or_default();
    (format!("{text}\n{fences}\n{seen}"), PIECED.get() > 0)
}

/// Asserts that `text` in pieces of each size comes out as it does whole; how many sizes cut it.
fn same_in_pieces(rel: &str, text: &str, sizes: &[usize]) -> usize {
    let (whole, cut) = instrumented(rel, text, None);
    assert!(!cut, "{rel} is small: one piece");
    let mut cuts = 0;
    for &size in sizes {
        for alone in [false, true] {
            ALONE.set(alone);
            let (pieced, cut) = instrumented(rel, text, Some(size));
            ALONE.set(false);
            assert!(
                pieced == whole,
                "{rel} in pieces of {size} bytes (alone: {alone}):\n{pieced}\n--- whole:\n{whole}"
            );
            cuts += usize::from(cut && alone);
        }
    }
    cuts
}

#[test]
fn every_fixture_in_pieces_is_instrumented_as_it_is_whole() {
    let paths = crate::rewrite::top_level::tests::fixture_paths();
    let mut cut = 0;
    for path in &paths {
        let text = String::from_utf8_lossy(&std::fs::read(path).unwrap()).into_owned();
        let rel = path.file_name().unwrap().to_string_lossy();
        cut += usize::from(same_in_pieces(&rel, &text, &[1, 100, 1000]) > 0);
    }
    assert!(cut >= 20, "{cut} of {} files were cut", paths.len());
}

/// Namespaces (by keyword and by macro), templates, `#if` groups, a qualifier macro, pragmas,
/// a raw string and an extended lambda at the top level.
const VARIED: &str = r#"#include <cstdio>
#define MY_DEVICE __device__
#define NS_BEGIN namespace lib {
#define NS_END }
#define SHOUT(x) printf("%d\n", x)
namespace a {
template <typename T>
__device__ T load(const T *p) { return p[0]; }
namespace b { __global__ void k(int *x) { x[threadIdx.x] = load(x); } }
}
NS_BEGIN
template <int N> __global__ void unrolled(float *f) {
#pragma unroll
  for (int i = 0; i < N; ++i) f[i] += 1.0f;
}
NS_END
#if defined(FAST)
__global__ void fast(int *x) { x[0] = 1; }
#else
__global__ void slow(int *x) { atomicAdd(x, 1); }
#endif
MY_DEVICE int twice(int *p) { return p[0] * 2; }
const char *doc = R"(a; } { b)";
extern "C" { __global__ void c_kernel(int *x) { x[1] = twice(x); } }
void host(int *d) {
  auto f = [=] __device__ (int i) { d[i] = i; };
  a::b::k<<<1, 1>>>(d);
  lib::unrolled<4><<<1, 1>>>((float *)d);
}
"#;

#[test]
fn namespaces_templates_groups_and_macros_in_pieces_are_as_whole() {
    let (whole, _) = instrumented("varied.cu", VARIED, None);
    assert!(whole.starts_with("#define WMFIX_NUM_FENCES 8\n"), "{whole}");
    assert_eq!(same_in_pieces("varied.cu", VARIED, &[1, 64, 300]), 3);
}

/// What one piece of a file needs from the others: `__device__` variables (one used before
/// its declaration), one in a namespace (a hidden global), a macro that hides an access, a
/// `__shared__` array at file scope and a pointer into it, a name bound local then global
/// again, a parameter whose every call (in other pieces) passes shared memory, and one that
/// a piece's own calls would take as local but another piece's call does not.
const ACROSS: &str = r#"#define LOAD(p) (p)[0]
__device__ int counter;
namespace n { __device__ int hidden; }
__shared__ int tile[32];
int *into = tile;
__shared__ float buffer[8];
__device__ void helper(int *p) { p[0] = 1; }
__device__ void mixed(int *q) { q[1] = 2; }
__global__ void first(int *g) {
  __shared__ int s[4];
  mixed(s);
  late = counter;
}
__device__ float *buffer;
__global__ void second(int *g) {
  __shared__ int s[4];
  helper(s);
  tile[0] = LOAD(g);
  into[1] = n::hidden;
  buffer[0] = 1.0f;
  mixed(g);
}
__device__ int late;
int main() { first<<<1, 1>>>(0); second<<<1, 1>>>(0); }
"#;

#[test]
fn what_pieces_tell_each_other_makes_them_one_file() {
    let (whole, _) = instrumented("across.cu", ACROSS, None);
    // What the text is there for, whole.
    for (what, expected) in [
        ("hidden globals", "hidden_globals: 1"),
        ("local parameters", "local_params: 1"),
        ("the hiding macro", "macro `LOAD` may access memory"),
        ("the late global", "late = counter; WMFIX_FENCE"),
        (
            "the buffer bound global again",
            "buffer[0] = 1.0f; WMFIX_FENCE",
        ),
        ("the mixed parameter", "q[1] = 2; WMFIX_FENCE"),
    ] {
        assert!(whole.contains(expected), "{what}: {whole}");
    }
    for local in ["p[0] = 1;", "tile[0] = LOAD(g);"] {
        assert!(
            whole.contains(&format!("{local} }}")) || whole.contains(&format!("{local}\n")),
            "{local} unfenced: {whole}"
        );
    }
    assert_eq!(same_in_pieces("across.cu", ACROSS, &[1, 40, 200]), 3);
}

#[test]
fn a_piece_that_does_not_parse_sends_the_file_back_whole() {
    let text = "__global__ void k(int *a) { a[0] = 1; }\nint x = ;\n__global__ void j(int *a) { a[1] = 1; }\n";
    assert_eq!(same_in_pieces("bad.cu", text, &[1, 20]), 0);
}

#[test]
fn a_header_declares_its_globals_in_pieces_as_whole() {
    let header = "__device__ int a;\nint f();\n__device__ int b;\n";
    let user = "#include \"g.cuh\"\n__global__ void k() { a = b; }\n";
    let run = |piece| {
        FORCED.set(piece);
        let files = [("g.cuh", header), ("k.cu", user)]
            .map(|(rel, text)| SourceFile::new(rel.into(), rel.into(), text.to_string()));
        let mut planned = render::plan_files(files.into(), Default::default());
        FORCED.set(None);
        let done =
            render::render(&mut planned, FenceScope::Device, |_| "wmfix.cuh".into()).unwrap();
        done.texts[1].clone().unwrap()
    };
    let whole = run(None);
    assert!(whole.contains("a = b; WMFIX_FENCE"), "{whole}");
    assert_eq!(run(Some(1)), whole);
}

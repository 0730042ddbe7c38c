//! Constructs tree-sitter-cuda does not parse as written: `__align__(n)` and `CUDART_CB` are
//! masked before parsing; an `#if`/`#else` that splits a statement is parsed in each
//! configuration of the file's groups, every branch instrumented (`tests/if_branches_cli.rs`);
//! what still fails names its construct.

mod common;
use common::*;

const SPLIT: &str = r#"#include <cuda_runtime.h>
struct __align__(16) V { float x, y, z, w; };
void CUDART_CB done(void *data) { }
__global__ void k(int *a, int n) {
  __shared__ __align__(16) float s[64];
  s[threadIdx.x % 64] = 0;
  int v = a[0];
#if USE_X
  if (v > 0) {
#else
  if (v < 0) {
#endif
    a[1] = v;
  }
  a[2] = 3;
}
"#;

#[test]
fn align_callbacks_and_a_split_if_parse_and_build_both_ways() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("app")).unwrap();
    std::fs::write(tmp.path().join("app/k.cu"), SPLIT).unwrap();
    let o = run(
        tmp.path(),
        &["insert", "app", "--out", "out", "--on-parse-error", "fail"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    // Both branches planned: nothing left out, nothing to say.
    assert_eq!(err.matches("warning:").count(), 0, "{err}");
    let tree = tmp.path().join("out/tree");
    let k = std::fs::read_to_string(tree.join("k.cu")).unwrap();
    for access in ["a[0]", "a[1]", "a[2]"] {
        assert!(k.contains(&format!(", {access});")), "{access}:\n{k}");
    }
    assert!(
        !k.contains(", s[wmfix_threadIdx().x % 64])"),
        "shared memory fenced:\n{k}"
    );
    for define in ["-DUSE_X=1", "-DUSE_X=0"] {
        let o = nvcc_command(&tree)
            .args([
                "-c",
                &format!("nvcc -arch=sm_90 -c {define} k.cu -o /dev/null"),
            ])
            .output()
            .unwrap();
        assert!(o.status.success(), "{define}: {}", stderr(&o));
    }
}

#[test]
fn what_still_fails_names_the_construct() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("app")).unwrap();
    std::fs::write(
        tmp.path().join("app/k.cu"),
        "__global__ void k(float **out, int n) {\n  float **rows = new float *[n];\n  out[0] = rows[0];\n}\n",
    )
    .unwrap();
    let o = run(tmp.path(), &["insert", "app", "--out", "out"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(
            "k.cu:2:28: syntax error (`new T *[n]`, which tree-sitter-cuda does not parse)"
        ),
        "{err}"
    );
}

/// Found on cuda-samples (MC_EstimatePi*, vulkanImageCUDA): `typeid` of a type keyword, an
/// explicit instantiation on its own line and Vulkan's calling-convention macros parse (masked),
/// so the kernel after them is instrumented with `--on-parse-error fail`.
#[test]
fn typeid_explicit_instantiations_and_vulkan_macros_parse() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("app")).unwrap();
    std::fs::write(
        tmp.path().join("app/k.cu"),
        "#include <typeinfo>\n#define VKAPI_ATTR\n#define VKAPI_CALL\ntypedef int VkBool32;\ntemplate <class Real> struct E {\n  bool dbl() { return typeid(Real) == typeid(double) || typeid(Real) == typeid(unsigned int); }\n};\ntemplate class E<float>;\ntemplate struct E<double>;\nstatic VKAPI_ATTR VkBool32 VKAPI_CALL cb(int s) { return s; }\n__global__ void k(int *a) { a[threadIdx.x] = 1; }\n",
    )
    .unwrap();
    let o = run(
        tmp.path(),
        &["insert", "app", "--out", "out", "--on-parse-error", "fail"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let k = std::fs::read_to_string(tmp.path().join("out/tree/k.cu")).unwrap();
    assert!(k.contains("WMFIX_FENCE"), "{k}");
    let o = nvcc_command(&tmp.path().join("out/tree"))
        .args(["-c", "nvcc -arch=sm_90 -c k.cu -o /dev/null"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
}

/// `app/` holding `files`, instrumented (`insert`, with `args`), which must succeed: the temporary
/// folder and the instrumented tree.
fn inserted(files: &[(&str, &str)], args: &[&str]) -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let app = tmp.path().join("app");
    std::fs::create_dir(&app).unwrap();
    for (name, text) in files {
        std::fs::create_dir_all(app.join(name).parent().unwrap()).unwrap();
        std::fs::write(app.join(name), text).unwrap();
    }
    let mut all = vec!["insert", "app", "--out", "out"];
    all.extend_from_slice(args);
    let o = run(tmp.path(), &all);
    assert!(o.status.success(), "{}", stderr(&o));
    let tree = tmp.path().join("out/tree");
    (tmp, tree)
}

/// `command` (an nvcc line) in `dir`, which must succeed.
fn builds(dir: &std::path::Path, command: &str) {
    let o = nvcc_command(dir).args(["-c", command]).output().unwrap();
    assert!(o.status.success(), "{command}: {}", stderr(&o));
}

/// Rewrites that broke the build of code that compiles (issue 26): a reference-returning
/// operator in a class, `return typename T::U(...)`, a method called through a pointer.
const BUILD_BREAKERS: &str = r#"struct Vec3 {
  float d[3];
  __device__ float& operator[](int i) { return d[i]; }
};
template <class T> struct W { typedef T type; };
template <class T> __device__ typename W<T>::type conv(const T* p) { return typename W<T>::type(*p); }
struct Obj {
  int n;
  __device__ void clear() { n = 0; }
  Obj* next;
};
template <int... Is> __device__ void unrolled(int* dst, const int* src) {
  int dummy[] = {(dst[Is] = src[Is], 0)...};
  (void)dummy;
}
namespace lib { template <class I> __device__ void advance(I& i, int n) { i += n; } }
namespace rng { __device__ int advance; }
struct Y {
  int v;
  __host__ __device__ constexpr Y operator+() const { return *this; }
};
static_assert((+Y{3}).v == 3, "a constant expression still");
__global__ void k(Vec3* v, Obj* o, int* p) {
  unrolled<0, 1>(p, p + 2);
  int* q = p;
  lib::advance(q, 1);
  q[0] = rng::advance;
  v[0][1] = 2.0f;
  o->clear();
  o->next->clear();
  p[0] = conv(p + 1);
}
"#;

#[test]
fn reference_returns_casts_methods_packs_qualified_calls_and_constexpr_still_build() {
    let (_tmp, tree) = inserted(&[("k.cu", BUILD_BREAKERS)], &[]);
    let k = std::fs::read_to_string(tree.join("k.cu")).unwrap();
    // The reference handed out is not read; `typename` is inside the wrap; a callee is no access,
    // but the pointer read on the way to it (`o->next`) is.
    for text in [
        "float& operator[](int i) { return d[i]; }",
        "return WMFIX_AFTER_RETURN_IF(0, WMFIX_GLOBAL(*p), typename W<T>::type(*p));",
        "  o->clear();\n",
        "o->next->clear(); WMFIX_FENCE_AT(",
        // `Is` outside its pack expansion would not compile: the fence names no address.
        "{(dst[Is] = src[Is], 0)...}; WMFIX_FENCE(",
        // A call of `lib::advance` reads no `__device__` object called `advance`.
        "  lib::advance(q, 1);\n",
        // In the host pass a wrapped value stays a constant expression.
        "return WMFIX_AFTER_RETURN(",
    ] {
        assert!(k.contains(text), "{text}:\n{k}");
    }
    assert!(!k.contains("->clear)"), "{k}");
    builds(&tree, "nvcc -arch=sm_90 -c k.cu -o /dev/null");
}

/// Qualifier and namespace macros (issue 26): learnt from the tree's `#define`s, a name too short
/// to say `__device__` in its place included; a header whose only device code is declared
/// through one is parsed too.
const DEFS: &str = "#pragma once
#define MY_DEVICE __device__ __forceinline__
#define HD __host__ __device__
#define CUTLASS_DEVICE __forceinline__ __device__
#define BEGIN_NS namespace lib {
#define END_NS }
#define KERN __global__
";
const UTIL: &str = "#pragma once
#include \"defs.h\"
BEGIN_NS
MY_DEVICE void publish(int* data, volatile int* flag, int v) {
  data[0] = v;
  *flag = 1;
}
HD int twice(const int* p) { return p[0] * 2; }
template <class T> CUTLASS_DEVICE T load(const T* p, int i) { return p[i]; }
END_NS
";
const KERNEL: &str = "#include \"util.h\"
KERN void k(int* data, volatile int* flag, int* out) {
  lib::publish(data, flag, 7);
  out[0] = lib::twice(data) + lib::load(data, 1);
}
int main() { k<<<1, 1>>>(nullptr, nullptr, nullptr); return 0; }
";

#[test]
fn functions_declared_through_qualifier_macros_are_instrumented_and_build() {
    let files = [("defs.h", DEFS), ("util.h", UTIL), ("k.cu", KERNEL)];
    let (tmp, tree) = inserted(&files, &["--on-parse-error", "fail"]);
    // Counted: publish, twice, load and the kernel k, each with a fence.
    let o = run(tmp.path(), &["insert", "app", "--out", "out", "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (&doc["macro_functions"], &doc["macro_functions_fenced"]),
        (&serde_json::json!(4), &serde_json::json!(4)),
        "{doc}"
    );
    let util = std::fs::read_to_string(tree.join("util.h")).unwrap();
    for fenced in [
        "data[0] = v; WMFIX_FENCE_AT(",
        "*flag = 1; WMFIX_FENCE_AT(",
        "return WMFIX_AFTER_RETURN_IF(3, WMFIX_GLOBAL(p[0]), p[0] * 2);",
        "return WMFIX_AFTER_RETURN(4, p[i]);",
        // The original text around the edits: the macros are still there.
        "\nBEGIN_NS\nMY_DEVICE void publish(",
    ] {
        assert!(util.contains(fenced), "{fenced}:\n{util}");
    }
    let k = std::fs::read_to_string(tree.join("k.cu")).unwrap();
    let entry = "KERN void k(int* data, volatile int* flag, int* out) { WMFIX_KERNEL_ENTRY();";
    assert!(k.contains(entry), "{k}");
    builds(&tree, "nvcc -arch=sm_90 -o k k.cu");
}

/// CCCL's shapes (issue 26): namespace and pragma macros with arguments, indented `#  define`s,
/// the concept emulation of libcu++ (`_CCCL_TEMPLATE`/`_CCCL_REQUIRES`), specifiers before
/// `friend` and braced default arguments (grammar/grammar.js). Each left the file unparsed.
const LIB_CONFIG: &str = "#pragma once
#include <type_traits>
#define LIB_PRAGMA(x) _Pragma(#x)
#if defined(_MSC_VER)
#  define LIB_UNROLL_FULL()
#else
#  define LIB_UNROLL_FULL() LIB_PRAGMA(unroll)
#endif
#define LIB_BEGIN_NAMESPACE(_NS) namespace _NS { inline namespace v1 {
#define LIB_END_NAMESPACE(_NS) } }
#define LIB_BEGIN_NAMESPACE_STD LIB_BEGIN_NAMESPACE(lib::std2)
#define LIB_END_NAMESPACE_STD LIB_END_NAMESPACE(lib::std2)
#if defined(LIB_DOXYGEN)
#  define LIB_API
#else
#  define LIB_API __host__ __device__
#endif
#if __cplusplus >= 202002L
#  define LIB_TEMPLATE(...) template <__VA_ARGS__>
#  define LIB_REQUIRES(...) requires __VA_ARGS__
#  define LIB_AND &&
#else
#  define LIB_TEMPLATE(...) template <__VA_ARGS__
#  define LIB_REQUIRES(...) , bool lib_true_ = true, std::enable_if_t<__VA_ARGS__ && lib_true_, int> = 0>
#  define LIB_AND &&lib_true_, int> = 0, std::enable_if_t<
#endif
";
const LIB_HEADER: &str = "#pragma once
#include \"config.h\"
LIB_BEGIN_NAMESPACE_STD
struct Env { int n = 1; };
struct Box {
  int v;
  [[nodiscard]] LIB_API friend constexpr bool same(const Box* a, const Box* b) { return a->v == b->v; }
};
LIB_TEMPLATE(class T)
LIB_REQUIRES(std::is_integral_v<T> LIB_AND (sizeof(T) == 4))
LIB_API void put(T* p, const Env& env = {}) {
  LIB_UNROLL_FULL()
  for (int i = 0; i < 2; ++i) p[i] = env.n;
}
LIB_END_NAMESPACE_STD
";
const LIB_KERNEL: &str = "#include \"lib.h\"
__global__ void k(int* p, lib::std2::Box* b) { lib::std2::put(p); p[1] = same(b, b + 1); }
int main() { k<<<1, 1>>>(nullptr, nullptr); return 0; }
";

#[test]
fn cccl_shaped_macros_friends_and_braced_defaults_parse_are_fenced_and_build() {
    let files = [
        ("config.h", LIB_CONFIG),
        ("lib.h", LIB_HEADER),
        ("k.cu", LIB_KERNEL),
    ];
    let (_tmp, tree) = inserted(&files, &["--on-parse-error", "fail"]);
    let lib = std::fs::read_to_string(tree.join("lib.h")).unwrap();
    for fenced in [
        "for (int i = 0; i < 2; ++i) { p[i] = env.n; WMFIX_FENCE_AT(",
        "const Box* b) { return WMFIX_AFTER_RETURN_IF(1, WMFIX_GLOBAL(a->v) || WMFIX_GLOBAL(b->v), a->v == b->v); }",
        "a->v == b->v); }",
        "LIB_TEMPLATE(class T)\nLIB_REQUIRES(",
    ] {
        assert!(lib.contains(fenced), "{fenced}:\n{lib}");
    }
    builds(&tree, "nvcc -arch=sm_90 -std=c++17 -o k k.cu");
}

/// stdgpu's shapes (issue 26): a qualifier named by token pasting with the backend the build
/// gives (`-DBACKEND=CUDA`), and the backend's header included through a macro.
const PASTED_PLATFORM: &str = "#pragma once
#define CAT2_DIRECT(A, B) A##B
#define CAT2(A, B) CAT2_DIRECT(A, B)
#define CAT3(A, B, C) CAT2(A, CAT2(B, C))
#define STR_DIRECT(x) #x
#define STR(x) STR_DIRECT(x)
#define BACKEND_HEADER(file) STR(cuda/file)
#include BACKEND_HEADER(platform.h)
#define LIB_DEVICE_ONLY CAT3(LIB_, BACKEND, _DEVICE_ONLY)
";
const PASTED_CUDA: &str = "#pragma once
#define LIB_CUDA_DEVICE_ONLY __device__
#define LIB_OPENMP_DEVICE_ONLY
";
const PASTED_KERNEL: &str = "#include \"platform.h\"
LIB_DEVICE_ONLY void publish(int* data, volatile int* flag) { data[0] = 7; *flag = 1; }
__global__ void k(int* data, volatile int* flag) { publish(data, flag); }
int main() { k<<<1, 1>>>(nullptr, nullptr); return 0; }
";

#[test]
fn qualifiers_made_by_token_pasting_and_computed_includes_are_understood_and_build() {
    let files = [
        ("platform.h", PASTED_PLATFORM),
        ("cuda/platform.h", PASTED_CUDA),
        ("k.cu", PASTED_KERNEL),
    ];
    let (_tmp, tree) = inserted(&files, &["--on-parse-error", "fail"]);
    let k = std::fs::read_to_string(tree.join("k.cu")).unwrap();
    for fenced in ["data[0] = 7; WMFIX_FENCE_AT(", "*flag = 1; WMFIX_FENCE_AT("] {
        assert!(k.contains(fenced), "{fenced}:\n{k}");
    }
    builds(&tree, "nvcc -arch=sm_90 -DBACKEND=CUDA -o k k.cu");
}

#[test]
fn a_macro_defined_outside_the_tree_is_given_on_the_command_line() {
    let k = "GPU_FN void put(int* p) { p[0] = 1; }\n__global__ void k(int* p) { put(p); }\n";
    let (_tmp, tree) = inserted(&[("k.cu", k)], &["--macro", "GPU_FN=__device__"]);
    let k = std::fs::read_to_string(tree.join("k.cu")).unwrap();
    assert!(
        k.contains("GPU_FN void put(int* p) { p[0] = 1; WMFIX_FENCE_AT("),
        "{k}"
    );
    builds(
        &tree,
        "nvcc -arch=sm_90 -DGPU_FN=__device__ -c k.cu -o /dev/null",
    );
}

/// `wmfix build` of an application of `k.cu` and `wmfix.toml` in `tmp/app`: the instrumented k.cu.
fn built_k(tmp: &std::path::Path, k: &str, toml: &str) -> String {
    let app = tmp.join("app");
    std::fs::create_dir_all(&app).unwrap();
    std::fs::write(app.join("k.cu"), k).unwrap();
    std::fs::write(app.join("wmfix.toml"), toml).unwrap();
    let o = wmfix()
        .current_dir(tmp)
        .args(["build", "app", "--out", "out"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::read_to_string(tmp.join("out/tree/k.cu")).unwrap()
}

#[test]
fn a_macro_defined_outside_the_tree_is_given_in_wmfix_toml() {
    let tmp = tempfile::tempdir().unwrap();
    // GPU_FN comes from the build's command line: nothing in the tree defines it.
    let k = built_k(
        tmp.path(),
        "GPU_FN void put(int* p) { p[0] = 1; }\n__global__ void k(int* p) { put(p); }\n",
        "build = \"nvcc -arch=sm_90 -DGPU_FN=__device__ -c k.cu -o k.o\"\nrun = \"true\"\ngpu = false\nmacros = { GPU_FN = \"__device__\" }\n",
    );
    assert!(
        k.contains("GPU_FN void put(int* p) { p[0] = 1; WMFIX_FENCE_AT("),
        "{k}"
    );
}

#[test]
fn qualifier_macros_of_the_builds_flags_and_include_folders_are_learnt() {
    // GPU_FN from the command line's -D, LIB_DEVICE from a header of a -I folder outside the
    // application: neither is defined in the tree nor given in wmfix.toml.
    let tmp = tempfile::tempdir().unwrap();
    let lib = tmp.path().join("lib/include");
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::write(
        lib.join("lib.cuh"),
        "#pragma once\n#define LIB_IMPL __device__ __forceinline__\n#define LIB_DEVICE LIB_IMPL\n",
    )
    .unwrap();
    // The build runs in copies of the folder (out/original, out/tree): the library's folder by
    // its absolute path.
    let k = built_k(
        tmp.path(),
        "#include <lib.cuh>\nGPU_FN void put(int* p) { p[0] = 1; }\nLIB_DEVICE void get(int* p) { p[1] = p[2]; }\n__global__ void k(int* p) { put(p); get(p); }\n",
        &format!(
            "build = \"nvcc -arch=sm_90 -DGPU_FN=__device__ -I{} -c k.cu -o k.o\"\nrun = \"true\"\ngpu = false\n",
            lib.display()
        ),
    );
    assert!(
        k.contains("GPU_FN void put(int* p) { p[0] = 1; WMFIX_FENCE_AT(")
            && k.contains("LIB_DEVICE void get(int* p) { p[1] = p[2]; WMFIX_RACE_LOAD("),
        "{k}"
    );
}

/// Extended lambdas (`[=] __device__ (int i) {...}`, moderngpu's `[=]MGPU_DEVICE(...)`), which the
/// grammar does not parse: their qualifiers are blanked for the parse, their bodies instrumented.
const LAMBDAS: &str = "#define MGPU_DEVICE __device__
template <class F> __global__ void run(F f) { f(threadIdx.x); }
void host(int* p) {
  auto k = [=] __host__ __device__ (int i) { p[i] = i; };
  run<<<1, 32>>>(k);
  auto m = [p]MGPU_DEVICE(int i) { p[i] += 1; };
  run<<<1, 32>>>(m);
}
";

#[test]
fn extended_lambdas_parse_and_their_bodies_are_instrumented() {
    let (tmp, tree) = inserted(&[("k.cu", LAMBDAS)], &["--on-parse-error", "fail"]);
    let k = std::fs::read_to_string(tree.join("k.cu")).unwrap();
    for text in [
        "(int i) { p[i] = i; WMFIX_FENCE_AT(0, p[i]); };",
        "[p]MGPU_DEVICE(int i) { p[i] += 1; WMFIX_FENCE_AT(1, p[i]); };",
    ] {
        assert!(k.contains(text), "{text}:\n{k}");
    }
    let fences = std::fs::read_to_string(tmp.path().join("out/fences.json")).unwrap();
    assert!(fences.contains("\"lambda at line 4\""), "{fences}");
    builds(
        &tree,
        "nvcc -arch=sm_90 --extended-lambda -c k.cu -o /dev/null",
    );
}

/// C++ the base grammar lacks, from CCCL (grammar/grammar.js, issue 26): pointer default template
/// arguments, unnamed pointer parameters with defaults (SFINAE), `using typename`, a pack of
/// bases' operators, temporaries of dependent types, packs of pointers, `>=` in template
/// arguments, `decltype` as a base class and as a temporary's type. Each left the file unparsed.
const GRAMMAR_GAPS: &str = "#include <type_traits>
template <class T> struct Box { using U = T; __device__ T get(const T* p) const { return p[9]; } };
template <typename T, typename It = T*, typename P = void*> struct Span { It begin; P raw; };
template <class T, std::enable_if_t<std::is_integral_v<T>>* = nullptr>
__device__ T first(const T* p, int* = nullptr) { return p[0]; }
template <class B> struct Derived : B {
  using typename B::U;
  using B::get;
  __device__ U second(U* p) { return p[1]; }
};
template <class... Fs> struct Overload : Fs... { using Fs::operator()...; };
template <class T> __device__ T temporaries(T* p) {
  auto a = typename Box<T>::U{p[2]};
  return a + typename Box<T>::U(p[3]);
}
template <class... Ts> __device__ int sum(const Ts*... ps) { return (0 + ... + ps[4]); }
template <int N> using wide = std::enable_if_t<N >= 32, bool>;
struct Empty {};
struct FromDecltype : decltype(Empty{}) {};
__device__ int typed(int* p) { return decltype(p[0] + 0){p[5]}; }
__global__ void k(int* p) {
  p[6] = first(p) + Derived<Box<int>>{}.second(p) + temporaries(p) + sum(p, p) + typed(p);
}
";

#[test]
fn grammar_gaps_of_cccl_parse_are_fenced_and_build() {
    let (_tmp, tree) = inserted(&[("k.cu", GRAMMAR_GAPS)], &["--on-parse-error", "fail"]);
    let k = std::fs::read_to_string(tree.join("k.cu")).unwrap();
    for fenced in [
        "{ return WMFIX_AFTER_RETURN(0, p[9]); }",
        "{ return WMFIX_AFTER_RETURN(1, p[0]); }",
        "{ return WMFIX_AFTER_RETURN(2, p[1]); }",
        "auto a = typename Box<T>::U{p[2]}; WMFIX_FENCE_AT(3, p[2]);",
        "return WMFIX_AFTER_RETURN_IF(4, WMFIX_GLOBAL(p[3]), a + typename Box<T>::U(p[3]));",
        "{ return WMFIX_AFTER_RETURN(5, (0 + ... + ps[4])); }",
        "{ return WMFIX_AFTER_RETURN_IF(6, WMFIX_GLOBAL(p[5]), decltype(p[0] + 0){p[5]}); }",
    ] {
        assert!(k.contains(fenced), "{fenced}:\n{k}");
    }
    builds(&tree, "nvcc -arch=sm_90 -std=c++17 -c k.cu -o /dev/null");
}

/// libcu++'s `try`/`catch` macros (keywords on the host, `if constexpr` blocks on the device) and
/// members declared by a macro whose definition starts with another macro's call
/// (`_LIBCUDACXX_ATOMIC_COMMON_IMPL`): the blocks are instrumented, the declaring call is blanked
/// for the parse (issue 26).
const TRY_MACROS: &str = "#pragma once
struct catch_any {
  template <class T> __host__ __device__ operator T&() const noexcept { return *(T*) this; }
};
#if defined(__CUDA_ARCH__)
#  define _CCCL_TRY if constexpr (true) {
#  define _CCCL_CATCH(...) } else if constexpr (false) { for (__VA_ARGS__ = catch_any{}; false;)
#  define _CCCL_CATCH_ALL } else
#  define _CCCL_CATCH_FALLTHROUGH } else { }
#  define _CCCL_RETHROW
#else
#  define _CCCL_TRY try
#  define _CCCL_CATCH catch
#  define _CCCL_CATCH_ALL catch (...)
#  define _CCCL_CATCH_FALLTHROUGH
#  define _CCCL_RETHROW throw
#endif
#define API __host__ __device__
#define CONSTRAINT()
#define IMPL(_CONST) \\
  CONSTRAINT() \\
  API inline int load() _CONST { return *p; }
";
const TRY_KERNEL: &str = "#include \"lib.h\"
struct Atomic {
  int* p;
  IMPL(const)
};
API int guarded(int* p) {
  _CCCL_TRY
  {
    p[0] = 1;
  }
  _CCCL_CATCH (const int& e)
  {
    p[1] = e;
    _CCCL_RETHROW;
  }
  _CCCL_CATCH_FALLTHROUGH
  _CCCL_TRY { p[2] = 2; } _CCCL_CATCH_ALL { p[3] = 3; }
  return p[4];
}
__global__ void k(int* p) { p[5] = guarded(p) + Atomic{p}.load(); }
";

#[test]
fn try_catch_and_declaring_macros_of_libcudacxx_parse_are_fenced_and_build() {
    let files = [("lib.h", TRY_MACROS), ("k.cu", TRY_KERNEL)];
    let (_tmp, tree) = inserted(&files, &["--on-parse-error", "fail"]);
    let k = std::fs::read_to_string(tree.join("k.cu")).unwrap();
    for fenced in [
        "p[0] = 1; WMFIX_FENCE_AT(",
        "p[1] = e; WMFIX_FENCE_AT(",
        "{ p[2] = 2; WMFIX_FENCE_AT(",
        "{ p[3] = 3; WMFIX_FENCE_AT(",
        "  IMPL(const)\n",
    ] {
        assert!(k.contains(fenced), "{fenced}:\n{k}");
    }
    builds(&tree, "nvcc -arch=sm_90 -std=c++17 -c k.cu -o /dev/null");
}

/// Pointers to members (`R (C::*m)(int)`, `int S::* pm`: the class blanked for the parse), a
/// keyword macro alone in an `#if` group before its block, and `NV_IF_TARGET` branches after
/// comments with commas (issue 26): parsed, fenced, built.
const MEMBER_POINTERS: &str = "#include <nv/target>
template <class F> struct first_arg;
template <class R, class C> struct first_arg<R (C::*)(int)> { using type = C; };
struct S { int v; __device__ int get(int) { return v; } };
template <class R, class C> __device__ R call(C* c, R (C::*m)(int)) { return (c->*m)(0); }
__device__ int field(S* s, int S::* pm) { return s->*pm; }
#define _CCCL_IF_NOT_CONSTEVAL_DEFAULT if (!__builtin_is_constant_evaluated())
__device__ int f(int* p, S* s) {
#if defined(__CUDACC__)
  _CCCL_IF_NOT_CONSTEVAL_DEFAULT
#endif
  {
    p[0] = 1;
  }
  NV_IF_TARGET(NV_IS_HOST,
    // on host, nothing
    (p[1] = 1;),
    // on device, assign
    p[2] = call(s, &S::get) + field(s, &S::v););
  return p[3];
}
__global__ void k(int* p, S* s) { p[4] = f(p, s); }
";

#[test]
fn member_pointers_keyword_macros_in_if_groups_and_commented_branches_build() {
    let (_tmp, tree) = inserted(&[("k.cu", MEMBER_POINTERS)], &["--on-parse-error", "fail"]);
    let k = std::fs::read_to_string(tree.join("k.cu")).unwrap();
    for fenced in [
        "p[0] = 1; WMFIX_FENCE_AT(",
        "(p[1] = 1; WMFIX_FENCE_AT(",
        "field(s, &S::v); WMFIX_FENCE_AT(",
        "return WMFIX_AFTER_RETURN(",
    ] {
        assert!(k.contains(fenced), "{fenced}:\n{k}");
    }
    builds(&tree, "nvcc -arch=sm_90 -std=c++17 -c k.cu -o /dev/null");
}

/// Constructs of public CUDA libraries beyond CCCL (issue 45; `tests/fixtures/beyond_cccl/
/// constructs.cu`): type keywords as macro arguments, `->*` before a lambda, `= delete` on a
/// function template, unnamed enumerations with a base, `enum class [[nodiscard]]`, a test macro
/// before `try`, a macro standing for an enable_if template parameter, `template <> R
/// C::operator()<T>(...)`, a qualified nested template as a return type, `operator++();`,
/// `unsigned(x)`, `T& __restrict__ x`, a macro between a lambda's introducer and its parameters.
/// All parse (`--on-parse-error fail`), every device function's access gets its fence, and the
/// instrumented file builds.
#[test]
fn constructs_beyond_cccl_parse_are_fenced_and_build() {
    let src = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/beyond_cccl/constructs.cu"),
    )
    .unwrap();
    let (_tmp, tree) = inserted(&[("k.cu", &src)], &["--on-parse-error", "fail"]);
    let k = std::fs::read_to_string(tree.join("k.cu")).unwrap();
    for fenced in [
        "p[2] = 3.0f; WMFIX_FENCE_AT(",
        "{ p[0] = 1; WMFIX_FENCE_AT(",
        "d[1] = 2; WMFIX_FENCE_AT(",
        "dst[0] = src[0]; WMFIX_RACE_LOAD(3, src[0]); WMFIX_FENCE_AIM_IF(3, WMFIX_GLOBAL(src[0]), dst[0]);",
        "p[wmfix_threadIdx().x & kMask] = kLanes; WMFIX_FENCE_AT(",
        "p[0] *= 2; WMFIX_FENCE_AT(",
        "p[1] = 3; WMFIX_FENCE_AT(",
        "a[0] = T(1); WMFIX_FENCE_AT(",
        "p[0] = (unsigned(p[1]) << 2); WMFIX_RACE_LOAD(",
        "sum += v[0]; WMFIX_FENCE_AT(",
    ] {
        assert!(k.contains(fenced), "{fenced}:\n{k}");
    }
    builds(
        &tree,
        "nvcc -arch=sm_90 -std=c++17 --extended-lambda -c k.cu -o /dev/null",
    );
}

/// A test macro defined outside the tree before a function try block (`CUB_TEST("t", "[tag]")
/// try {`, issue 45): the body parses as a host function's and its launch is instrumented.
#[test]
fn a_test_macro_before_try_parses_and_builds() {
    let tmp = tempfile::tempdir().unwrap();
    let inc = tmp.path().join("inc");
    std::fs::create_dir(&inc).unwrap();
    std::fs::write(
        inc.join("test_case.h"),
        "#define NAMED_TEST(name, tags) void named_test()\n",
    )
    .unwrap();
    let (_app, tree) = inserted(
        &[(
            "t.cu",
            "__global__ void k(int* p) { p[0] = 1; }\nNAMED_TEST(\"copies\", \"[copy]\") try {\n  int* d = nullptr;\n  k<<<1, 1>>>(d);\n} catch (...) {\n}\n",
        )],
        &["--on-parse-error", "fail"],
    );
    let t = std::fs::read_to_string(tree.join("t.cu")).unwrap();
    assert!(t.contains("wmfix_launch("), "{t}");
    assert!(t.contains("p[0] = 1; WMFIX_FENCE_AT("), "{t}");
    builds(
        &tree,
        &format!(
            "nvcc -arch=sm_90 -include {} -c t.cu -o /dev/null",
            inc.join("test_case.h").display()
        ),
    );
}

use super::*;

fn learnt(text: &str) -> Macros {
    Macros::learn([text], &[])
}

#[test]
fn namespace_macros_defined_outside_the_tree_are_known_by_their_name_on_a_line_alone() {
    let text = "THRUST_NAMESPACE_BEGIN\nnamespace detail\n{\n__device__ int f(int *p) { return p[0]; }\n}\n\
                THRUST_NAMESPACE_END\nint NAMESPACE_END_COUNT = 2;\n";
    let m = learnt(text);
    let get = |n: &str| m.by_name.get(n).copied();
    assert_eq!(get("THRUST_NAMESPACE_BEGIN"), Some(Meaning::Namespace));
    assert_eq!(get("THRUST_NAMESPACE_END"), Some(Meaning::Namespace));
    assert_eq!(get("NAMESPACE_END_COUNT"), None);
    assert!(crate::rewrite::parse::parse(text).root_node().has_error());
    let tree = crate::rewrite::parse::parse_masked(text, &m).tree;
    assert!(
        !tree.root_node().has_error(),
        "{}",
        tree.root_node().to_sexp()
    );
    // A definition in the tree says more than the name.
    let defined = learnt("#define CUB_NAMESPACE_BEGIN __device__\nCUB_NAMESPACE_BEGIN\n");
    assert_eq!(
        defined.by_name.get("CUB_NAMESPACE_BEGIN"),
        Some(&Meaning::Device { host: false })
    );
}

#[test]
fn qualifier_and_namespace_macros_are_learnt_through_each_other() {
    let m = learnt(
        "#define MY_DEVICE __device__ __forceinline__\n\
         #  define HD __host__ __device__\n\
         #define K __global__ __launch_bounds__(256, 2)\n\
         #define INL __forceinline__ __attribute__((always_inline))\n\
         #define CUB_NS_BEGIN namespace cub { inline namespace v2 {\n\
         #define CUB_NS_END } }\n\
         #define BEGIN CUB_NS_BEGIN\n\
         #define DEV2 MY_DEVICE /* again */ inline\n\
         #define WIDTH 32\n\
         #define F(x) __device__ x\n\
         #define LONG __device__ \\\n  __host__\n",
    );
    let get = |n: &str| m.by_name.get(n).copied();
    assert_eq!(get("MY_DEVICE"), Some(Meaning::Device { host: false }));
    assert_eq!(get("HD"), Some(Meaning::Device { host: true }));
    assert_eq!(get("K"), Some(Meaning::Kernel));
    assert_eq!(get("INL"), Some(Meaning::Plain));
    assert_eq!(get("CUB_NS_BEGIN"), Some(Meaning::Namespace));
    assert_eq!(get("CUB_NS_END"), Some(Meaning::Namespace));
    assert_eq!(get("BEGIN"), Some(Meaning::Namespace));
    assert_eq!(get("DEV2"), Some(Meaning::Device { host: false }));
    assert_eq!(get("LONG"), Some(Meaning::Device { host: true }));
    assert_eq!(get("WIDTH"), None);
    assert_eq!(get("F"), None, "function-like macros are no qualifiers");
    assert_eq!(m.calls.get("F"), None, "nor code-free calls");
    assert!(m.named_in("MY_DEVICE int f();") && !m.named_in("MY_DEVICEX int f();"));
}

#[test]
fn function_like_macros_that_expand_to_no_code_or_to_namespaces_are_learnt() {
    let m = learnt(
        "#define CHECK() static_assert(ok(), \"missing )\");\n\
         #define BEGIN_NV(_NS) CHECK() namespace _NS {\n\
         #define BEGIN(_NS) BEGIN_NV(_NS) inline namespace __4 {\n\
         #define END(_NS) } } CHECK()\n\
         #define BEGIN_STD BEGIN(cuda::std)\n\
         #define END_STD END(cuda::std)\n\
         #ifdef _MSC_VER\n#define PRAGMA(x) __pragma(x)\n#else\n#define PRAGMA(x) _Pragma(#x)\n#endif\n\
         #define UNROLL_FULL() PRAGMA(unroll)\n\
         #if OLD\n#define UNROLL_FULL()\n#endif\n\
         #define ASSERT(c) do { if (!(c)) trap(); } while (0)\n\
         #if NDEBUG\n#define CHECKED(c)\n#else\n#define CHECKED(c) ASSERT(c)\n#endif\n\
         #define DEV_CALL(x) __device__ x\n",
    );
    let call = |n: &str| m.calls.get(n).filter(|c| c.every).map(|c| c.meaning);
    assert_eq!(call("CHECK"), Some(Meaning::Plain));
    assert_eq!(call("BEGIN_NV"), Some(Meaning::Namespace));
    assert_eq!(call("BEGIN"), Some(Meaning::Namespace));
    assert_eq!(call("END"), Some(Meaning::Namespace));
    assert_eq!(m.by_name.get("BEGIN_STD"), Some(&Meaning::Namespace));
    assert_eq!(m.by_name.get("END_STD"), Some(&Meaning::Namespace));
    assert_eq!(call("PRAGMA"), Some(Meaning::Plain));
    assert_eq!(call("UNROLL_FULL"), Some(Meaning::Plain));
    // Code in a definition: blanked only where not a statement (`mask.rs`).
    assert_eq!(m.calls.get("ASSERT"), None);
    assert_eq!(
        m.calls.get("CHECKED"),
        Some(&Call {
            meaning: Meaning::Plain,
            every: false
        })
    );
    assert_eq!(m.calls.get("DEV_CALL"), None);
}

#[test]
fn the_concept_emulation_macros_of_libcudacxx_are_learnt_by_their_cxx20_definitions() {
    let m = learnt(
        "#if _CCCL_HAS_CONCEPTS()\n\
         #  define _CCCL_TEMPLATE(...)                template <__VA_ARGS__>\n\
         #  define _CCCL_REQUIRES(...)                requires __VA_ARGS__\n\
         #  define _CCCL_AND                          &&\n\
         #  define _CCCL_TRAILING_REQUIRES_IMPL_(...) requires __VA_ARGS__\n\
         #  define _CCCL_TRAILING_REQUIRES(...)       ->__VA_ARGS__ _CCCL_TRAILING_REQUIRES_IMPL_\n\
         #else\n\
         #  define _CCCL_TEMPLATE(...) template <__VA_ARGS__\n\
         #  define _CCCL_REQUIRES(...) , bool __cccl_true_ = true, __cccl_enable_if_t < __VA_ARGS__ && __cccl_true_, int > = 0 >\n\
         #  define _CCCL_AND           &&__cccl_true_, int > = 0, __cccl_enable_if_t <\n\
         #endif\n\
         #define TWICE(...) __VA_ARGS__ __VA_ARGS__\n",
    );
    let shape = |n: &str| m.shapes.get(n).copied();
    assert_eq!(shape("_CCCL_TEMPLATE"), Some(Shape::TemplateHead));
    assert_eq!(shape("_CCCL_REQUIRES"), Some(Shape::Requires));
    assert_eq!(
        shape("_CCCL_TRAILING_REQUIRES"),
        Some(Shape::TrailingRequires)
    );
    assert_eq!(shape("TWICE"), None);
    assert_eq!(m.operators.get("_CCCL_AND"), Some(&"&&"));
    assert_eq!(m.by_name.get("_CCCL_AND"), None);
}

#[test]
fn a_file_whose_defines_are_all_indented_is_read() {
    let m = learnt("#if A\n#  define RT\n#else\n#    define RT __host__ __device__\n#endif\n");
    assert_eq!(m.by_name.get("RT"), Some(&Meaning::Device { host: true }));
}

#[test]
fn qualifiers_named_by_pasting_mean_what_the_names_they_can_make_mean() {
    let m = learnt(
        "#define CAT2_DIRECT(A, B) A##B\n\
         #define CAT2(A, B) CAT2_DIRECT(A, B)\n\
         #define CAT3(A, B, C) CAT2(A, CAT2(B, C))\n\
         #define STDGPU_HOST_DEVICE CAT3(STDGPU_, STDGPU_BACKEND_MACRO_NAMESPACE, _HOST_DEVICE)\n\
         #define STDGPU_DEVICE_ONLY CAT3(STDGPU_, STDGPU_BACKEND_MACRO_NAMESPACE, _DEVICE_ONLY)\n\
         #define STDGPU_VALUE CAT2(STDGPU_, ANSWER)\n\
         #define STDGPU_CUDA_HOST_DEVICE __host__ __device__\n\
         #define STDGPU_OPENMP_HOST_DEVICE\n\
         #define STDGPU_CUDA_DEVICE_ONLY __device__\n\
         #define STDGPU_ANSWER 42\n",
    );
    let get = |n: &str| m.by_name.get(n).copied();
    assert_eq!(
        get("STDGPU_HOST_DEVICE"),
        Some(Meaning::Device { host: true })
    );
    assert_eq!(
        get("STDGPU_DEVICE_ONLY"),
        Some(Meaning::Device { host: false })
    );
    assert_eq!(
        get("STDGPU_VALUE"),
        None,
        "a pasted name that is no qualifier"
    );
    assert!(m.pasters.contains("CAT3") && !m.pasters.contains("STDGPU_HOST_DEVICE"));
}

#[test]
fn keywords_defined_as_themselves_and_function_like_names_are_not_learnt() {
    let m = learnt(
        "#define extern extern\n#define const const\n#ifdef A\n#define CALL(x) f(x)\n#else\n#define CALL\n#endif\n#define API\n",
    );
    assert_eq!(m.by_name.get("extern"), None);
    assert_eq!(m.by_name.get("const"), None);
    assert_eq!(m.by_name.get("CALL"), None);
    assert_eq!(m.by_name.get("API"), Some(&Meaning::Plain));
}

#[test]
fn a_device_definition_wins_over_an_empty_one_and_the_config_adds_its_own() {
    let text = "#ifdef __CUDACC__\n#define HD __host__ __device__\n#else\n#define HD\n#endif\n";
    assert_eq!(
        learnt(text).by_name.get("HD"),
        Some(&Meaning::Device { host: true })
    );
    let m = Macros::learn(
        ["int x;"],
        &[("GPU_FN".to_string(), "__device__".to_string())],
    );
    assert_eq!(
        m.by_name.get("GPU_FN"),
        Some(&Meaning::Device { host: false })
    );
}

#[test]
fn macros_that_declare_after_attributes_and_other_macro_calls_are_learnt_as_declaring() {
    // libcu++'s atomics and simd math, CUB's test launch wrappers: the definition's code starts
    // with a call of another macro or an attribute.
    let m = learnt(
        "#define API __host__ __device__\n\
         #define IMPL(_CONST) \\\n  CONSTRAINT() \\\n  API inline bool is_lock_free() const _CONST { return true; }\n\
         #define MATH(_NAME) \\\n  _CCCL_TEMPLATE(typename _Vp) \\\n  _CCCL_REQUIRES(ok<_Vp>) \\\n  [[nodiscard]] API _Vp _NAME(const _Vp& x) { return x; }\n\
         #define WRAPPER(API_, NAME, PARAMS) \\\n  DECLARE_INVOCABLE(API_, NAME, ESCAPE(template <PARAMS>)); \\\n  template <PARAMS, class... As> \\\n  static void NAME(As... args) { launch(args...); }\n\
         #define CALLS(x) FOO(x) + bar(x) { }\n\
         #define LOWER(x) foo(x) template <class T> struct S { };\n",
    );
    let every = |n: &str| m.calls.get(n).filter(|c| c.every).map(|c| c.meaning);
    for name in ["IMPL", "MATH", "WRAPPER"] {
        assert_eq!(every(name), Some(Meaning::Plain), "{name}");
    }
    // Not declarations after the calls; a lower-case call is no macro's.
    assert_eq!(m.calls.get("CALLS"), None);
    assert_eq!(m.calls.get("LOWER"), None);
}

#[test]
fn commas_and_quotes_in_comments_are_not_code() {
    let text = "f(a, // b, don't\n c /* d, ' */, e)";
    let mut commas = Vec::new();
    outside_literals(text, 0, text.len(), |i, b| {
        if b == b',' {
            commas.push(i);
        }
        true
    });
    assert_eq!(commas, vec![3, text.rfind(',').unwrap()]);
    // thrust's assign_value: a comment with a comma before a branch of `NV_IF_TARGET`.
    let src = "__device__ void f(int* d, int* s) {\n  NV_IF_TARGET(NV_IS_HOST,\n    // on host, copy\n    (g(d, s);),\n    // on device, assign\n    *d = *s;);\n}\n";
    let m = crate::rewrite::mask::nv_target(src).unwrap();
    assert!(m.contains("{g(d, s);}"), "{m}");
    let parsed = crate::rewrite::parse::parse(&m);
    assert!(crate::rewrite::parse::first_error(&parsed).is_none(), "{m}");
}

use super::*;

#[test]
fn computed_includes_are_blanked() {
    let t =
        "#include <a.h>\n#include BACKEND_HEADER(atomic.cuh)\n  # include H(x)\n#include NAME\n";
    let m = computed_includes(t).unwrap();
    assert_eq!(m.len(), t.len());
    assert_eq!(
        m,
        "#include <a.h>\n                                   \n                \n#include NAME\n"
    );
    assert_eq!(computed_includes("#include \"a.h\"\n"), None);
}

#[test]
fn concept_emulation_macros_become_cxx20_templates_and_constraints() {
    let defs = "#define _CCCL_TEMPLATE(...) template <__VA_ARGS__>\n#define _CCCL_REQUIRES(...) requires __VA_ARGS__\n#define _CCCL_AND &&\n#define _CCCL_TRAILING_REQUIRES_IMPL_(...) requires __VA_ARGS__\n#define _CCCL_TRAILING_REQUIRES(...) ->__VA_ARGS__ _CCCL_TRAILING_REQUIRES_IMPL_\n";
    let m = crate::rewrite::macros::Macros::learn([defs], &[]);
    let t = "_CCCL_TEMPLATE(class T)\n_CCCL_REQUIRES(A<T> _CCCL_AND B<T>)\n__device__ void f(T *p) { p[0] = 1; }\n\
             struct S { auto g() _CCCL_TRAILING_REQUIRES(int)(C<int>) { return 0; } };\n";
    let (masked, _) = macros(t, &m).unwrap();
    assert_eq!(masked.len(), t.len());
    assert!(
        masked.starts_with("template<      class T>\nrequires      (A<T> &&        B<T>)\n"),
        "{masked}"
    );
    assert!(masked.contains("auto g() ->   "), "{masked}");
    assert!(masked.contains("   int          { return 0; }"), "{masked}");
    assert!(
        crate::rewrite::parse::first_error(&crate::rewrite::parse::parse(&masked)).is_none(),
        "{masked}"
    );
}

#[test]
fn string_macros_beside_string_literals_become_string_literals() {
    let m = crate::rewrite::macros::Macros::default();
    let t = "__device__ void f(long n) { printf(\"%\" PRIINDEX \" items\\n\", n); }\nconst wchar_t *w = L\"x\";\nextern \"C\" MY_API void g();\n#include \"k.h\"\nKERN void k();\nTAIL\n#include \"t.h\"\n#define FMT \"%\" PRIINDEX\n";
    let (masked, _) = macros(t, &m).unwrap();
    assert_eq!(masked.len(), t.len());
    assert!(
        masked.contains("printf(\"%\" \"      \" \" items"),
        "{masked:?}"
    );
    assert!(
        masked.contains("L\"x\""),
        "an encoding prefix stays: {masked:?}"
    );
    assert!(
        masked.contains("extern \"C\" MY_API void g();"),
        "{masked:?}"
    );
    assert!(
        masked.ends_with("#define FMT \"%\" PRIINDEX\n"),
        "{masked:?}"
    );
}

#[test]
fn sfinae_macros_in_a_template_head_become_one_unnamed_type_parameter() {
    let defs = "#define OVERLOAD_IF(...) \\\n    typename D = void, std::enable_if_t<__VA_ARGS__, D>* = nullptr\n";
    let m = crate::rewrite::macros::Macros::learn([defs], &[]);
    let t = "template <typename T, OVERLOAD_IF(std::is_integral_v<T>)>\n__device__ T f(T x);\n";
    let (masked, _) = macros(t, &m).unwrap();
    assert_eq!(masked.len(), t.len());
    assert!(
        masked.starts_with("template <typename T, typename "),
        "{masked:?}"
    );
    assert!(masked.contains(" >\n__device__ T f(T x);"), "{masked:?}");
}

#[test]
fn calls_of_macros_that_declare_with_code_are_blanked() {
    let defs = "#define BUILD(t, n) \\\n  template <> struct S<t> { \\\n    __device__ t &operator*() { extern __shared__ t n[]; return *n; } \\\n  }\n#define ADD(a) a + 1\n";
    let m = crate::rewrite::macros::Macros::learn([defs], &[]);
    let t = "BUILD(int, s_int);\nBUILD(unsigned int, s_uint);\n__device__ int f(int x) { return ADD(x); }\n";
    let (masked, _) = macros(t, &m).unwrap();
    assert_eq!(masked.len(), t.len());
    assert!(masked.starts_with("                 ;\n"), "{masked:?}");
    // A macro of an expression stays: its uses are code.
    assert!(masked.contains("return ADD(x);"), "{masked:?}");
}

#[test]
fn code_free_calls_are_blanked_with_their_arguments_across_lines() {
    let defs = "#define BEGIN(_NS) namespace _NS {\n#define END(_NS) }\n#define UNROLL() _Pragma(\"unroll\")\n#define NS BEGIN(a::b)\n";
    let m = crate::rewrite::macros::Macros::learn([defs], &[]);
    let t = "NS\nBEGIN(\n  c)\n__device__ void f(int *p) {\n  UNROLL()\n  for (;;) p[0] = 1;\n}\nEND(c) END(a::b)\n";
    let (masked, _) = macros(t, &m).unwrap();
    assert_eq!(masked.len(), t.len());
    let spaces = |s: &str| s.replace(|c: char| c != '\n', " ");
    let mut want = t.to_string();
    for used in ["NS", "BEGIN(\n  c)", "UNROLL()", "END(c) END(a::b)"] {
        want = want.replacen(used, &spaces(used), 1);
    }
    assert_eq!(masked, want);
    // A macro with code in one definition: blanked where it is no statement.
    let m = crate::rewrite::macros::Macros::learn(
        ["#if A\n#define CHECKED(c)\n#else\n#define CHECKED(c) assert(c)\n#endif\n"],
        &[],
    );
    let t = "CHECKED(p[0]);\nCHECKED(x)\nint y;\n";
    assert_eq!(
        macros(t, &m).unwrap().0,
        "CHECKED(p[0]);\n          \nint y;\n"
    );
    // Not on a directive line, and not a name without its parentheses.
    let (masked, _) =
        macros("#define X BEGIN(q)\nint BEGIN;\n", &m).map_or(("".into(), vec![]), |x| x);
    assert!(
        masked.is_empty() || masked.contains("BEGIN(q)") && masked.contains("int BEGIN;"),
        "{masked}"
    );
}

#[test]
fn macros_opening_a_body_become_a_function_header() {
    let t = "TEMPLATE_TEST_CASE_SIG(\"t\", \"\",\n  ((typename K), K), (int))\n{\n  f();\n}\n";
    let m = body_macros(t).unwrap();
    assert_eq!(m.len(), t.len());
    assert!(m.starts_with("void m()"), "{m}");
    assert_eq!(m.lines().count(), t.lines().count());
    assert!(
        m.ends_with("\n{\n  f();\n}\n") && !m.contains("typename"),
        "{m}"
    );
    assert_eq!(
        body_macros("TEST_F(Fix, t) {}\n").unwrap(),
        "void m()       {}\n"
    );
    // In a body: a section macro of string arguments becomes `if (1)`.
    let t = "void f() {\n  SECTION(\"a \\\"b\\\"\", \"\") {\n    g();\n  }\n  CHECK(x) {}\n}\n";
    let m = body_macros(t).unwrap();
    assert_eq!(m.len(), t.len());
    assert!(m.contains("\n  if (1)  "), "{m}");
    assert!(m.contains("CHECK(x) {}"), "{m}");
    // Not before a `;`, not a short or lower-case name, not a macro defining device code.
    for left in [
        "CUCO_DEFINE_TYPE(kb, double);\n",
        "TEST(a) {}\n",
        "my_macro(a) {}\n",
        "#define KERNEL_OF(n) __global__ void n()\nKERNEL_OF(k) { }\n",
    ] {
        assert_eq!(body_macros(left), None, "{left}");
    }
}

#[test]
fn explicit_instantiations_are_blanked() {
    let t = "template <class T> struct P {};\ntemplate class P<float>;\n";
    let m = explicit_instantiations(t).unwrap();
    assert_eq!(
        m,
        format!("template <class T> struct P {{}};\n{}\n", " ".repeat(24))
    );
    assert_eq!(explicit_instantiations("template class P<f(1)>;"), None);
}

#[test]
fn typeid_of_a_type_keyword_is_masked() {
    let t = "if (typeid(Real) == typeid(unsigned int)) {}";
    let m = typeid_types(t).unwrap();
    assert_eq!(m, "if (typeid(Real) == typeid(_           )) {}");
    assert_eq!(m.len(), t.len());
    assert_eq!(typeid_types("typeid(x)"), None);
}

#[test]
fn attributes_are_blanked_keeping_offsets() {
    let src = "struct __align__(16) V {};\nvoid CUDART_CB cb();\nint my__align__x;\n";
    let (m, first) = attributes(src);
    assert_eq!(m.len(), src.len());
    assert_eq!(first, Some("__align__"));
    assert_eq!(
        m,
        "struct               V {};\nvoid           cb();\nint my__align__x;\n"
    );
}

#[test]
fn preprocessed_qualifiers_are_written_back() {
    let src = "# 3 \"k.cu\"\n__attribute__((device)) __inline__ __attribute__((always_inline)) void f();\n";
    let m = line_markers(&gnu_attributes(src));
    assert_eq!(m.len(), src.len());
    assert_eq!(
        m.split_whitespace().collect::<Vec<_>>(),
        ["__device__", "void", "f();"]
    );
}

#[test]
fn only_the_first_branch_of_each_group_is_kept() {
    let src = "a\n#if X\nb {\n#elif Y\nc {\n#else \\\n more\nd {\n#endif\ne }\n";
    let (m, first) = first_branches(src);
    assert_eq!(m.len(), src.len());
    assert_eq!(first, Some(src.find("#elif").unwrap()));
    let lines: Vec<&str> = m.lines().map(str::trim_end).collect();
    assert_eq!(lines, ["a", "", "b {", "", "", "", "", "", "", "e }"]);
}

#[test]
fn nested_groups_inside_a_blanked_branch_stay_blanked() {
    let src = "#ifdef A\nx\n#else\n#if B\ny\n#endif\nz\n#endif\nw\n";
    let (m, _) = first_branches(src);
    let lines: Vec<&str> = m.lines().map(str::trim_end).collect();
    assert_eq!(lines, ["", "x", "", "", "", "", "", "", "w"]);
}

#[test]
fn nv_target_branches_become_blocks_and_their_code_stays() {
    let t = "__device__ void f(int *p) {\n  NV_IF_TARGET(NV_IS_DEVICE, (p[0] = 1; g(p, 2);), (p[1] = 2;));\n  NV_DISPATCH_TARGET(\n    NV_IS_HOST, (h(\"a,b\");),\n    NV_IS_DEVICE, (p[2] = 3;))\n}\n";
    let masked = nv_target(t).unwrap();
    assert_eq!(masked.len(), t.len());
    let squeezed: String = masked.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(
        squeezed,
        "__device__ void f(int *p) { {p[0] = 1; g(p, 2);} {p[1] = 2;} ; {h(\"a,b\");} {p[2] = 3;} }"
    );
    assert!(nv_target("__device__ void g() {}\n").is_none());
}

#[test]
fn conversion_operators_called_by_name_become_one_identifier_and_parse() {
    let t = "template <typename T>\n__device__ atomic<T>::operator T() const\n{\n    return _value_ref.operator T();\n}\n\
             __device__ bool f(R* r) { return !operator bool() || r->operator  bool(); }\n";
    let m = conversion_calls(t).unwrap();
    assert_eq!(m.len(), t.len());
    // The declaration stays; the three calls change.
    assert!(m.contains("atomic<T>::operator T() const"), "{m}");
    assert!(m.contains("_value_ref.operator_T()"), "{m}");
    assert!(m.contains("!operator_bool()"), "{m}");
    assert!(m.contains("r->operator__bool()"), "{m}");
    assert!(crate::rewrite::parse::parse(t).root_node().has_error());
    let tree = crate::rewrite::parse::parse_masked(t, &Default::default()).tree;
    assert!(
        !tree.root_node().has_error(),
        "{}",
        tree.root_node().to_sexp()
    );
    assert!(conversion_calls("S::operator T() const;\nx = a.operator+(b);\n").is_none());
}

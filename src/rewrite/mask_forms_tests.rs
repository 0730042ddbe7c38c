use super::*;
use crate::rewrite::parse::{first_error, parse, parse_masked};

fn same_shape(a: &str, b: &str) {
    assert_eq!(a.len(), b.len());
    let lines = |s: &str| s.match_indices('\n').map(|(i, _)| i).collect::<Vec<_>>();
    assert_eq!(lines(a), lines(b));
}

/// libcu++'s cp.async: a raw string in a statement macro's branch, whose `(` the macro mask
/// reads as code unless the literal is masked first.
const CP_ASYNC: &str = r#"__device__ void f(int* p) {
  NV_IF_ELSE_TARGET(NV_PROVIDES_SM_80,
    (asm volatile(R"XYZ(
    { (
      .reg .pred p;

    }
  )XYZ" :: "l"(p) : "memory");),
    (p[1] = 0;));
  p[0] = 1;
}
"#;

#[test]
fn a_raw_string_becomes_a_plain_string_a_line() {
    let m = raw_strings(CP_ASYNC).unwrap();
    same_shape(CP_ASYNC, &m);
    assert!(m.contains("(asm volatile(\"    \"\n\"     \"\n"), "{m}");
    assert!(first_error(&parse_masked(CP_ASYNC, &Default::default()).tree).is_none());
    // Without the mask (the literal no longer raw to it) the parse fails.
    let unmasked = CP_ASYNC.replace("R\"XYZ", "R \"XYZ");
    assert!(first_error(&parse_masked(&unmasked, &Default::default()).tree).is_some());
    // Prefixed, empty-delimited, one-line; and no raw string at all.
    let one = "auto s = u8R\"(a)b)\"; auto t = LR\"x(y)x\";\n";
    let m = raw_strings(one).unwrap();
    assert_eq!(m, "auto s = \"        \"; auto t = \"       \";\n");
    assert_eq!(raw_strings("char R = 'a'; auto s = BAR\"(\";\n"), None);
    assert_eq!(raw_strings("int x = 1;\n"), None);
}

#[test]
fn a_concept_defined_through_a_macro_is_blanked_with_its_template_head() {
    let src = "template <class _Iter>\n_CCCL_CONCEPT __decrementable = _CCCL_REQUIRES_EXPR((_Iter), _Iter __iter)(\n  requires(__is_same(decltype(--__iter), _Iter&)));\n__device__ void g(int* p) { p[0] = 1; }\n";
    assert!(
        first_error(&parse(src)).is_some(),
        "the grammar alone fails"
    );
    let m = concept_definitions(src).unwrap();
    same_shape(src, &m);
    assert!(m.starts_with("                      \n "), "{m:?}");
    assert!(m.contains("__device__ void g(int* p) { p[0] = 1; }"));
    assert!(first_error(&parse(&m)).is_none(), "{m}");
    // The macro's own definition and a use in an expression are left alone.
    assert_eq!(
        concept_definitions("#define _CCCL_CONCEPT constexpr bool\n"),
        None
    );
    assert_eq!(concept_definitions("bool b = _CCCL_CONCEPT(x);\n"), None);
}

#[test]
fn a_concept_fragment_invocation_is_blanked_with_its_template_head() {
    // libcu++'s form before C++20, in the `#else` branch of `_CCCL_HAS_CONCEPTS()`.
    let src = "template <class _Tp>\n_CCCL_CONCEPT_FRAGMENT(\n  __unqualified_begin_,\n  requires(_Tp&& __t)(requires(!__member_begin<_Tp>),\n                      requires(__can_borrow<_Tp>)));\n__device__ void g(int* p) { p[0] = 1; }\n";
    assert!(
        first_error(&parse(src)).is_some(),
        "the grammar alone fails"
    );
    let m = concept_definitions(src).unwrap();
    same_shape(src, &m);
    assert!(m.contains("__device__ void g(int* p) { p[0] = 1; }"));
    assert!(!m.contains("_CCCL_CONCEPT_FRAGMENT"), "{m}");
    assert!(first_error(&parse(&m)).is_none(), "{m}");
    // Without a `;` after it, and the macro's own #define left alone.
    let bare = "template <class _Tp>\n_CCCL_CONCEPT_FRAGMENT(__f_, requires(_Tp t)(requires(!c<_Tp>)))\nint x;\n";
    let m = concept_definitions(bare).unwrap();
    assert!(m.ends_with("int x;\n") && !m.contains("requires"), "{m:?}");
    assert_eq!(
        concept_definitions("#define _CCCL_CONCEPT_FRAGMENT(_NAME, ...) x\n"),
        None
    );
}

#[test]
fn an_if_consteval_macro_before_a_block_is_an_if_and_its_block_is_instrumented_code() {
    let src = "__device__ int f(int* p) {\n  _CCCL_IF_NOT_CONSTEVAL_DEFAULT\n  {\n    if constexpr (sizeof(int) <= 8) { p[0] = 1; }\n  }\n  return p[1];\n}\n";
    assert!(
        first_error(&parse(src)).is_some(),
        "the grammar alone fails"
    );
    let m = keyword_macros(src).unwrap();
    same_shape(src, &m);
    assert!(
        m.contains("\n  if (1)                        \n  {"),
        "{m:?}"
    );
    assert!(first_error(&parse_masked(src, &Default::default()).tree).is_none());
    // Its definition is left alone.
    assert_eq!(
        keyword_macros("#define _CCCL_IF_CONSTEVAL if consteval\n"),
        None
    );
    // Alone in an `#if` group before its block (libcu++'s overflow checks): each group's first
    // branch then parses.
    let src = "__device__ int f(int* p) {\n#if CUDA\n  _CCCL_IF_NOT_CONSTEVAL_DEFAULT // host\n#endif // CUDA\n  /* x */ {\n    p[0] = 1;\n  }\n  return p[1];\n}\n";
    let m = keyword_macros(src).unwrap();
    assert!(
        m.contains("\n  if (1)                         // host\n#endif"),
        "{m:?}"
    );
    let first = crate::rewrite::mask::first_branches(&m).0;
    assert!(first_error(&parse(&first)).is_none(), "{first}");
    assert!(first_error(&parse_masked(src, &Default::default()).tree).is_none());
    assert_eq!(keyword_macros("_CCCL_IF_CONSTEVAL\n#define X {\n"), None);
}

/// libcu++'s parallel algorithms: a `try`/`catch` through macros (`if constexpr (true) {` and
/// `} else ... {` without exceptions), the blocks code of the function.
const TRY_CATCH: &str = "__host__ __device__ int f(int* p) {
  _CCCL_TRY
  {
    return p[0];
  }
  _CCCL_CATCH (const ::cuda::cuda_error& __err)
  {
    if (__err.status() == 2) { _CCCL_THROW(::std::bad_alloc); }
    else { _CCCL_RETHROW; }
  }
  _CCCL_CATCH_FALLTHROUGH
  _CCCL_TRY { p[1] = 1; } _CCCL_CATCH_ALL { p[2] = 2; }
  return 0;
}
";

#[test]
fn try_and_catch_macros_are_read_as_the_keywords_and_their_blocks_are_code() {
    assert!(
        first_error(&parse(TRY_CATCH)).is_some(),
        "the grammar alone fails"
    );
    let m = keyword_macros(TRY_CATCH).unwrap();
    same_shape(TRY_CATCH, &m);
    for read in [
        "\n  try      \n  {",
        "\n  catch       (const ::cuda::cuda_error& __err)",
        "{ throw        ; }",
        "\n                         \n  try       { p[1] = 1; } catch (...)     { p[2] = 2; }",
    ] {
        assert!(m.contains(read), "{read:?} in {m:?}");
    }
    assert!(first_error(&parse_masked(TRY_CATCH, &Default::default()).tree).is_none());
    // A use that is no statement's keyword is left alone.
    assert_eq!(keyword_macros("bool b = _CCCL_TRY + 1;\n"), None);
}

#[test]
fn the_class_of_a_pointer_to_member_is_blanked() {
    let src = "template <class R, class C> struct M<R C::*> {};\ntemplate <class R, class T> __device__ M<R T::*> mem_fn(R ns::T::* pm) { return pm; }\nstruct F { int (T::*p_)(); int* q; };\n// all of cub::Device::* here\n__device__ void g(F* f) { f->q[0] = 1; }\n";
    assert!(
        first_error(&parse(src)).is_some(),
        "the grammar alone fails"
    );
    let m = member_pointers(src).unwrap();
    same_shape(src, &m);
    for read in [
        "M<R    *>",
        "mem_fn(R        * pm)",
        "int (   *p_)();",
        "cub::Device::* here",
    ] {
        assert!(m.contains(read), "{read:?} in {m:?}");
    }
    assert!(first_error(&parse_masked(src, &Default::default()).tree).is_none());
    assert_eq!(member_pointers("a::b; 1.*p; x * p; \"C::*\";\n"), None);
    let uses = "__device__ int g(S* c, S s, int (S::*m)(int), int S::* pm) { return (c->*m)(0) + s.*pm + (s).*pm; }\n";
    let m = member_pointers(uses).unwrap();
    same_shape(uses, &m);
    assert!(m.contains("(c-> m)(0) + s. pm + (s). pm"), "{m}");
    assert!(first_error(&parse_masked(uses, &Default::default()).tree).is_none());
}

#[test]
fn a_statement_macros_last_branch_without_parentheses_is_a_block() {
    let src = "__device__ void f(int* p) {\n  if (p) {\n    NV_IF_TARGET(NV_PROVIDES_SM_90, p[0] = g(&p[1]););\n  }\n}\n";
    let m = crate::rewrite::mask::nv_target(src).unwrap();
    same_shape(src, &m);
    assert!(m.contains("{ p[0] = g(&p[1]);};"), "{m:?}");
    assert!(first_error(&parse_masked(src, &Default::default()).tree).is_none());
}

#[test]
fn a_lambda_after_arrow_star_is_an_operand() {
    let src =
        "__device__ void f(ctx_t ctx, int* d) {\n  ctx.task(d)->*[&](int* p) { p[0] = 1; };\n}\n";
    let m = member_pointers(src).unwrap();
    same_shape(src, &m);
    assert!(m.contains("ctx.task(d)|  [&](int* p)"), "{m}");
    assert!(first_error(&parse(src)).is_some());
    assert!(first_error(&parse_masked(src, &Default::default()).tree).is_none());
}

#[test]
fn nested_template_closers_are_blanked_innermost_first() {
    let src = "s::P<s::U<X<Y>>, int> f(T a);\nusing Z = cuda::zip<cuda::zip<cuda::zip<F>>>;\n";
    let m = nested_template_closers(src).unwrap();
    same_shape(src, &m);
    // Only lists closed by `>>`: `s::U<X   >` is closed by `>,` once `<Y>` is gone.
    assert!(m.starts_with("s::P<s::U<X   >, int> f(T a);"), "{m}");
    assert!(m.contains("= cuda::zip<cuda::zip              >;"), "{m}");
    assert!(first_error(&parse(src)).is_some());
    assert!(first_error(&parse_masked(src, &Default::default()).tree).is_none());
    // Shifts, `>>=`, `::template` and argument lists with expressions are left alone.
    for kept in [
        "x = a<b>>2;\n",
        "x >>= 1;\n",
        "typename T::template R<A>>;\n",
        "A<B<(1 + 2)>>;\n",
    ] {
        assert_eq!(nested_template_closers(kept), None, "{kept}");
    }
}

#[test]
fn statement_macro_calls_without_a_semicolon_are_blanked() {
    let src = "#define INST(T, I) template void f<T, I>(T*, I);\nINST(float, int)\nINST(double, int)\n__device__ void g(int* p) {\n  LOG_START(\"g\", LEVEL)\n  p[0] = 1;\n  CHECK(p[1])\n  p[2] = 2;\n}\n";
    let m = statement_macro_calls(src).unwrap();
    same_shape(src, &m);
    let lines: Vec<&str> = m.lines().collect();
    for blanked in [1, 2, 4] {
        assert!(lines[blanked].trim().is_empty(), "{blanked}: {m}");
    }
    assert!(lines[0].starts_with("#define INST"), "{m}");
    // An access in the arguments keeps the call.
    assert!(m.contains("CHECK(p[1])"), "{m}");
    // Followed by `{` (a macro that opens a function) or with a `;`: kept.
    assert_eq!(statement_macro_calls("KERNEL(k)\n{\n}\nLOG(1);\n"), None);
}

//! Parsing CUDA with tree-sitter, and finding the first syntax error.

use crate::rewrite::macros::Macros;
use crate::rewrite::{mask, mask_forms};
use std::ops::ControlFlow;
use std::ops::Range;
use tree_sitter::{Node, Parser, Point, Tree};

/// Parses `text`. `#pragma` lines are blanked (same length, newlines kept) in the copy that is
/// parsed, because tree-sitter cannot attach `if (c)\n#pragma unroll\nfor ...` to the `if`;
/// byte offsets are unchanged, so edits still apply to the original text.
pub fn parse(text: &str) -> Tree {
    parse_blanked(&blank_pragmas(text))
}

/// A tree parsed from a masked text (`mask.rs`), and what was masked.
pub struct Masked {
    pub tree: Tree,
    /// The first attribute blanked (`__align__`, `CUDART_CB`), which then parses.
    pub attribute: Option<&'static str>,
    /// Where the first `#else`/`#elif` branch was left out because the text parses only with
    /// each `#if` group's first branch (a group that splits a statement).
    pub first_branch_only: Option<usize>,
    /// Whether the tree is of the text with each `#if` group's first branch alone (and no
    /// directive lines), which parses better: with or without an `#else` left out.
    pub first_branches: bool,
    /// Uses of device qualifier macros blanked without a qualifier in their place.
    pub qualified: Vec<mask::Qualified>,
}

/// A text with the masks that need no parse applied: what is parsed, whole or in pieces
/// (`pieces.rs`), and what was masked.
pub struct MaskedText<'a> {
    pub text: std::borrow::Cow<'a, str>,
    /// The first attribute blanked (`__align__`, `CUDART_CB`), which then parses.
    pub attribute: Option<&'static str>,
    /// Uses of device qualifier macros blanked without a qualifier in their place.
    pub qualified: Vec<mask::Qualified>,
}

/// Parses `text` as `parse` does, with the learnt macros (`macros.rs`), the qualifiers of
/// extended lambdas and the attributes the grammar lacks masked; when that leaves a syntax
/// error, again with the macros that open a body masked (`mask::body_macros`), then with nested
/// template argument lists closed by `>>` blanked, then with statements of macro calls without a
/// `;` blanked, each kept if that leaves fewer bytes unparsed; and, when the file has `#if`
/// groups, with only each group's first branch, kept if it has fewer unparsed bytes.
pub fn parse_masked(text: &str, macros: &Macros) -> Masked {
    parse_whole(&mask(text, macros))
}

/// The masks retried, in turn, where a parse leaves a syntax error: macros that open a body
/// (test-case macros), nested template argument lists closed by `>>`, statements of macro calls
/// without a `;`; each kept where it leaves fewer bytes unparsed.
const RETRIES: [fn(&str) -> Option<String>; 3] = [
    mask::body_macros,
    mask_forms::nested_template_closers,
    mask_forms::statement_macro_calls,
];

/// `parse` of `text` and then of each of `RETRIES` that leaves fewer bytes unparsed.
fn with_retries<T>(text: &str, parse: impl Fn(&str) -> T, tree: impl Fn(&T) -> &Tree) -> T {
    let mut parsed = parse(text);
    let mut current = std::borrow::Cow::Borrowed(text);
    for retry in RETRIES {
        if first_error(tree(&parsed)).is_none() {
            break;
        }
        if let Some(m) = retry(&current) {
            let again = parse(&m);
            if unparsed(tree(&again)) < unparsed(tree(&parsed)) {
                (current, parsed) = (m.into(), again);
            }
        }
    }
    parsed
}

/// `parse_masked` of a text already masked.
pub fn parse_whole(m: &MaskedText) -> Masked {
    let (tree, first_branches, first_branch_only) =
        with_retries(&m.text, branches_parsed, |p| &p.0);
    Masked {
        tree,
        attribute: m.attribute,
        first_branch_only,
        first_branches,
        qualified: m.qualified.clone(),
    }
}

/// One configuration's text of a file's `#if` groups (`branches.rs`: directive lines and the
/// branches it leaves out blanked) parsed as `parse_whole` parses a text: with the masks of
/// `RETRIES` kept where they leave fewer bytes unparsed.
pub fn parse_config(text: &str) -> Tree {
    with_retries(text, parse_blanked, |t| t)
}

/// `text` with the masks of `parse_masked` that need no parse.
pub fn mask<'a>(text: &'a str, macros: &Macros) -> MaskedText<'a> {
    let mut pragmas = blank_pragmas(text);
    let mut qualified = Vec::new();
    // Before the macro masks, which would read a raw string's delimiter (`R"XYZ(`) as a macro
    // beside a string literal.
    if pragmas.contains("R\"")
        && let Some(m) = mask_forms::raw_strings(&pragmas)
    {
        pragmas = m.into();
    }
    if pragmas.contains("_CONCEPT")
        && let Some(m) = mask_forms::concept_definitions(&pragmas)
    {
        pragmas = m.into();
    }
    if (pragmas.contains("::*") || pragmas.contains("->*") || pragmas.contains(".*"))
        && let Some(m) = mask_forms::member_pointers(&pragmas)
    {
        pragmas = m.into();
    }
    if (pragmas.contains("CONSTEVAL") || pragmas.contains("_CCCL_TRY"))
        && let Some(m) = mask_forms::keyword_macros(&pragmas)
    {
        pragmas = m.into();
    }
    if let Some((m, q)) = mask::macros(&pragmas, macros) {
        pragmas = m.into();
        qualified = q;
    }
    if (pragmas.contains("NV_") || pragmas.contains("_DISPATCH("))
        && let Some(m) = mask::nv_target(&pragmas)
    {
        pragmas = m.into();
    }
    if pragmas.contains("operator")
        && let Some(m) = mask::conversion_calls(&pragmas)
    {
        pragmas = m.into();
    }
    if pragmas.contains("__attribute__((") {
        pragmas = mask::gnu_attributes(&pragmas).into();
    }
    if pragmas.starts_with("# ") || pragmas.contains("\n# ") {
        pragmas = mask::line_markers(&pragmas).into();
    }
    let (masked, attribute) = if ATTRIBUTE_HINTS.iter().any(|w| pragmas.contains(w)) {
        let (m, a) = mask::attributes(&pragmas);
        (std::borrow::Cow::Owned(m), a)
    } else {
        (pragmas, None)
    };
    let masked = match (masked.contains("__device__") || masked.contains("__host__"))
        .then(|| mask::lambda_qualifiers(&masked))
    {
        Some(Some((m, q))) => {
            qualified.extend(q);
            std::borrow::Cow::Owned(m)
        }
        _ => masked,
    };
    let masked = match masked
        .contains("#include")
        .then(|| mask::computed_includes(&masked))
    {
        Some(Some(m)) => std::borrow::Cow::Owned(m),
        _ => masked,
    };
    let masked = match masked
        .contains("typeid")
        .then(|| mask::typeid_types(&masked))
    {
        Some(Some(m)) => std::borrow::Cow::Owned(m),
        _ => masked,
    };
    let masked = match (masked.contains("template class ") || masked.contains("template struct "))
        .then(|| mask::explicit_instantiations(&masked))
    {
        Some(Some(m)) => std::borrow::Cow::Owned(m),
        _ => masked,
    };
    MaskedText {
        text: masked,
        attribute,
        qualified,
    }
}

/// `text[range]` parsed alone, its nodes at their offsets in `text`: one piece of a big file
/// (`pieces.rs`). `start` and `end` are the range's rows and columns.
pub fn parse_range(text: &str, range: Range<usize>, start: Point, end: Point) -> Tree {
    let piece = tree_sitter::Range {
        start_byte: range.start,
        end_byte: range.end,
        start_point: start,
        end_point: end,
    };
    with_parser(|p| {
        p.set_included_ranges(&[piece])
            .expect("one range inside the text");
        let tree = p.parse(text.as_bytes(), None);
        p.set_included_ranges(&[]).expect("the whole text");
        tree.expect("parse without timeout or cancellation")
    })
}

/// `masked` parsed, or, when that leaves a syntax error and the file has `#if` groups, with only
/// each group's first branch and no directive lines (an `#if` inside an argument list, a
/// condition the grammar cannot read: `#if _CCCL_COMPILER(NVHPC, <, 26)`), if that has fewer
/// unparsed bytes (then true, and the offset of the first `#else`/`#elif` left out, if any).
fn branches_parsed(masked: &str) -> (Tree, bool, Option<usize>) {
    let tree = parse_blanked(masked);
    if !tree.root_node().has_error() || !masked.contains("#if") {
        return (tree, false, None);
    }
    let (first, at) = mask::first_branches(masked);
    let retry = parse_blanked(&first);
    if unparsed(&retry) < unparsed(&tree) {
        (retry, true, at)
    } else {
        (tree, false, None)
    }
}

const ATTRIBUTE_HINTS: &[&str] = &["__align__", "CUDART_CB", "CUDA_CB", "VKAPI_"];

/// Bytes inside syntax errors, plus one per token tree-sitter had to invent.
fn unparsed(tree: &Tree) -> usize {
    let errors: usize = error_ranges(tree).iter().map(|r| r.len().max(1)).sum();
    errors + usize::from(first_error(tree).is_some_and(|e| e.is_missing()))
}

/// Parses text whose pragmas are already blanked.
fn parse_blanked(text: &str) -> Tree {
    with_parser(|p| {
        p.parse(text.as_bytes(), None)
            .expect("parse without timeout or cancellation")
    })
}

/// Runs `f` with this thread's parser.
fn with_parser<R>(f: impl FnOnce(&mut Parser) -> R) -> R {
    thread_local! {
        // One parser per thread: creating one per file costs more than small files take.
        static PARSER: std::cell::RefCell<Parser> = std::cell::RefCell::new({
            let mut p = Parser::new();
            p.set_language(&crate::rewrite::queries::language()).expect("tree-sitter-cuda ABI matches tree-sitter");
            p
        });
    }
    PARSER.with_borrow_mut(f)
}

pub fn blank_pragmas(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains("#pragma") {
        return text.into();
    }
    let mut out = String::with_capacity(text.len());
    let mut continued = false;
    for line in text.split_inclusive('\n') {
        let is_pragma = continued || line.trim_start().starts_with("#pragma");
        if is_pragma {
            out.extend(
                line.chars()
                    .map(|c| if c == '\n' || c == '\r' { c } else { ' ' }),
            );
            // A non-ASCII char becomes one space: keep the byte length.
            let pad = line.len() - line.chars().count();
            out.extend(std::iter::repeat_n(' ', pad));
            continued = line.trim_end_matches(['\n', '\r']).ends_with('\\');
        } else {
            out.push_str(line);
        }
    }
    out.into()
}

/// The first node, in source order, that is a syntax error or a token tree-sitter had to invent.
pub fn first_error(tree: &Tree) -> Option<Node<'_>> {
    let root = tree.root_node();
    if !root.has_error() {
        return None;
    }
    let mut cursor = root.walk();
    loop {
        let node = cursor.node();
        if node.is_error() || node.is_missing() {
            return Some(node);
        }
        let descend = node.has_error() && cursor.goto_first_child();
        if !descend {
            while !cursor.goto_next_sibling() {
                if !cursor.goto_parent() {
                    return None;
                }
            }
        }
    }
}

/// The deepest a node may be for tree-sitter's queries to match it (their cursor keeps depths in
/// 16 bits): a kernel of 65,535 nested blocks got no fence and no word.
pub const QUERY_DEPTH: usize = 65_000;

/// Where the first node deeper than `QUERY_DEPTH` starts. A level takes a byte at least, so a
/// shorter text is not walked; nor is a node with too few descendants to reach that deep.
fn too_deep(tree: &Tree, text: &str) -> Option<usize> {
    if text.len() <= QUERY_DEPTH {
        return None;
    }
    each_node(tree, |cursor, depth| {
        let node = cursor.node();
        if depth > QUERY_DEPTH {
            return ControlFlow::Break(node.start_byte());
        }
        // Its deepest descendant is at most as many levels down as it has descendants.
        ControlFlow::Continue(depth + node.descendant_count() - 1 > QUERY_DEPTH)
    })
}

/// Visits the nodes of `tree` in source order with their depth (the root's is 0), until `visit`
/// breaks; what it broke with. `visit` says whether to go into the node's children.
pub fn each_node<B>(
    tree: &Tree,
    mut visit: impl FnMut(&tree_sitter::TreeCursor, usize) -> ControlFlow<B, bool>,
) -> Option<B> {
    let mut cursor = tree.root_node().walk();
    let mut depth = 0;
    loop {
        let into = match visit(&cursor, depth) {
            ControlFlow::Break(b) => return Some(b),
            ControlFlow::Continue(into) => into,
        };
        if into && cursor.goto_first_child() {
            depth += 1;
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                return None;
            }
            depth -= 1;
        }
    }
}

/// The first syntax error of a file, kept until the file's turn comes to be reported.
#[derive(Clone, Debug, PartialEq)]
pub struct SyntaxError {
    pub at: usize,
    /// `syntax error`, or `missing `X`` for a token tree-sitter had to invent.
    pub what: String,
    /// Nesting deeper than `QUERY_DEPTH`: the file is not planned at all.
    pub too_deep: bool,
}

pub fn syntax_error(tree: &Tree, text: &str) -> Option<SyntaxError> {
    if let Some(at) = too_deep(tree, text) {
        return Some(SyntaxError {
            at,
            what: format!(
                "nesting deeper than {QUERY_DEPTH} levels, which tree-sitter's queries do not see into; the file is not instrumented"
            ),
            too_deep: true,
        });
    }
    first_error(tree).map(|e| {
        let what = if e.is_missing() {
            format!("missing `{}`", e.kind())
        } else {
            "syntax error".to_string()
        };
        let at = e.start_byte();
        SyntaxError {
            at,
            too_deep: false,
            what: match construct_near(text, at) {
                Some(c) => format!("{what} ({c}, which tree-sitter-cuda does not parse)"),
                None => what,
            },
        }
    })
}

/// Constructs known to defeat the grammar, by what the error's line (or the one before) shows.
const CONSTRUCTS: &[(&[&str], &str)] = &[
    (&["asm", ":"], "inline `asm` with operand lists"),
    (&["new ", "*["], "`new T *[n]`"),
    (
        &["#include"],
        "an `#include` inside a declaration (X-macro)",
    ),
    (&["#if"], "`#if` splitting a declaration"),
    (&["#else"], "`#if`/`#else` splitting a declaration"),
    (&["__attribute__"], "a GNU `__attribute__`"),
    (&["__declspec"], "`__declspec`"),
];

/// The name of a construct in `CONSTRUCTS` on the line of byte `at` or the line before.
fn construct_near(text: &str, at: usize) -> Option<&'static str> {
    let at = at.min(text.len());
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let before = text[..line_start.saturating_sub(1)]
        .rfind('\n')
        .map_or(0, |i| i + 1);
    let line_end = text[at..].find('\n').map_or(text.len(), |i| at + i);
    let near = text.get(before..line_end)?;
    CONSTRUCTS
        .iter()
        .find(|(marks, _)| marks.iter().all(|m| near.contains(m)))
        .map(|(_, name)| *name)
}

/// Byte ranges of all ERROR nodes, inside which nothing is edited.
pub fn error_ranges(tree: &Tree) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut stack = vec![tree.root_node()];
    while let Some(n) = stack.pop() {
        if n.is_error() {
            out.push(n.byte_range());
        } else if n.has_error() {
            let mut c = n.walk();
            stack.extend(n.children(&mut c));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_if_group_without_else_inside_arguments_or_with_an_unreadable_condition_parses() {
        for src in [
            "__device__ void f(int* p) {\n  g(p\n#if !TUNE_BASE\n    , 1\n#endif\n  );\n  p[0] = 1;\n}\n",
            "#if _CCCL_COMPILER(NVHPC, <, 26, 1)\n#define X 1\n#endif\n__device__ void h(int* p) { p[0] = 1; }\n",
        ] {
            assert!(
                first_error(&parse(src)).is_some(),
                "the grammar alone fails: {src}"
            );
            let m = parse_masked(src, &Macros::default());
            assert!(first_error(&m.tree).is_none(), "{src}");
            assert_eq!(m.first_branch_only, None, "no #else was left out");
        }
    }

    #[test]
    fn thrusts_dispatch_macro_parses_as_two_blocks() {
        let src = "__device__ int f(int* r, int* s) {\n  THRUST_CDP_DISPATCH((r[0] = s[0];),\n                      (r[1] = s[1];));\n  return r[0];\n}\n";
        assert!(
            first_error(&parse(src)).is_some(),
            "the grammar alone fails"
        );
        assert!(first_error(&parse_masked(src, &Macros::default()).tree).is_none());
    }

    #[test]
    fn a_test_case_macro_with_type_arguments_parses_once_masked() {
        let src = "TEMPLATE_TEST_CASE_SIG(\"t\", \"\", ((typename K, int N), K, N), (int, 1))\n{\n  int x = 1;\n}\n";
        assert!(
            first_error(&parse(src)).is_some(),
            "the grammar alone fails"
        );
        let m = parse_masked(src, &Macros::default());
        assert!(first_error(&m.tree).is_none());
    }

    #[test]
    fn pragmas_are_blanked_keeping_offsets() {
        let src = "a\n  #pragma unroll 4\nb é\n#pragma x \\\n y\nz";
        let b = blank_pragmas(src);
        assert_eq!(b.len(), src.len());
        assert_eq!(
            b.lines().collect::<Vec<_>>(),
            ["a", "                  ", "b é", "           ", "  ", "z"]
        );
    }

    #[test]
    fn nesting_deeper_than_queries_see_is_an_error_at_its_first_node() {
        let nested = |n: usize| {
            format!(
                "__global__ void k(int *a) {{\n{}a[0] = 1;{}\n}}\n",
                "{".repeat(n),
                "}".repeat(n)
            )
        };
        let ok = nested(1000);
        assert_eq!(syntax_error(&parse(&ok), &ok), None);
        let deep = nested(QUERY_DEPTH + 10);
        let e = syntax_error(&parse(&deep), &deep).expect("too deep");
        assert!(
            e.what.starts_with("nesting deeper than 65000 levels"),
            "{e:?}"
        );
        assert!(e.at > 28 && e.at < QUERY_DEPTH + 40, "{e:?}");
    }

    #[test]
    fn first_error_is_reported() {
        let tree = parse("__global__ void k(int *a) { a[0] = ; }\n");
        let e = first_error(&tree).expect("an error");
        assert_eq!(e.start_position().row, 0);
        assert!(first_error(&parse("__global__ void k(int *a) { a[0] = 1; }\n")).is_none());
    }

    #[test]
    fn errors_name_a_known_construct() {
        let text = "__device__ int f(int x) {\n  asm(\"add.s32 %0, %1, 1;\" : \"=r\"(x) : \"r\"(x));\n  return x;\n}\n";
        let tree = parse(text);
        if let Some(e) = syntax_error(&tree, text) {
            assert!(e.what.contains("inline `asm`"), "{}", e.what);
        }
        assert_eq!(
            construct_near("a\nb = new float *[n];\n", 4),
            Some("`new T *[n]`")
        );
        assert_eq!(construct_near("a\nb\n", 2), None);
    }
}

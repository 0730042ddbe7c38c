//! Same-length masks of a file's text before parsing, for constructs tree-sitter-cuda does not
//! parse: blanked with spaces (newlines kept), so byte offsets, and the edits made from them,
//! still fit the original text.

/// Attributes the grammar lacks, blanked wherever they appear: `__align__(n)` (with its
/// parenthesised argument) and calling-convention macros such as `CUDART_CB` (and Vulkan's).
const ATTRIBUTES: &[(&str, bool)] = &[
    ("__align__", true),
    ("__builtin_align__", true),
    ("CUDART_CB", false),
    ("CUDA_CB", false),
    ("VKAPI_ATTR", false),
    ("VKAPI_CALL", false),
];

/// `text` with the attributes of `ATTRIBUTES` blanked, and the name of the first one found.
pub fn attributes(text: &str) -> (String, Option<&'static str>) {
    let mut out = text.as_bytes().to_vec();
    let mut first = None;
    for (word, with_args) in ATTRIBUTES {
        for (at, _) in text.match_indices(word) {
            // Not on a preprocessor line (`#define VKAPI_ATTR`): that would blank its name.
            let line = text[..at].rfind('\n').map_or(0, |i| i + 1);
            if !whole_word(text, at, word.len()) || text[line..at].trim_start().starts_with('#') {
                continue;
            }
            let mut end = at + word.len();
            if *with_args {
                let Some(close) = balanced_parens(text, end) else {
                    continue;
                };
                end = close;
            }
            blank(&mut out, at..end);
            first = first.or(Some(*word));
        }
    }
    (bytes_to_string(out), first)
}

/// Type keywords: `typeid(double)` is a type operand, which the grammar does not parse.
const TYPE_WORDS: &[&str] = &[
    "bool", "char", "short", "int", "long", "float", "double", "void", "unsigned", "signed",
    "const",
];

/// `text` with the type keywords of `typeid(T)` masked as one identifier (`typeid(_     )`),
/// which parses as `typeid` of an expression; `None` where there is none.
pub fn typeid_types(text: &str) -> Option<String> {
    let mut out = text.as_bytes().to_vec();
    let mut found = false;
    for (at, w) in text.match_indices("typeid") {
        let open =
            at + w.len() + (text[at + w.len()..].len() - text[at + w.len()..].trim_start().len());
        if !whole_word(text, at, w.len()) || !text[open..].starts_with('(') {
            continue;
        }
        let Some(close) = balanced_parens(text, open) else {
            continue;
        };
        let inside = open + 1..close - 1;
        let words: Vec<&str> = text[inside.clone()].split_whitespace().collect();
        if !words.is_empty() && words.iter().all(|w| TYPE_WORDS.contains(w)) {
            blank(&mut out, inside.clone());
            out[inside.start] = b'_';
            found = true;
        }
    }
    found.then(|| bytes_to_string(out))
}

/// `text` with explicit instantiations on a line of their own (`template class PiEstimator<float>;`,
/// which the grammar does not parse) blanked: they hold no code to instrument. `None` where
/// there is none.
pub fn explicit_instantiations(text: &str) -> Option<String> {
    let mut out = text.as_bytes().to_vec();
    let mut found = false;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim();
        let kind = ["template class ", "template struct "]
            .iter()
            .any(|k| t.starts_with(k));
        if kind && t.ends_with(';') && !t.contains(['{', '(']) {
            blank(&mut out, at..at + line.trim_end().len());
            found = true;
        }
        at += line.len();
    }
    found.then(|| bytes_to_string(out))
}

/// What preprocessing made of the CUDA qualifiers, and the qualifier each was.
const GNU_QUALIFIERS: &[(&str, &str)] = &[
    ("device", "__device__"),
    ("global", "__global__"),
    ("host", "__host__"),
    ("shared", "__shared__"),
    ("constant", "__constant__"),
    ("managed", "__managed__"),
];

/// Preprocessed text (`nvcc -E`) with `__attribute__((device))` and its kin written back as
/// the qualifier they were (padded with spaces), every other `__attribute__((...))` and
/// `__inline__` blanked, so the grammar sees CUDA again.
pub fn gnu_attributes(text: &str) -> String {
    let mut out = text.as_bytes().to_vec();
    for (at, _) in text.match_indices("__attribute__") {
        let Some(end) = balanced_parens(text, at + "__attribute__".len()) else {
            continue;
        };
        let inner = text[at + "__attribute__".len()..end]
            .trim_matches(|c: char| c == '(' || c == ')' || c.is_whitespace());
        blank(&mut out, at..end);
        if let Some((_, q)) = GNU_QUALIFIERS.iter().find(|(a, _)| *a == inner) {
            out[at..at + q.len()].copy_from_slice(q.as_bytes());
        }
    }
    for (at, w) in text.match_indices("__inline__") {
        if whole_word(text, at, w.len()) {
            blank(&mut out, at..at + w.len());
        }
    }
    bytes_to_string(out)
}

/// Line markers of preprocessed text (`# 12 "file" 2`) blanked: they are not C++.
pub fn line_markers(text: &str) -> String {
    let mut out = text.as_bytes().to_vec();
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let digit = line.strip_prefix("# ").and_then(|r| r.chars().next());
        if digit.is_some_and(|c| c.is_ascii_digit()) {
            blank(&mut out, at..at + line.len());
        }
        at += line.len();
    }
    bytes_to_string(out)
}

/// `text` with only the first branch of every `#if`/`#ifdef`/`#ifndef` group: the directive
/// lines and every `#elif`/`#else` branch blanked. For a file whose `#if`/`#else` splits a
/// statement (`#if A\n if (x) {\n#else\n if (y) {\n#endif`), which no grammar can parse as
/// written. The byte of the first blanked `#else`/`#elif`, if any.
pub fn first_branches(text: &str) -> (String, Option<usize>) {
    let mut out = text.as_bytes().to_vec();
    // Per open group: whether the current branch is blanked.
    let mut groups: Vec<bool> = Vec::new();
    let mut first = None;
    let mut at = 0;
    let mut continued = false;
    let mut blank_continuation = false;
    for line in text.split_inclusive('\n') {
        let range = at..at + line.len();
        at += line.len();
        let directive = line.trim_start().strip_prefix('#').map(str::trim_start);
        let word = directive.map(|d| {
            d.split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
                .next()
                .unwrap_or("")
        });
        let blanked_branch = groups.iter().any(|b| *b);
        let blank_line = if continued {
            blank_continuation
        } else {
            match word {
                Some("if" | "ifdef" | "ifndef") => {
                    groups.push(false);
                    true
                }
                Some("elif" | "else" | "elifdef" | "elifndef") if !groups.is_empty() => {
                    if !blanked_branch {
                        first = first.or(Some(range.start));
                    }
                    *groups.last_mut().expect("an open group") = true;
                    true
                }
                Some("endif") if !groups.is_empty() => {
                    groups.pop();
                    true
                }
                _ => blanked_branch,
            }
        };
        if blank_line {
            blank(&mut out, range.clone());
        }
        continued = line.trim_end_matches(['\n', '\r']).ends_with('\\');
        blank_continuation = blank_line;
    }
    (bytes_to_string(out), first)
}

use crate::rewrite::macros::whole_word;

/// `text` with the invocations of function-like macros that open a line in capitals and are
/// followed by a body (Catch2's `TEMPLATE_TEST_CASE_SIG("t", "", ((typename K), K), (int)) {`,
/// googletest's `TEST_F(F, t) {`, or a function try block: `CUB_TEST("t", "[tag]") try {`), which
/// the grammar cannot parse when their arguments are types or parenthesized lists, made `void m()`
/// and spaces: the body parses as a host function's.
/// A macro the file defines with `__global__` or `__device__` in it is left alone: its body is
/// device code. `None` where there is none.
pub fn body_macros(text: &str) -> Option<String> {
    let mut out: Option<Vec<u8>> = None;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let indent = line.len() - line.trim_start_matches([' ', '\t']).len();
        let start = at + indent;
        at += line.len();
        let line = &line[indent..];
        let name_len = line
            .bytes()
            .take_while(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || *b == b'_')
            .count();
        if name_len < 2
            || !line[name_len..].starts_with('(')
            || line.starts_with(|c: char| c.is_ascii_digit())
        {
            continue;
        }
        let Some(close) = closing_paren(text, start + name_len, 4000) else {
            continue;
        };
        if close - start < 8 || text[start..start + 8].contains('\n') {
            continue;
        }
        // A body, or at file scope a function try block (`TEST_CASE("t") try { ... } catch`).
        let after = text[close..].trim_start();
        let try_block = indent == 0
            && after
                .strip_prefix("try")
                .is_some_and(|r| r.trim_start().starts_with('{'));
        if !(after.starts_with('{') || try_block) || defines_device_code(text, &line[..name_len]) {
            continue;
        }
        // Inside a body, a section macro (Catch2's `SECTION("name") {`) of string arguments
        // only becomes `if (1)`: its block parses as a statement's.
        let say: &[u8] = if indent == 0 {
            b"void m()"
        } else if strings_only(&text[start + name_len + 1..close - 1]) {
            b"if (1)"
        } else {
            continue;
        };
        let bytes = out.get_or_insert_with(|| text.as_bytes().to_vec());
        blank(bytes, start..close);
        bytes[start..start + say.len()].copy_from_slice(say);
    }
    out.map(bytes_to_string)
}

/// Whether `args` holds only string literals, commas and white space.
fn strings_only(args: &str) -> bool {
    let mut rest = args.trim_start();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix(',') {
            rest = after.trim_start();
            continue;
        }
        let Some(body) = rest.strip_prefix('"') else {
            return false;
        };
        let mut escaped = false;
        let Some(end) = body.find(|c: char| {
            let quote = c == '"' && !escaped;
            escaped = c == '\\' && !escaped;
            quote
        }) else {
            return false;
        };
        rest = body[end + 1..].trim_start();
    }
    true
}

/// `#include` lines whose path a macro computes (`#include BACKEND_HEADER(atomic.cuh)`), which
/// the grammar cannot parse, blanked: nothing in an `#include` is instrumented. `None` where
/// there is none.
pub fn computed_includes(text: &str) -> Option<String> {
    let mut out: Option<Vec<u8>> = None;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let start = at;
        at += line.len();
        let Some(rest) = line.trim_start().strip_prefix('#') else {
            continue;
        };
        let Some(path) = rest.trim_start().strip_prefix("include") else {
            continue;
        };
        let path = path.trim_start();
        let name = path
            .bytes()
            .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
            .count();
        if name == 0
            || !path[name..].trim_start().starts_with('(')
            || line.trim_end().ends_with('\\')
        {
            continue;
        }
        blank(
            out.get_or_insert_with(|| text.as_bytes().to_vec()),
            start..at,
        );
    }
    out.map(bytes_to_string)
}

/// Whether `text` defines macro `name` with `__global__` or `__device__` on its `#define` line.
fn defines_device_code(text: &str, name: &str) -> bool {
    text.match_indices("#define").any(|(i, _)| {
        let line = text[i..].lines().next().unwrap_or("");
        line["#define".len()..].trim_start().starts_with(name)
            && (line.contains("__global__") || line.contains("__device__"))
    })
}

/// The byte after the `)` closing the `(` at `open`, within `limit` bytes.
fn closing_paren(text: &str, open: usize, limit: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in text[open..].char_indices().take_while(|(i, _)| *i < limit) {
        match c {
            '(' => depth += 1,
            ')' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(open + i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// The byte after the `)` closing the `(` that starts at `from` (after spaces), if any.
fn balanced_parens(text: &str, from: usize) -> Option<usize> {
    let rest = &text[from..];
    let open = from + rest.len() - rest.trim_start().len();
    if !text[open..].starts_with('(') {
        return None;
    }
    let mut depth = 0usize;
    for (i, c) in text[open..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + i + 1);
                }
            }
            '\n' if depth > 0 && i > 200 => return None,
            _ => {}
        }
    }
    None
}

/// Spaces over `range`, keeping line breaks; a multi-byte character becomes as many spaces as
/// it has bytes.
fn blank(bytes: &mut [u8], range: std::ops::Range<usize>) {
    for b in &mut bytes[range] {
        if *b != b'\n' && *b != b'\r' {
            *b = b' ';
        }
    }
}

/// Statement macros whose parenthesised arguments are branches of code: CUDA's `nv/target`
/// ones, defined in the toolkit's headers, not the tree, and thrust's `THRUST_CDP_DISPATCH`
/// (`NV_IF_TARGET` over its two branches).
const NV_TARGET: &[&str] = &[
    "NV_IF_TARGET",
    "NV_IF_ELSE_TARGET",
    "NV_DISPATCH_TARGET",
    "THRUST_CDP_DISPATCH",
];

/// `text` with `nv/target`'s statement macros (`NV_IF_TARGET(NV_IS_DEVICE, (a;), (b;))`,
/// `NV_DISPATCH_TARGET(c1, (a;), c2, (b;))`) as blocks `{ a; } { b; }`: the macro and its
/// conditions blanked, each parenthesised branch's parentheses made braces, so that every
/// branch's code is parsed and instrumented. `None` where there is none.
pub fn nv_target(text: &str) -> Option<String> {
    use crate::rewrite::macros::{balanced, identifiers};
    let mut out: Option<Vec<u8>> = None;
    let mut done_to = 0;
    for (at, word) in identifiers(text) {
        if at < done_to || !NV_TARGET.contains(&word) || on_directive(text, at) {
            continue;
        }
        let open = args_at(text, at, word);
        let Some(end) = balanced(text, open) else {
            continue;
        };
        let args = top_level_args(text, open + 1, end - 1);
        let mut branches: Vec<(usize, usize)> = args
            .iter()
            .filter_map(|&(from, to)| {
                let lead = crate::rewrite::macros::past_comments(&text[..to], from);
                let close = balanced(text, lead)?;
                (text[close..to].trim().is_empty()).then_some((lead, close - 1))
            })
            .collect();
        // `NV_IF_TARGET(NV_PROVIDES_SM_90, f(x);)`: a last branch of statements without its
        // parentheses, braced from the comma before it to the macro's `)`.
        if let [.., (from, to)] = args[..]
            && args.len() > 1
            && !branches.iter().any(|&(p, _)| p >= from)
            && text[from..to].trim_end().ends_with(';')
        {
            branches.push((from - 1, end - 1));
        }
        if branches.is_empty() {
            continue;
        }
        let o = out.get_or_insert_with(|| text.as_bytes().to_vec());
        blank(o, at..end);
        for (p, q) in branches {
            o[p + 1..q].copy_from_slice(&text.as_bytes()[p + 1..q]);
            o[p] = b'{';
            o[q] = b'}';
        }
        done_to = end;
    }
    out.map(bytes_to_string)
}

/// `text` with calls of conversion operators by name (`r.operator T()`, `p->operator bool()`,
/// `!operator bool()`, `return operator T();`), which the grammar does not parse, as calls of
/// one identifier (`r.operator_T()`). A declaration (`S::operator T() const {`) is left alone.
/// `None` where there is none.
pub fn conversion_calls(text: &str) -> Option<String> {
    use crate::rewrite::macros::{identifiers, is_word_byte};
    let b = text.as_bytes();
    let mut out: Option<Vec<u8>> = None;
    for (at, word) in identifiers(text) {
        if word != "operator" || !called_as_expression(text, at) {
            continue;
        }
        let gap = at + word.len();
        let name = gap
            + b[gap..]
                .iter()
                .take_while(|c| **c == b' ' || **c == b'\t')
                .count();
        let name_end = name + b[name..].iter().take_while(|c| is_word_byte(**c)).count();
        let paren = name_end
            + b[name_end..]
                .iter()
                .take_while(|c| c.is_ascii_whitespace())
                .count();
        if name == gap
            || name_end == name
            || b[name].is_ascii_digit()
            || b.get(paren) != Some(&b'(')
        {
            continue;
        }
        let o = out.get_or_insert_with(|| b.to_vec());
        o[gap..name].fill(b'_');
    }
    out.map(bytes_to_string)
}

/// Whether the `operator` at `at` follows `.`, `->`, `!` or `return`: a call, not a declaration.
fn called_as_expression(text: &str, at: usize) -> bool {
    let before = text[..at].trim_end();
    before.ends_with('.')
        || before.ends_with("->")
        || before.ends_with('!')
        || (before.ends_with("return")
            && crate::rewrite::macros::whole_word(before, before.len() - "return".len(), 6))
}

/// The byte ranges of the comma-separated arguments between `from` and `to`, split at commas
/// outside brackets and literals.
fn top_level_args(text: &str, from: usize, to: usize) -> Vec<(usize, usize)> {
    let (mut out, mut start, mut depth) = (Vec::new(), from, 0i32);
    crate::rewrite::macros::outside_literals(text, from, to, |i, b| {
        match b {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b',' if depth == 0 => {
                out.push((start, i));
                start = i + 1;
            }
            _ => {}
        }
        true
    });
    out.push((start, to));
    out
}

fn bytes_to_string(bytes: Vec<u8>) -> String {
    // Only whole characters become spaces: the result is UTF-8 when the input is.
    String::from_utf8(bytes).expect("blanking keeps UTF-8")
}

/// `text` with the `__device__`/`__host__` of extended lambdas (`[=] __device__ (int i) {...}`,
/// which the grammar does not parse) blanked, so the file parses, and the `__device__` ones
/// listed: the lambda's body is device code. `None` where there is none.
pub fn lambda_qualifiers(text: &str) -> Option<(String, Vec<Qualified>)> {
    use crate::rewrite::macros::Meaning;
    let mut out: Option<Vec<u8>> = None;
    let mut listed: Vec<Qualified> = Vec::new();
    let mut blanked_to = usize::MAX;
    for (at, word) in crate::rewrite::macros::identifiers(text) {
        if word != "__device__" && word != "__host__" {
            continue;
        }
        let before = text[..at].trim_end();
        let after_lambda = before.ends_with(']') || before.len() == blanked_to;
        if after_lambda {
            blank(
                out.get_or_insert_with(|| text.as_bytes().to_vec()),
                at..at + word.len(),
            );
            blanked_to = at + word.len();
            let host = text[..at].trim_end().ends_with("__host__") || word == "__host__";
            match listed.last_mut() {
                // `__host__ __device__`, `__device__ __host__`: one lambda.
                Some(q) if before.len() == q.at.end => {
                    q.at.end = blanked_to;
                    if host {
                        q.meaning = Meaning::Device { host: true };
                    }
                }
                _ if word == "__device__"
                    || text[at..]
                        .trim_start_matches("__host__")
                        .trim_start()
                        .starts_with("__device__") =>
                {
                    listed.push(Qualified {
                        at: at..blanked_to,
                        meaning: Meaning::Device { host },
                        in_place: false,
                    })
                }
                _ => {}
            }
        }
    }
    out.map(|o| (bytes_to_string(o), listed))
}

/// A device or kernel qualifier macro's use (or an extended lambda's qualifier): where the text
/// could not say the qualifier in its place (a name shorter than `__device__`, a lambda's), the
/// function whose head holds it is device code all the same; every use counts the function as
/// declared through a macro.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Qualified {
    /// The macro's name, masked.
    pub at: std::ops::Range<usize>,
    pub meaning: crate::rewrite::macros::Meaning,
    /// The masked text says the qualifier in its place (`__device__`): the grammar sees it.
    pub in_place: bool,
}

/// `text` with the uses of learnt macros (`macros.rs`) masked, outside preprocessor lines: a
/// device or kernel qualifier macro as `__device__`/`__host__ __device__`/`__global__` padded
/// with spaces where its name is long enough, else blanked and listed; the others blanked.
/// `None` where there is none.
pub fn macros(
    text: &str,
    macros: &crate::rewrite::macros::Macros,
) -> Option<(String, Vec<Qualified>)> {
    use crate::rewrite::macros::{Meaning, identifiers};
    let mut out: Option<Vec<u8>> = None;
    let mut listed = Vec::new();
    let mut blanked_to = 0;
    for (at, word) in identifiers(text) {
        if at < blanked_to {
            continue;
        }
        if let Some(&shape) = macros.shapes.get(word) {
            if !on_directive(text, at) {
                let o = out.get_or_insert_with(|| text.as_bytes().to_vec());
                blanked_to = shaped(text, o, at, word, shape).unwrap_or(at);
            }
            continue;
        }
        if let Some(op) = macros.operators.get(word) {
            if !on_directive(text, at) {
                let o = out.get_or_insert_with(|| text.as_bytes().to_vec());
                blank(o, at..at + word.len());
                o[at..at + op.len()].copy_from_slice(op.as_bytes());
            }
            continue;
        }
        if beside_string(text, at, word) {
            // A macro pasted into a string (`"%" STDGPU_PRIINDEX " items"`, `"%" PRId64`):
            // a string literal of its length.
            let o = out.get_or_insert_with(|| text.as_bytes().to_vec());
            blank(o, at..at + word.len());
            o[at] = b'"';
            o[at + word.len() - 1] = b'"';
            continue;
        }
        if let Some(call) = macros.calls.get(word) {
            if let Some(end) = code_free_call(text, at, word, call) {
                blank(out.get_or_insert_with(|| text.as_bytes().to_vec()), at..end);
                blanked_to = end;
            }
            continue;
        }
        let Some(&meaning) = macros.by_name.get(word) else {
            continue;
        };
        if on_directive(text, at) {
            continue;
        }
        let o = out.get_or_insert_with(|| text.as_bytes().to_vec());
        let len = word.len();
        let say: &[u8] = match meaning {
            Meaning::Device { host: true } if len >= 19 => b"__host__ __device__",
            Meaning::Device { .. } if len >= 10 => b"__device__",
            Meaning::Kernel if len >= 10 => b"__global__",
            _ => b"",
        };
        blank(o, at..at + len);
        o[at..at + say.len()].copy_from_slice(say);
        if matches!(meaning, Meaning::Device { .. } | Meaning::Kernel) {
            listed.push(Qualified {
                at: at..at + len,
                meaning,
                in_place: !say.is_empty(),
            });
        }
    }
    out.map(|o| (bytes_to_string(o), listed))
}

/// Whether the identifier `word` at `at` is a macro standing for a string beside a string
/// literal (`"%" PRId64 "\n"`): upper case, at least three characters (not an encoding prefix
/// such as `L` or `u8`), with a string literal's closing quote before it or an opening one
/// after it past spaces, outside directives.
fn beside_string(text: &str, at: usize, word: &str) -> bool {
    let shouting = word.len() >= 3
        && word
            .bytes()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_')
        && word.bytes().any(|c| c.is_ascii_uppercase());
    if !shouting {
        return false;
    }
    let before = text[..at].trim_end();
    let after = text[at + word.len()..].trim_start();
    // Not after a linkage specification: `extern "C" CUB_RUNTIME_FUNCTION void f();`.
    let linkage = |b: &str| {
        let open = b[..b.len() - 1].rfind('"').unwrap_or(0);
        b[..open].trim_end().ends_with("extern")
    };
    // The literal must be code too, not an `#include "x.h"` on the line before.
    let quoted_before = before.ends_with('"')
        && !before.ends_with("'\"'")
        && !linkage(before)
        && !on_directive(text, before.len() - 1);
    let after_at = text.len() - after.len();
    let quoted_after =
        after.starts_with('"') && at + word.len() < after_at && !on_directive(text, after_at);
    (quoted_before || quoted_after) && !on_directive(text, at)
}

/// Where the arguments of the macro `word` used at `at` would open: past the name and spaces.
fn args_at(text: &str, at: usize, word: &str) -> usize {
    let after = at + word.len();
    after + text[after..].len() - text[after..].trim_start().len()
}

/// Masks the use of a `Shape` macro at `at` as the C++20 syntax it stands for (same length);
/// where to go on masking from, or None where the use is not as expected (left as it is).
fn shaped(
    text: &str,
    o: &mut [u8],
    at: usize,
    word: &str,
    shape: crate::rewrite::macros::Shape,
) -> Option<usize> {
    use crate::rewrite::macros::{Shape, balanced};
    let open = args_at(text, at, word);
    let end = balanced(text, open)?;
    let say: &[u8] = match shape {
        Shape::TemplateHead => b"template<",
        Shape::Requires => b"requires",
        Shape::TrailingRequires => b"->",
        Shape::TypeParameter => b"typename",
    };
    let head_end = match shape {
        Shape::Requires => at + word.len(),
        Shape::TypeParameter => end,
        _ => open + 1,
    };
    if head_end - at < say.len() {
        return None;
    }
    blank(o, at..head_end);
    o[at..at + say.len()].copy_from_slice(say);
    // The arguments stay, so macros inside them are masked in turn: only the head is done.
    match shape {
        Shape::TemplateHead => o[end - 1] = b'>',
        Shape::Requires | Shape::TypeParameter => {}
        Shape::TrailingRequires => {
            o[end - 1] = b' ';
            // The constraint: `(C)` right after.
            let next = end + text[end..].len() - text[end..].trim_start().len();
            if let Some(close) = balanced(text, next) {
                blank(o, next..close);
                return Some(close);
            }
        }
    }
    Some(head_end)
}

/// The end of the use of a code-free function-like macro at `at`, with its arguments, if it is
/// to be blanked: not on a directive, and a statement of its own only when every definition of
/// the macro is code-free.
fn code_free_call(
    text: &str,
    at: usize,
    word: &str,
    call: &crate::rewrite::macros::Call,
) -> Option<usize> {
    let open = args_at(text, at, word);
    let end = crate::rewrite::macros::balanced(text, open)?;
    let statement = text[end..].trim_start().starts_with(';');
    ((call.every || !statement) && !on_directive(text, at)).then_some(end)
}

/// Whether the line holding `at` is a preprocessor directive (its own or one it continues).
pub(crate) fn on_directive(text: &str, at: usize) -> bool {
    let mut end = at;
    loop {
        let start = text[..end].rfind('\n').map_or(0, |i| i + 1);
        if text[start..].trim_start().starts_with('#') {
            return true;
        }
        // The line before ends with `\`: this one continues it.
        if start == 0 || !text[..start - 1].trim_end_matches('\r').ends_with('\\') {
            return false;
        }
        end = start - 1;
    }
}

#[cfg(test)]
#[path = "mask_tests.rs"]
mod tests;

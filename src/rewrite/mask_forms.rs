//! Same-length masks for C++ forms tree-sitter-cuda does not parse: raw string literals
//! (`asm volatile(R"XYZ( ... )XYZ")`) and libcu++'s concept definitions (`_CCCL_CONCEPT c =
//! _CCCL_REQUIRES_EXPR((T), T t)(...);`), which hold no device code, and libcu++'s macros for
//! `if consteval` and `try`/`catch` before a block, whose block does; the class of a pointer to
//! member. Line breaks stay where they are, so every position keeps its line and column.

use crate::rewrite::macros::{balanced, identifiers, outside_literals};
use crate::rewrite::mask::on_directive;

/// `text` with each raw string literal as one ordinary string literal a line (adjacent literals
/// concatenate), its characters spaces. `None` where there is none.
pub fn raw_strings(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out: Option<Vec<u8>> = None;
    let mut from = 0;
    while let Some(found) = text[from..].find("R\"") {
        let at = from + found;
        from = at + 2;
        let prefix = encoding_prefix(text, at);
        if at > 0 && is_word_byte(bytes[at - 1]) && prefix.is_none() {
            continue;
        }
        let Some(end) = raw_literal_end(text, at) else {
            continue;
        };
        let o = out.get_or_insert_with(|| bytes.to_vec());
        as_plain_strings(o, at - prefix.unwrap_or(0)..end);
        from = end;
    }
    out.map(|b| String::from_utf8(b).expect("ASCII replaced ASCII"))
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The length of the `u8`, `u`, `U` or `L` before the `R"` at `r_at`, if it is a whole word's
/// start (`u8R"`): the prefix is part of the literal.
fn encoding_prefix(text: &str, r_at: usize) -> Option<usize> {
    let before = &text[..r_at];
    ["u8", "u", "U", "L"]
        .iter()
        .find(|p| {
            before.ends_with(*p)
                && before[..before.len() - p.len()]
                    .bytes()
                    .last()
                    .is_none_or(|b| !is_word_byte(b))
        })
        .map(|p| p.len())
}

/// The byte after the closing quote of the raw literal whose `R"` is at `r_at`, if it is one:
/// a delimiter of at most 16 characters, then `(`.
fn raw_literal_end(text: &str, r_at: usize) -> Option<usize> {
    let open = r_at + 2;
    let paren = open + text[open..].find('(')?;
    let delim = &text[open..paren];
    if delim.len() > 16 || delim.contains(|c: char| c.is_whitespace() || "()\\\"".contains(c)) {
        return None;
    }
    let close = format!("){delim}\"");
    Some(paren + text[paren..].find(&close)? + close.len())
}

/// Each line's part of `range` as `"   "` (or a space where it is one byte long).
fn as_plain_strings(out: &mut [u8], range: std::ops::Range<usize>) {
    let mut line_start = range.start;
    for i in range.start..=range.end {
        if i == range.end || out[i] == b'\n' || out[i] == b'\r' {
            let part = &mut out[line_start..i];
            part.fill(b' ');
            if part.len() >= 2 {
                part[0] = b'"';
                *part.last_mut().expect("two bytes") = b'"';
            }
            line_start = i + 1;
        }
    }
}

/// Macros that define a concept.
const CONCEPT_MACROS: &[&str] = &["_CCCL_CONCEPT"];
/// Macros whose invocation defines a concept's requirements (`_CCCL_CONCEPT_FRAGMENT(name,
/// requires(T t)(requires(!c<T>), ...))`, libcu++'s form before C++20).
const FRAGMENT_MACROS: &[&str] = &["_CCCL_CONCEPT_FRAGMENT"];

/// `text` with each concept defined through a macro (`_CCCL_CONCEPT name = ...;`,
/// `_CCCL_CONCEPT_FRAGMENT(...)`), with the `template <...>` before it, blanked: a concept's
/// requirements are never evaluated code. `None` where there is none.
pub fn concept_definitions(text: &str) -> Option<String> {
    let mut out: Option<Vec<u8>> = None;
    let mut done_to = 0;
    for (at, word) in identifiers(text) {
        if at < done_to {
            continue;
        }
        let after = at + word.len();
        let end = if CONCEPT_MACROS.contains(&word) {
            // `_CCCL_CONCEPT name = `: a definition, not the macro's own #define or a use.
            let is_definition = text[after..]
                .trim_start()
                .split_once('=')
                .is_some_and(|(name, _)| is_identifier(name.trim()));
            if !is_definition {
                continue;
            }
            statement_end(text, after)
        } else if FRAGMENT_MACROS.contains(&word) && !on_directive(text, at) {
            invocation_end(text, after)
        } else {
            continue;
        };
        let Some(end) = end else {
            continue;
        };
        let start = template_head_before(text, at).unwrap_or(at);
        let o = out.get_or_insert_with(|| text.as_bytes().to_vec());
        for b in &mut o[start..end] {
            if *b != b'\n' && *b != b'\r' {
                *b = b' ';
            }
        }
        done_to = end;
    }
    out.map(|b| String::from_utf8(b).expect("ASCII replaced ASCII"))
}

/// The byte after a macro invocation's closing `)` (and a `;` right after it), when its `(`
/// comes next after `from`, outside literals.
fn invocation_end(text: &str, from: usize) -> Option<usize> {
    let open = from + text[from..].len() - text[from..].trim_start().len();
    let close = balanced(text, open)?;
    let rest = &text[close..];
    let semi = rest.len() - rest.trim_start_matches([' ', '\t']).len();
    Some(if rest[semi..].starts_with(';') {
        close + semi + 1
    } else {
        close
    })
}

fn is_identifier(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(is_word_byte) && !s.as_bytes()[0].is_ascii_digit()
}

/// The byte after the `;` that ends the declaration going on at `from`, outside brackets and
/// literals; `None` if a bracket closes first.
fn statement_end(text: &str, from: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut end = None;
    outside_literals(text, from, text.len(), |i, b| {
        match b {
            b'(' | b'{' | b'[' => depth += 1,
            b')' | b'}' | b']' if depth == 0 => return false,
            b')' | b'}' | b']' => depth -= 1,
            b';' if depth == 0 => {
                end = Some(i + 1);
                return false;
            }
            _ => {}
        }
        true
    });
    end
}

/// Where the `template <...>` that ends right before `at` (past white space) starts, if one does.
fn template_head_before(text: &str, at: usize) -> Option<usize> {
    let before = text[..at].trim_end();
    let close = before.len().checked_sub(1)?;
    if !before.ends_with('>') {
        return None;
    }
    let bytes = before.as_bytes();
    let mut depth = 0usize;
    let mut i = close + 1;
    while i > 0 {
        i -= 1;
        match bytes[i] {
            b'>' => depth += 1,
            b'<' => {
                depth -= 1;
                if depth == 0 {
                    let head = before[..i].trim_end();
                    return head
                        .strip_suffix("template")
                        .filter(|h| h.bytes().last().is_none_or(|b| !is_word_byte(b)))
                        .map(str::len);
                }
            }
            _ => {}
        }
    }
    None
}

/// `text` with the class of each pointer to member blanked (`R C::* p` as `R    * p`,
/// `int (T::*f)()` as `int (   *f)()`, `M<R ns::C::*>`), and the `*` of each use of one
/// (`(c->*m)(0)` as `(c-> m)(0)`, `s.*pm` as `s. pm`): the grammar has no pointers to members,
/// and a plain pointer and a member access parse the same way. `None` where there is none.
pub fn member_pointers(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out: Option<Vec<u8>> = None;
    let mut scopes = Vec::new();
    let mut stars = Vec::new();
    outside_literals(text, 0, text.len(), |i, b| {
        if b == b':'
            && bytes.get(i + 1) == Some(&b':')
            && text[i + 2..].trim_start().starts_with('*')
        {
            scopes.push(i);
        }
        if b == b'*' && i > 0 && (text[..i].ends_with("->") || member_dot(text, i - 1)) {
            stars.push(i);
        }
        true
    });
    for i in stars {
        let o = out.get_or_insert_with(|| bytes.to_vec());
        o[i] = b' ';
        // A lambda after `->*` (a task graph's `ctx.task(a)->*[&](auto t) {...}`): `->*` as a
        // binary operator, `|  `, so that the lambda is an operand and its body is parsed.
        if text[..i].ends_with("->") && text[i + 1..].trim_start().starts_with('[') {
            o[i - 2..i].copy_from_slice(b"| ");
        }
    }
    for colons in scopes {
        // Back over `a::b::C` (and a leading `::`) to where the scope starts.
        let mut start = colons;
        loop {
            let name = text[..start]
                .bytes()
                .rev()
                .take_while(|&c| is_word_byte(c))
                .count();
            if name == 0 || bytes[start - name].is_ascii_digit() {
                break;
            }
            start -= name;
            match text[..start].strip_suffix("::") {
                Some(before) => start = before.len(),
                None => break,
            }
        }
        if start == colons {
            continue;
        }
        let o = out.get_or_insert_with(|| bytes.to_vec());
        o[start..colons + 2].fill(b' ');
    }
    out.map(|b| String::from_utf8(b).expect("ASCII replaced ASCII"))
}

/// `text` with the innermost template argument list before each `>>` blanked, until none is
/// left: `P<s::U<X<Y>>, int>` as `P<s::U<X   >, int>`, then `P<s::U        , int>`. Two closing
/// brackets in one token leave tree-sitter more readings of the qualified names before them than
/// it keeps (a qualified nested template as a return type: `s::P<s::U<X<Y>>, int> f(T a)`). Only
/// a list of names, numbers, `::`, `,`, `*`, `&`, `...` right after a name (not after
/// `template`), and a `>>` not followed by `=` or a number (a shift), is blanked. `parse.rs`
/// keeps it only where it leaves fewer bytes unparsed. `None` where there is none.
pub fn nested_template_closers(text: &str) -> Option<String> {
    let mut out: Option<Vec<u8>> = None;
    loop {
        let now = out.as_deref().unwrap_or(text.as_bytes());
        let mut blanks = Vec::new();
        let cur = std::str::from_utf8(now).expect("ASCII replaced ASCII");
        outside_literals(cur, 0, cur.len(), |i, b| {
            if b == b'>'
                && now.get(i + 1) == Some(&b'>')
                && closes_template(now, i)
                && let Some(open) = innermost_open(now, i)
            {
                blanks.push(open..i + 1);
            }
            true
        });
        blanks.retain(|r| !on_directive(cur, r.start));
        if blanks.is_empty() {
            break;
        }
        let o = out.get_or_insert_with(|| text.as_bytes().to_vec());
        for r in blanks {
            o[r].fill(b' ');
        }
    }
    out.map(|b| String::from_utf8(b).expect("ASCII replaced ASCII"))
}

/// Whether the `>>` at `at` closes brackets rather than shifting: no `=` or number after.
fn closes_template(b: &[u8], at: usize) -> bool {
    let mut j = at + 2;
    while b.get(j) == Some(&b'>') {
        j += 1;
    }
    let next = b[j..].iter().find(|c| !c.is_ascii_whitespace());
    !matches!(next, Some(c) if *c == b'=' || c.is_ascii_digit())
}

/// Where the template argument list that the `>` at `close` ends opens, if it holds only names,
/// numbers, `::`, `,`, `*`, `&` and white space, and a name is right before its `<`.
fn innermost_open(b: &[u8], close: usize) -> Option<usize> {
    let mut i = close;
    while i > 0 {
        i -= 1;
        match b[i] {
            b'<' => {
                let name = b[..i]
                    .iter()
                    .rev()
                    .take_while(|c| is_word_byte(**c))
                    .count();
                // `T::template X<A>` keeps its arguments: `template` needs them.
                let keyword = std::str::from_utf8(&b[..i - name])
                    .is_ok_and(|t| t.trim_end().trim_end_matches("::").ends_with("template"));
                let open = name > 0 && !keyword && b.get(i + 1) != Some(&b'<') && i + 1 < close;
                return open.then_some(i);
            }
            c if is_word_byte(c) || c.is_ascii_whitespace() || b":,*&.".contains(&c) => {}
            _ => return None,
        }
    }
    None
}

/// `text` with each call of an upper-case macro that stands alone as a statement without a `;`
/// after it (its definition has one: `MATX_NVTX_START("", level)`, `INSTANTIATE(float, int)`)
/// blanked: a line that starts with the call and holds nothing else, before a line that starts
/// a new statement (a name, `}`, `#`, `[`). Calls with `[` in their arguments (an access) are
/// kept. `parse.rs` keeps it only where it leaves fewer bytes unparsed. `None` where there is
/// none.
pub fn statement_macro_calls(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out: Option<Vec<u8>> = None;
    let mut line_start = 0;
    for line in text.split_inclusive('\n') {
        let start = line_start;
        line_start += line.len();
        let code = line.trim_start();
        let at = start + line.len() - code.len();
        let name = code
            .bytes()
            .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == b'_')
            .count();
        if name < 2 || !code.as_bytes()[0].is_ascii_uppercase() {
            continue;
        }
        let open = at + name + (code[name..].len() - code[name..].trim_start().len());
        if bytes.get(open) != Some(&b'(') || on_directive(text, at) {
            continue;
        }
        let Some(end) = crate::rewrite::macros::balanced(text, open) else {
            continue;
        };
        let rest = &text[end..];
        let line_end = rest.find('\n').unwrap_or(rest.len());
        let tail = rest[..line_end].trim();
        if !(tail.is_empty() || tail.starts_with("//")) || text[open..end].contains('[') {
            continue;
        }
        let next = past_directives(&rest[line_end..]);
        let starts_statement = next
            .bytes()
            .next()
            .is_none_or(|c| is_word_byte(c) || b"}#[".contains(&c));
        if !starts_statement {
            continue;
        }
        let o = out.get_or_insert_with(|| bytes.to_vec());
        for b in &mut o[at..end] {
            if *b != b'\n' && *b != b'\r' {
                *b = b' ';
            }
        }
    }
    out.map(|b| String::from_utf8(b).expect("ASCII replaced ASCII"))
}

/// Whether the `.` at `dot` is a member access (`s.*pm`, `(o).*pm`), not a number's (`1.*x`).
fn member_dot(text: &str, dot: usize) -> bool {
    let before = &text.as_bytes()[..dot];
    if text.as_bytes()[dot] != b'.' || before.is_empty() {
        return false;
    }
    let word = before
        .iter()
        .rev()
        .take_while(|&&c| is_word_byte(c))
        .count();
    match word {
        0 => matches!(before[dot - 1], b')' | b']'),
        n => !before[dot - n].is_ascii_digit(),
    }
}

/// libcu++'s macros that stand for a statement's keywords, what each is read as, and the
/// character that must follow it (`None`: any): `if consteval` / `if !consteval` (`if constexpr
/// (true)` before C++23), and `try`/`catch` (`if constexpr (true) {` and `} else {` without
/// exceptions).
const KEYWORD_MACROS: &[(&str, &str, Option<u8>)] = &[
    ("_CCCL_IF_CONSTEVAL", "if (1)", Some(b'{')),
    ("_CCCL_IF_CONSTEVAL_DEFAULT", "if (1)", Some(b'{')),
    ("_CCCL_IF_NOT_CONSTEVAL", "if (1)", Some(b'{')),
    ("_CCCL_IF_NOT_CONSTEVAL_DEFAULT", "if (1)", Some(b'{')),
    ("_CCCL_TRY", "try", Some(b'{')),
    ("_CCCL_CATCH", "catch", Some(b'(')),
    ("_CCCL_CATCH_ALL", "catch (...)", Some(b'{')),
    ("_CCCL_CATCH_FALLTHROUGH", "", None),
    ("_CCCL_RETHROW", "throw", Some(b';')),
];

/// `text` with each of libcu++'s keyword macros (`KEYWORD_MACROS`) where it stands in code as
/// the keywords it is read as, and spaces: `_CCCL_IF_NOT_CONSTEVAL_DEFAULT {` as `if (1) {`,
/// `_CCCL_TRY { ... } _CCCL_CATCH (const E& e) { ... } _CCCL_CATCH_FALLTHROUGH` as `try { ... }
/// catch (const E& e) { ... }`. The blocks are code of the function, parsed and instrumented.
/// `None` where there is none.
pub fn keyword_macros(text: &str) -> Option<String> {
    let mut out: Option<Vec<u8>> = None;
    for (at, word) in identifiers(text) {
        let Some((_, keywords, next)) = KEYWORD_MACROS.iter().find(|(m, ..)| *m == word) else {
            continue;
        };
        let after = past_directives(&text[at + word.len()..]);
        if next.is_some_and(|c| after.as_bytes().first() != Some(&c)) || on_directive(text, at) {
            continue;
        }
        let o = out.get_or_insert_with(|| text.as_bytes().to_vec());
        let slot = &mut o[at..at + word.len()];
        slot.fill(b' ');
        slot[..keywords.len()].copy_from_slice(keywords.as_bytes());
    }
    out.map(|b| String::from_utf8(b).expect("ASCII replaced ASCII"))
}

/// `text` past white space, comments and whole directive lines (`_CCCL_IF_NOT_CONSTEVAL_DEFAULT`
/// alone in an `#if` group before its block).
fn past_directives(mut text: &str) -> &str {
    let mut line_start = false;
    loop {
        let trimmed = text.trim_start();
        line_start |= text[..text.len() - trimmed.len()].contains('\n');
        let whole_line = trimmed.starts_with("//") || (line_start && trimmed.starts_with('#'));
        line_start = whole_line;
        text = if whole_line {
            let mut end = 0;
            // A directive continued with `\` goes on to the next line.
            for line in trimmed.split_inclusive('\n') {
                end += line.len();
                if !line.trim_end().ends_with('\\') || trimmed.starts_with("//") {
                    break;
                }
            }
            &trimmed[end..]
        } else if let Some(comment) = trimmed.strip_prefix("/*") {
            comment.find("*/").map_or("", |e| &comment[e + 2..])
        } else {
            return trimmed;
        };
    }
}

#[cfg(test)]
#[path = "mask_forms_tests.rs"]
mod tests;

//! Where a big file may be cut into pieces that parse alone as they do in the whole file
//! (`pieces.rs`): just after a `;` that ends a top-level declaration, or the `}` that ends a
//! top-level function or namespace body when no `;` follows it (`void f() {};` parses as one
//! declaration). Never inside a brace, parenthesis or bracket, a comment, a string or character
//! literal, a directive or an `#if` group. Read from the masked text, the one parsed.

/// Cut points in `text`, each at least `piece` bytes after the one before (or the start) and
/// `piece` bytes before the end; none where the text is not over two pieces long.
pub fn cuts(text: &str, piece: usize) -> Vec<usize> {
    let mut out = Vec::new();
    if text.len() <= 2 * piece {
        return out;
    }
    let b = text.as_bytes();
    let mut last = 0;
    let mut depth = 0usize;
    let mut groups = 0usize;
    // The start of each top-level brace, for what came before it.
    let mut opened = 0;
    let mut line_start = true;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        // Most bytes are none of those the match reads: skipped a run at a time.
        if PLAIN[c as usize] {
            line_start = false;
            i += 1;
            while b.get(i).is_some_and(|&c| PLAIN[c as usize]) {
                i += 1;
            }
            continue;
        }
        let mut at = None;
        match c {
            b'\n' => {
                line_start = true;
                i += 1;
                continue;
            }
            b' ' | b'\t' | b'\r' | b'\x0b' | b'\x0c' => {
                i += 1;
                continue;
            }
            b'#' if line_start => {
                match directive(b, i + 1) {
                    Some(Group::Open) => groups += 1,
                    Some(Group::Close) if groups == 0 => return out,
                    Some(Group::Close) => groups -= 1,
                    None => {}
                }
                i = skip_directive(b, i);
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'/') || b.get(i + 1) == Some(&b'*') => {
                i = skip_comment(b, i);
                continue;
            }
            b'"' | b'\'' if c == b'"' || !digit_separator(b, i) => {
                i = skip_quoted(b, i);
                line_start = false;
                continue;
            }
            b'{' | b'(' | b'[' => {
                if depth == 0 && c == b'{' {
                    opened = i;
                }
                depth += 1;
            }
            b'}' | b')' | b']' => {
                // More closed than opened: nothing after this is read right.
                let Some(d) = depth.checked_sub(1) else {
                    return out;
                };
                depth = d;
                if depth == 0 && c == b'}' && body_ends(b, opened, i + 1) {
                    at = Some(i + 1);
                }
            }
            b';' if depth == 0 => at = Some(i + 1),
            _ => {}
        }
        line_start = false;
        i += 1;
        if let Some(at) = at.filter(|&at| groups == 0 && at - last >= piece) {
            if b.len() - at < piece {
                break;
            }
            out.push(at);
            last = at;
        }
    }
    out
}

/// The bytes `cuts` reads as nothing but the end of a line's start.
const PLAIN: [bool; 256] = {
    let mut plain = [true; 256];
    let read = b"\n \t\r\x0b\x0c#/\"'{([})];";
    let mut i = 0;
    while i < read.len() {
        plain[read[i] as usize] = false;
        i += 1;
    }
    plain
};

enum Group {
    Open,
    Close,
}

/// Whether the directive whose name starts at `i` (after the `#`) opens or closes an `#if`
/// group.
fn directive(b: &[u8], mut i: usize) -> Option<Group> {
    while b.get(i).is_some_and(|c| *c == b' ' || *c == b'\t') {
        i += 1;
    }
    let name = &b[i..(i + 6).min(b.len())];
    if name.starts_with(b"if") {
        Some(Group::Open)
    } else if name.starts_with(b"endif") {
        Some(Group::Close)
    } else {
        None
    }
}

/// Past the directive at `i`: its lines joined by a backslash, and comments and literals in it,
/// up to its newline.
fn skip_directive(b: &[u8], mut i: usize) -> usize {
    while i < b.len() {
        match b[i] {
            b'\n' => return i,
            b'\\' => i += 2,
            b'/' if b.get(i + 1) == Some(&b'/') || b.get(i + 1) == Some(&b'*') => {
                i = skip_comment(b, i);
            }
            b'"' | b'\'' => i = skip_quoted(b, i),
            _ => i += 1,
        }
    }
    b.len()
}

/// Past the comment at `i` (a line comment up to its newline, backslash-joined lines included).
fn skip_comment(b: &[u8], i: usize) -> usize {
    if b[i + 1] == b'*' {
        let end = b[i + 2..].windows(2).position(|w| w == b"*/");
        return end.map_or(b.len(), |e| i + 2 + e + 2);
    }
    let mut j = i + 2;
    while j < b.len() && b[j] != b'\n' {
        j += if b[j] == b'\\' { 2 } else { 1 };
    }
    j.min(b.len())
}

/// Past the literal opened at `i`; at the end of its line where it is not closed there.
fn skip_quoted(b: &[u8], i: usize) -> usize {
    let quote = b[i];
    let mut j = i + 1;
    while j < b.len() && b[j] != quote && b[j] != b'\n' {
        j += if b[j] == b'\\' { 2 } else { 1 };
    }
    match b.get(j) {
        Some(&c) if c == quote => j + 1,
        _ => j.min(b.len()),
    }
}

/// Whether the `'` at `i` separates digits (`1'000'000`): inside a number.
fn digit_separator(b: &[u8], i: usize) -> bool {
    let word = |c: &u8| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'.';
    let start = b[..i].iter().rposition(|c| !word(c)).map_or(0, |p| p + 1);
    start < i && b[start].is_ascii_digit()
}

/// Whether the top-level braces from `open` to just before `end` are a function's or a
/// namespace's body (a `)`, `namespace N` or `extern "C"` before them) followed by the start of
/// another declaration, a directive or the end: what may follow a declaration that ends there.
fn body_ends(b: &[u8], open: usize, end: usize) -> bool {
    let head = b[..open].trim_ascii_end();
    let name_start = head
        .iter()
        .rposition(|c| !(c.is_ascii_alphanumeric() || *c == b'_' || *c == b':'))
        .map_or(0, |p| p + 1);
    let before_name = head[..name_start].trim_ascii_end();
    let body = head.ends_with(b")")
        || head.ends_with(b"\"")
        || head.ends_with(b"namespace")
        || before_name.ends_with(b"namespace");
    if !body {
        return false;
    }
    let mut j = end;
    loop {
        while b.get(j).is_some_and(u8::is_ascii_whitespace) {
            j += 1;
        }
        if b.get(j) == Some(&b'/') && matches!(b.get(j + 1), Some(b'/' | b'*')) {
            j = skip_comment(b, j);
            continue;
        }
        break;
    }
    let Some(&next) = b.get(j) else {
        return true;
    };
    let word_end = b[j..]
        .iter()
        .position(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
        .map_or(b.len(), |p| j + p);
    let continues = [&b"else"[..], b"catch", b"while"].contains(&&b[j..word_end]);
    next == b'#'
        || b[j..].starts_with(b"[[")
        || (next.is_ascii_alphabetic() || next == b'_') && !continues
}

#[cfg(test)]
mod tests {
    /// Every place `text` may be cut (in pieces of one byte), as the text before it.
    fn places(text: &str) -> Vec<&str> {
        // Cuts keep a piece's length from the end.
        let padded = format!("{text}  ");
        let at = super::cuts(&padded, 1);
        at.into_iter().map(|a| &text[..a]).collect()
    }

    fn ends(text: &str) -> Vec<String> {
        let mut last = 0;
        let mut out = Vec::new();
        for before in places(text) {
            out.push(before[last..].trim().to_string());
            last = before.len();
        }
        out
    }

    #[test]
    fn cuts_end_top_level_declarations_and_bodies() {
        let text = "int a;\nvoid f(int x) { x; }\nstruct S { int b; } s;\nnamespace n { int c; }\nextern \"C\" { int d; }\n";
        assert_eq!(
            ends(text),
            [
                "int a;",
                "void f(int x) { x; }",
                "struct S { int b; } s;",
                "namespace n { int c; }",
                "extern \"C\" { int d; }"
            ]
        );
    }

    #[test]
    fn no_cut_where_the_declaration_goes_on() {
        assert_eq!(ends("void f() {};\nint a;"), ["void f() {};", "int a;"]);
        assert_eq!(ends("void f() {} /* c */ ;"), ["void f() {} /* c */ ;"]);
        assert_eq!(ends("int a[] = {1, 2};"), ["int a[] = {1, 2};"]);
        assert_eq!(
            ends("void f() try {} catch (...) {}\nint a;"),
            ["void f() try {} catch (...) {}", "int a;"]
        );
        assert_eq!(ends("auto l = [](int) { };"), ["auto l = [](int) { };"]);
    }

    #[test]
    fn no_cut_inside_comments_literals_directives_or_groups() {
        let text = "// a; }\n/* b; } */ const char *s = \"c;}\";\nchar d = ';';\nint e = 1'000;\n#define X a; b\n#if A\nint f;\n#endif\nFOO(a; b)\nint g;";
        assert_eq!(
            ends(text),
            [
                "// a; }\n/* b; } */ const char *s = \"c;}\";",
                "char d = ';';",
                "int e = 1'000;",
                "#define X a; b\n#if A\nint f;\n#endif\nFOO(a; b)\nint g;"
            ]
        );
    }

    #[test]
    fn an_unclosed_quote_ends_with_its_line() {
        let text = "#error don't\n#if A\nint a;\n#endif\nint b;";
        assert_eq!(ends(text), ["#error don't\n#if A\nint a;\n#endif\nint b;"]);
        assert_eq!(ends("char c = 'x;\nint b;"), ["char c = 'x;\nint b;"]);
    }

    #[test]
    fn a_short_text_or_more_closed_than_opened_is_not_cut_past_that() {
        assert!(super::cuts("int a; int b;", 8).is_empty());
        assert_eq!(ends("int a; }\nint b;"), ["int a;"]);
        assert_eq!(ends("int a;\n#endif\nint b;"), ["int a;"]);
    }
}

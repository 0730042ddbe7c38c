//! Parsing CUDA with tree-sitter, and finding the first syntax error.

use tree_sitter::{Node, Parser, Tree};

/// Parses `text`. `#pragma` lines are blanked (same length, newlines kept) in the copy that is
/// parsed, because tree-sitter cannot attach `if (c)\n#pragma unroll\nfor ...` to the `if`;
/// byte offsets are unchanged, so edits still apply to the original text.
pub fn parse(text: &str) -> Tree {
    thread_local! {
        // One parser per thread: creating one per file costs more than small files take.
        static PARSER: std::cell::RefCell<Parser> = std::cell::RefCell::new({
            let mut p = Parser::new();
            p.set_language(&crate::rewrite::queries::language()).expect("tree-sitter-cuda ABI matches tree-sitter");
            p
        });
    }
    PARSER.with_borrow_mut(|p| {
        p.parse(blank_pragmas(text).as_bytes(), None)
            .expect("parse without timeout or cancellation")
    })
}

fn blank_pragmas(text: &str) -> std::borrow::Cow<'_, str> {
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

/// The first syntax error of a file, kept until the file's turn comes to be reported.
#[derive(Clone, Debug, PartialEq)]
pub struct SyntaxError {
    pub at: usize,
    /// `syntax error`, or `missing `X`` for a token tree-sitter had to invent.
    pub what: String,
}

pub fn syntax_error(tree: &Tree) -> Option<SyntaxError> {
    first_error(tree).map(|e| SyntaxError {
        at: e.start_byte(),
        what: if e.is_missing() {
            format!("missing `{}`", e.kind())
        } else {
            "syntax error".to_string()
        },
    })
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
    fn first_error_is_reported() {
        let tree = parse("__global__ void k(int *a) { a[0] = ; }\n");
        let e = first_error(&tree).expect("an error");
        assert_eq!(e.start_position().row, 0);
        assert!(first_error(&parse("__global__ void k(int *a) { a[0] = 1; }\n")).is_none());
    }
}

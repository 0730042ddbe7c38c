//! `wmfix insert --dump-tree FILE`: the parse tree as tree-sitter sees it, for writing queries.

use std::fmt::Write;

pub fn dump_tree(text: &str) -> String {
    let tree = crate::rewrite::parse::parse(text);
    let mut out = String::new();
    crate::rewrite::parse::each_node(&tree, |cursor, depth| {
        let node = cursor.node();
        let field = cursor
            .field_name()
            .map(|f| format!("{f}: "))
            .unwrap_or_default();
        let (l, c) = (
            node.start_position().row + 1,
            node.start_position().column + 1,
        );
        let leaf = if node.child_count() == 0 {
            format!(" {:?}", &text[node.byte_range()])
        } else {
            String::new()
        };
        let kind = if node.is_missing() {
            format!("MISSING {}", node.kind())
        } else {
            node.kind().to_string()
        };
        let _ = writeln!(out, "{}{field}{kind} [{l}:{c}]{leaf}", "  ".repeat(depth));
        std::ops::ControlFlow::<(), bool>::Continue(true)
    });
    out
}

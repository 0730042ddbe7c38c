use super::*;
use crate::rewrite::queries;
use tree_sitter::{Query, QueryCursor, StreamingIterator};

/// What one engine found over a tree: each capture's node ids in the order found, and the
/// matches of more than one capture, each as (capture name, node id) pairs sorted.
type Found = (Vec<(String, Vec<usize>)>, Vec<Vec<(String, usize)>>);

/// tree-sitter's own compile of the same patterns, once.
fn query() -> &'static Query {
    static Q: std::sync::OnceLock<Query> = std::sync::OnceLock::new();
    Q.get_or_init(|| Query::new(&queries::language(), &queries::text()).unwrap())
}

fn tree_sitters(root: Node, text: &[u8]) -> Found {
    let q = query();
    let names = q.capture_names();
    let mut by: Vec<Vec<usize>> = vec![Vec::new(); names.len()];
    let mut matches = Vec::new();
    let mut c = QueryCursor::new();
    let mut it = c.matches(q, root, text);
    while let Some(m) = it.next() {
        for cap in m.captures() {
            by[cap.index as usize].push(cap.node.id());
        }
        if m.captures().len() > 1 {
            let mut one: Vec<_> = m
                .captures()
                .iter()
                .map(|c| (names[c.index as usize].to_string(), c.node.id()))
                .collect();
            one.sort();
            matches.push(one);
        }
    }
    let mut by: Vec<_> = names.iter().map(|n| n.to_string()).zip(by).collect();
    by.sort();
    (by, matches)
}

fn mine(p: &Patterns, root: Node, text: &[u8]) -> Found {
    let names = p.capture_names();
    let mut by: Vec<Vec<usize>> = vec![Vec::new(); names.len()];
    let mut matches = Vec::new();
    p.walk(root, text, false, |b| {
        for (c, n) in b {
            by[*c as usize].push(n.id());
        }
        if b.len() > 1 {
            let mut one: Vec<_> = b
                .iter()
                .map(|(c, n)| (names[*c as usize].clone(), n.id()))
                .collect();
            one.sort();
            matches.push(one);
        }
    });
    let mut by: Vec<_> = names.iter().cloned().zip(by).collect();
    by.sort();
    (by, matches)
}

#[test]
fn finds_what_tree_sitters_query_cursor_finds_on_every_fixture_and_study() {
    let p = Patterns::new(&queries::language(), &queries::text()).unwrap();
    for path in crate::rewrite::top_level::tests::fixture_paths() {
        let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
        let tree = crate::rewrite::parse::parse(&text);
        let (a, b) = (
            tree_sitters(tree.root_node(), text.as_bytes()),
            mine(&p, tree.root_node(), text.as_bytes()),
        );
        for ((name, ts), (_, me)) in a.0.iter().zip(&b.0) {
            assert_eq!(ts, me, "{}: @{name}", path.display());
        }
        assert_eq!(
            a.1,
            b.1,
            "{}: the matches of several captures",
            path.display()
        );
    }
}

/// The same comparisons (and `flat.rs`'s with the cursor) over any trees: `CORPUS=dir:dir cargo test --release --lib
/// matcher::tests::corpus -- --ignored --nocapture` (files nested too deep for tree-sitter's
/// cursor, which the rewriter does not query either, are left out).
#[test]
#[ignore]
fn corpus() {
    let p = Patterns::new(&queries::language(), &queries::text()).unwrap();
    let dirs = std::env::var("CORPUS").expect("CORPUS: folders, separated by `:`");
    let (mut n, mut differ) = (0, Vec::new());
    for d in dirs.split(':') {
        for e in walkdir::WalkDir::new(d).into_iter().filter_map(Result::ok) {
            let path = e.path();
            let cuda = ["cu", "cuh", "h", "hpp", "inl"].map(Some);
            if !e.file_type().is_file()
                || !cuda.contains(&path.extension().and_then(|x| x.to_str()))
            {
                continue;
            }
            let text = String::from_utf8_lossy(&std::fs::read(path).unwrap()).into_owned();
            let tree = crate::rewrite::parse::parse(&text);
            if crate::rewrite::parse::syntax_error(&tree, &text).is_some_and(|e| e.too_deep) {
                continue;
            }
            n += 1;
            let root = tree.root_node();
            if tree_sitters(root, text.as_bytes()) != mine(&p, root, text.as_bytes()) {
                differ.push(path.display().to_string());
            }
            if let Some(d) = crate::rewrite::flat::tests::differs(root, None) {
                differ.push(format!("{}: the flat tree: {d}", path.display()));
            }
        }
    }
    eprintln!("{n} files, {} differ", differ.len());
    assert!(differ.is_empty(), "{differ:#?}");
}

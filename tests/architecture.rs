//! The shape of `src/` (issue 12): no import circle between files or between folders, and no
//! source file over 800 lines (tests may sit in files of their own). A `crate::a::b` path in
//! a file's non-test code (before its first `#[cfg(test)]`) imports the file `a/b.rs`, or the
//! folder `a` when no such file exists.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Graph = BTreeMap<String, BTreeSet<String>>;

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Module path of a file under src/: `reduce/algorithm.rs` -> `reduce::algorithm`.
fn module(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let s = rel.to_string_lossy().replace('/', "::");
    s.strip_suffix("::mod").unwrap_or(&s).to_string()
}

fn crate_paths(text: &str) -> BTreeSet<String> {
    let code = text.split("#[cfg(test)]").next().unwrap();
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + 7..];
        let path: String = rest
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || *c == '_' || *c == ':')
            .collect();
        let parts: Vec<&str> = path.split("::").filter(|p| !p.is_empty()).take(2).collect();
        if !parts.is_empty() {
            out.insert(parts.join("::"));
        }
    }
    out
}

fn graph() -> (Graph, BTreeMap<String, usize>) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut texts = BTreeMap::new();
    let mut lines = BTreeMap::new();
    for f in &files {
        if f.ends_with("main.rs") {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap();
        lines.insert(
            f.strip_prefix(&src).unwrap().display().to_string(),
            text.lines().count(),
        );
        texts.insert(module(&src, f), text);
    }
    let names: BTreeSet<String> = texts.keys().cloned().collect();
    let resolve = |d: &str| -> Option<String> {
        if names.contains(d) {
            return Some(d.to_string());
        }
        let top = d.split("::").next().unwrap();
        names.contains(top).then(|| top.to_string())
    };
    let g = texts
        .iter()
        .map(|(m, t)| {
            let deps = crate_paths(t)
                .iter()
                .filter_map(|d| resolve(d))
                .filter(|d| d != m)
                .collect();
            (m.clone(), deps)
        })
        .collect();
    (g, lines)
}

fn circles(g: &Graph) -> Vec<Vec<String>> {
    fn visit(
        u: &str,
        g: &Graph,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
        found: &mut Vec<Vec<String>>,
    ) {
        state.insert(u.to_string(), 1);
        stack.push(u.to_string());
        for v in g.get(u).into_iter().flatten() {
            match state.get(v.as_str()) {
                Some(1) => {
                    let i = stack.iter().position(|s| s == v).unwrap();
                    let mut c = stack[i..].to_vec();
                    c.push(v.clone());
                    found.push(c);
                }
                None => visit(v, g, state, stack, found),
                _ => {}
            }
        }
        stack.pop();
        state.insert(u.to_string(), 2);
    }
    let (mut state, mut stack, mut found) = (BTreeMap::new(), Vec::new(), Vec::new());
    for u in g.keys() {
        if !state.contains_key(u) {
            visit(u, g, &mut state, &mut stack, &mut found);
        }
    }
    found
}

fn folders(g: &Graph) -> Graph {
    let mut out = Graph::new();
    for (m, deps) in g {
        let a = m.split("::").next().unwrap();
        for d in deps {
            let b = d.split("::").next().unwrap();
            if a != b {
                out.entry(a.to_string()).or_default().insert(b.to_string());
            }
        }
    }
    out
}

#[test]
fn no_import_circle_between_files_or_folders() {
    let (g, _) = graph();
    assert!(g.len() > 40, "read {} modules", g.len());
    assert_eq!(circles(&g), Vec::<Vec<String>>::new(), "file circles");
    assert_eq!(
        circles(&folders(&g)),
        Vec::<Vec<String>>::new(),
        "folder circles"
    );
}

#[test]
fn the_circle_finder_finds_circles() {
    let mut g = Graph::new();
    g.insert("a::x".into(), ["b::y".into()].into());
    g.insert("b::y".into(), ["c".into()].into());
    g.insert("c".into(), ["a::x".into()].into());
    assert_eq!(circles(&g).len(), 1);
    assert_eq!(circles(&folders(&g)).len(), 1);
    assert_eq!(
        crate_paths(
            "use crate::run::batch::{self, Batch};\nlet x = crate::rng::seed(1);\n#[cfg(test)]\nuse crate::cmd::test;"
        ),
        ["rng::seed".to_string(), "run::batch".to_string()].into()
    );
}

#[test]
fn no_source_file_over_800_lines_but_tests() {
    let (_, lines) = graph();
    let long: Vec<_> = lines
        .iter()
        .filter(|(f, n)| **n > 800 && !f.ends_with("tests.rs"))
        .collect();
    assert!(long.is_empty(), "over 800 lines: {long:?}");
}

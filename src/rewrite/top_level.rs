//! A big file's top-level declarations in a few contiguous groups of about equal size, so that
//! walks over its tree (the query, the way down to each access) can run on several cores and
//! still hand their results back in source order.

use crate::rewrite::parallel;
use tree_sitter::Node;

/// Source bytes below which a file is walked by one thread: starting threads costs about what
/// splitting a smaller file saves.
pub const SPLIT_BYTES: usize = 1 << 20;

/// The root's children in up to one group per core, in source order; none for a file smaller
/// than `SPLIT_BYTES`, and one group where the root has one child (a header's include guard).
pub fn groups(root: Node) -> Vec<Vec<Node>> {
    #[cfg(test)]
    if let Some((bytes, parts)) = tests::FORCED.get() {
        return if root.byte_range().len() < bytes {
            Vec::new()
        } else {
            groups_of(root, parts)
        };
    }
    if root.byte_range().len() < SPLIT_BYTES {
        return Vec::new();
    }
    groups_of(root, parallel::cores())
}

/// The root's children in up to `parts` contiguous groups of about equal bytes.
pub fn groups_of(root: Node, parts: usize) -> Vec<Vec<Node>> {
    let per = root.byte_range().len().div_ceil(parts.max(1)).max(1);
    let mut out: Vec<Vec<Node>> = Vec::new();
    let mut group = Vec::new();
    let mut next_bound = root.start_byte() + per;
    let mut c = root.walk();
    for child in root.children(&mut c) {
        if child.start_byte() >= next_bound && !group.is_empty() && out.len() + 1 < parts {
            out.push(std::mem::take(&mut group));
            next_bound = child.start_byte() + per;
        }
        group.push(child);
    }
    if !group.is_empty() {
        out.push(group);
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use crate::fences::scope::FenceScope;
    use crate::rewrite::render;
    use crate::rewrite::source::SourceFile;
    use std::cell::Cell;

    thread_local! {
        /// For this thread's files: split from this many bytes on, into this many parts.
        pub static FORCED: Cell<Option<(usize, usize)>> = const { Cell::new(None) };
    }

    /// Every CUDA file of the fixtures and case studies, in name order.
    pub(crate) fn fixture_paths() -> Vec<std::path::PathBuf> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut paths: Vec<_> = ["tests/fixtures", "case-studies"]
            .iter()
            .flat_map(|d| walkdir::WalkDir::new(root.join(d)))
            .filter_map(Result::ok)
            .map(walkdir::DirEntry::into_path)
            .filter(|p| p.extension().is_some_and(|e| e == "cu" || e == "cuh"))
            .collect();
        paths.sort();
        paths
    }

    /// Every CUDA file of the fixtures and case studies, one after the other: syntax errors,
    /// preprocessor groups, templates and macros at the top level.
    pub(crate) fn every_fixture() -> String {
        fixture_paths()
            .iter()
            .map(|p| String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned())
            .collect()
    }

    /// The instrumented text, the fence records and the warnings of one file, split as `forced`
    /// says.
    fn instrumented(text: &str, forced: Option<(usize, usize)>) -> (String, String, String) {
        FORCED.set(forced);
        let file = SourceFile::new("all.cu".into(), "all.cu".into(), text.to_string());
        let mut files = render::plan_files(vec![file], Default::default());
        FORCED.set(None);
        let warnings = files[0].plan.warnings.join("\n");
        let done = render::render(&mut files, FenceScope::Device, |_| "wmfix.cuh".into()).unwrap();
        let fences = serde_json::to_string(&done.fences).unwrap();
        (done.texts[0].clone().unwrap(), fences, warnings)
    }

    #[test]
    fn a_split_file_is_instrumented_as_an_unsplit_one() {
        let text = every_fixture();
        let one = instrumented(&text, Some((usize::MAX, 1)));
        let fences = one.0.matches("WMFIX_FENCE").count();
        assert!(fences > 300, "{fences} fences");
        for parts in [2, 3, 16] {
            assert!(
                instrumented(&text, Some((0, parts))) == one,
                "{parts} parts"
            );
        }
    }

    #[test]
    fn groups_keep_every_child_once_in_order() {
        let text = "int a;\nint b;\nint c;\nint d;\n";
        let tree = crate::rewrite::parse::parse(text);
        let root = tree.root_node();
        let groups = super::groups_of(root, 2);
        assert_eq!(groups.len(), 2);
        let starts: Vec<usize> = groups.iter().flatten().map(|n| n.start_byte()).collect();
        assert_eq!(starts, [0, 7, 14, 21]);
        assert_eq!(super::groups_of(root, 1).len(), 1);
        assert!(super::groups(root).is_empty(), "a small file");
    }
}

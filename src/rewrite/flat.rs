//! A tree's nodes in pre-order, each with what matching asks of it (kind, field, named) and
//! where its subtree ends, read in one pass over tree-sitter's subtrees (`flat.c`). The matcher
//! asks for each node's children once per pattern that starts there and again for every nested
//! step: through tree-sitter's cursor that cost more than the matching, and even one cursor
//! walk did (`flat.c` says why).

use tree_sitter::Node;

/// The nodes of a tree in pre-order; a node's children follow it, each child's subtree
/// after the one before.
pub struct Flat<'t> {
    entries: Vec<Entry<'t>>,
}

/// As `flat.c` writes it.
#[repr(C)]
pub struct Entry<'t> {
    pub node: Node<'t>,
    /// The index after the node's last descendant (in the tree as read).
    end: u32,
    pub kind: u16,
    /// The field the node is in within its parent; 0: none.
    pub field: u16,
    /// Whether its kind is named (`Language::node_kind_is_named`).
    pub named: bool,
    pub error: bool,
}

const _: () = assert!(size_of::<Entry>() == 48, "flat.c's WmfixEntry is 48 bytes");

unsafe extern "C" {
    fn wmfix_flat(
        root: tree_sitter::ffi::TSNode,
        max_depth: u32,
        out: *mut Entry,
        capacity: u64,
    ) -> i64;
}

/// A node of a `Flat`, by its index.
pub type At = u32;

impl<'t> Flat<'t> {
    /// `root` and its descendants down to `depth` levels below it (all, without one).
    pub fn of(root: Node<'t>, depth: Option<usize>) -> Flat<'t> {
        // tree-sitter keeps every subtree's count of visible nodes: the whole tree is read
        // into a vector sized once; the top of one, first into a small one.
        let all = root.descendant_count();
        let max_depth = depth.map_or(u32::MAX, |d| d.try_into().unwrap_or(u32::MAX));
        let first = if depth.is_some() { all.min(256) } else { all };
        for capacity in [first, all] {
            let mut entries: Vec<Entry<'t>> = Vec::with_capacity(capacity);
            // SAFETY: `flat.c` writes at most `capacity` entries of this layout into the
            // vector's spare room, nodes of `root`'s tree, which outlives 't; it returns how
            // many, or -1.
            let n = unsafe {
                wmfix_flat(
                    root.into_raw(),
                    max_depth,
                    entries.as_mut_ptr(),
                    capacity as u64,
                )
            };
            if let Ok(n) = usize::try_from(n) {
                // SAFETY: the first `n` entries are written.
                unsafe { entries.set_len(n) };
                return Flat { entries };
            }
        }
        panic!("a subtree has no more nodes than tree-sitter counts, and memory for its walk")
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn get(&self, i: At) -> &Entry<'t> {
        &self.entries[i as usize]
    }

    /// The index after `i`'s last descendant (in the tree as read): its next sibling's, or
    /// that of the next node after its subtree.
    pub fn after(&self, i: At) -> At {
        self.get(i).end
    }

    /// The first child of `i`, if it has any (in the tree as read).
    pub fn first_child(&self, i: At) -> Option<At> {
        (i + 1 < self.get(i).end).then_some(i + 1)
    }

    /// The sibling after `child`, a child of `parent`.
    pub fn next_sibling(&self, parent: At, child: At) -> Option<At> {
        let next = self.get(child).end;
        (next < self.get(parent).end).then_some(next)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::rewrite::parse;

    fn parsed(text: &str) -> tree_sitter::Tree {
        parse::parse(text)
    }

    /// The same nodes, children and fields as tree-sitter's own child lists give.
    fn same_as_tree_sitter(flat: &Flat, i: At, node: Node, depth: Option<usize>) {
        let e = flat.get(i);
        assert_eq!(e.node, node);
        assert_eq!(
            (e.kind, e.named, e.error),
            (node.kind_id(), node.is_named(), node.is_error())
        );
        let mine: Vec<At> =
            std::iter::successors(flat.first_child(i), |&c| flat.next_sibling(i, c)).collect();
        if depth == Some(0) {
            assert!(mine.is_empty());
            return;
        }
        let mut c = node.walk();
        let theirs: Vec<Node> = node.children(&mut c).collect();
        assert_eq!(mine.len(), theirs.len(), "children of {}", node.kind());
        for (k, (&m, t)) in mine.iter().zip(&theirs).enumerate() {
            let field = node.field_name_for_child(k as u32);
            let lang = node.language();
            let field = field
                .and_then(|f| lang.field_id_for_name(f))
                .map_or(0, u16::from);
            assert_eq!(flat.get(m).field, field);
            same_as_tree_sitter(flat, m, *t, depth.map(|d| d - 1));
        }
    }

    /// Each node as tree-sitter's cursor reads it: (id, kind, field, named, error, end), named
    /// by its kind, as the matcher asks.
    fn by_cursor(root: Node, depth: Option<usize>) -> Vec<(usize, u16, u16, bool, bool, u32)> {
        let lang = root.language();
        let mut out = Vec::new();
        let mut open: Vec<usize> = Vec::new();
        let mut c = root.walk();
        loop {
            let n = c.node();
            let kind = n.kind_id();
            let named = kind == u16::MAX || lang.node_kind_is_named(kind);
            let field = c.field_id().map_or(0, u16::from);
            open.push(out.len());
            out.push((n.id(), kind, field, named, kind == u16::MAX, 0));
            if depth.is_none_or(|d| open.len() <= d) && c.goto_first_child() {
                continue;
            }
            loop {
                let done = open.pop().unwrap();
                out[done].5 = out.len() as u32;
                if c.goto_next_sibling() {
                    break;
                }
                if !c.goto_parent() {
                    return out;
                }
            }
        }
    }

    /// Where `Flat::of(root, depth)` differs from the cursor's reading, if anywhere.
    pub(crate) fn differs(root: Node, depth: Option<usize>) -> Option<String> {
        let flat = Flat::of(root, depth);
        let mine: Vec<_> = flat
            .entries
            .iter()
            .map(|e| (e.node.id(), e.kind, e.field, e.named, e.error, e.end))
            .collect();
        let theirs = by_cursor(root, depth);
        let at = mine.iter().zip(&theirs).position(|(m, t)| m != t);
        match at {
            None if mine.len() == theirs.len() => None,
            None => Some(format!("{} nodes, the cursor {}", mine.len(), theirs.len())),
            Some(i) => Some(format!(
                "node {i} ({}): {:?}, the cursor {:?}",
                flat.entries[i].node.kind(),
                mine[i],
                theirs[i]
            )),
        }
    }

    #[test]
    fn reads_what_the_cursor_reads_on_every_fixture_and_study() {
        let paths = crate::rewrite::top_level::tests::fixture_paths();
        assert!(paths.len() > 20, "{} files", paths.len());
        for path in paths {
            let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
            let tree = parsed(&text);
            let root = tree.root_node();
            if let Some(d) = differs(root, None) {
                panic!("{}: {d}", path.display());
            }
            // The top of the tree, and subtrees whose nodes sit under aliases and fields.
            for depth in [0, 1, 3] {
                assert_eq!(differs(root, Some(depth)), None, "{}", path.display());
            }
            let mut c = root.walk();
            for child in root.children(&mut c).step_by(7) {
                assert_eq!(differs(child, None), None, "{}", path.display());
                assert_eq!(differs(child, Some(2)), None, "{}", path.display());
            }
        }
    }

    #[test]
    fn reads_aliased_nodes() {
        // `typename T::U{}` and `typename W<T>::type(x)`: a rule aliased `dependent_type`, and
        // in it a `qualified_type_identifier` aliased `qualified_identifier`.
        let text = "template <class T> __device__ T f(T *p) {\n  auto a = typename T::U{};\n  return typename W<T>::type(*p);\n}\n";
        let tree = parsed(text);
        let flat = Flat::of(tree.root_node(), None);
        let aliased = flat
            .entries
            .iter()
            .filter(|e| e.node.kind() == "dependent_type");
        assert_eq!(aliased.count(), 2, "{}", tree.root_node().to_sexp());
        assert_eq!(differs(tree.root_node(), None), None);
    }

    const TEXT: &str = "__global__ void k(int *a, int n) {\n  int i = threadIdx.x;\n  if (i < n) { a[i] = a[i] + 1; atomicAdd(&a[0], 1); }\n}\nint g(int x) { return x @ 1; }\n";

    #[test]
    fn reads_every_node_with_its_children_and_field() {
        let tree = parsed(TEXT);
        let flat = Flat::of(tree.root_node(), None);
        same_as_tree_sitter(&flat, 0, tree.root_node(), None);
        // The count the vector is sized by is the count read.
        assert_eq!(flat.len(), tree.root_node().descendant_count());
        assert_eq!(flat.entries.capacity(), flat.len());
        assert!(
            flat.entries.iter().any(|e| e.error),
            "the syntax error is an ERROR node"
        );
    }

    #[test]
    fn reads_a_subtree_and_stops_at_a_depth() {
        let tree = parsed(TEXT);
        let kernel = tree.root_node().child(0).unwrap();
        let whole = Flat::of(kernel, None);
        same_as_tree_sitter(&whole, 0, kernel, None);
        assert_eq!(
            whole.get(0).end as usize,
            whole.len(),
            "nothing beside the root"
        );
        assert_eq!(whole.after(0) as usize, whole.len());
        assert_eq!(whole.len(), kernel.descendant_count());
        for d in 0..3 {
            let cut = Flat::of(kernel, Some(d));
            same_as_tree_sitter(&cut, 0, kernel, Some(d));
            assert!(cut.len() < whole.len());
        }
    }
}

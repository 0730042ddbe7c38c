//! A tree's nodes in pre-order, each with what matching asks of it (kind, field, named) and
//! where its subtree ends, read with one walk of tree-sitter's cursor. The matcher asks for
//! each node's children once per pattern that starts there and again for every nested step;
//! through the cursor each time, that walking cost more than the matching.

use tree_sitter::{Language, Node};

/// The nodes of a tree in pre-order; a node's children follow it, each child's subtree
/// after the one before.
pub struct Flat<'t> {
    entries: Vec<Entry<'t>>,
}

pub struct Entry<'t> {
    pub node: Node<'t>,
    /// The index after the node's last descendant (in the tree as read).
    end: u32,
    pub kind: u16,
    /// The field the node is in within its parent; 0: none.
    pub field: u16,
    pub named: bool,
    pub error: bool,
}

/// Whether each kind of a grammar is named, by kind id: asked of each node, the same answer
/// costs a look-up of its alias.
pub struct Named(Vec<bool>);

impl Named {
    pub fn of(language: &Language) -> Named {
        let kinds = 0..language.node_kind_count() as u16;
        Named(kinds.map(|k| language.node_kind_is_named(k)).collect())
    }

    /// ERROR nodes, named, are kind u16::MAX, beyond the grammar's kinds.
    fn get(&self, kind: u16) -> bool {
        self.0.get(kind as usize).copied().unwrap_or(true)
    }
}

/// A node of a `Flat`, by its index.
pub type At = u32;

impl<'t> Flat<'t> {
    /// `root` and its descendants down to `depth` levels below it (all, without one), in a
    /// tree of the grammar `named` was made for.
    pub fn of(root: Node<'t>, depth: Option<usize>, named: &Named) -> Flat<'t> {
        // About one node for two bytes of code: the vector seldom grows.
        let mut entries: Vec<Entry<'t>> = Vec::with_capacity(root.byte_range().len() / 2 + 1);
        // The entries whose subtree is still being read: the path from `root`.
        let mut open: Vec<usize> = Vec::new();
        let mut c = root.walk();
        loop {
            let node = c.node();
            let kind = node.kind_id();
            open.push(entries.len());
            entries.push(Entry {
                node,
                end: 0,
                kind,
                field: c.field_id().map_or(0, u16::from),
                named: named.get(kind),
                error: kind == u16::MAX,
            });
            if depth.is_none_or(|d| open.len() <= d) && c.goto_first_child() {
                continue;
            }
            loop {
                let done = open.pop().expect("the path holds the cursor's node");
                entries[done].end = entries.len() as u32;
                // A cursor made at `root` goes neither beside nor above it.
                if c.goto_next_sibling() {
                    break;
                }
                if !c.goto_parent() {
                    return Flat { entries };
                }
            }
        }
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
mod tests {
    use super::*;
    use crate::rewrite::parse;

    fn parsed(text: &str) -> tree_sitter::Tree {
        parse::parse(text)
    }

    fn named() -> Named {
        Named::of(&crate::rewrite::queries::language())
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

    const TEXT: &str = "__global__ void k(int *a, int n) {\n  int i = threadIdx.x;\n  if (i < n) { a[i] = a[i] + 1; atomicAdd(&a[0], 1); }\n}\nint g(int x) { return x @ 1; }\n";

    #[test]
    fn reads_every_node_with_its_children_and_field() {
        let tree = parsed(TEXT);
        let flat = Flat::of(tree.root_node(), None, &named());
        same_as_tree_sitter(&flat, 0, tree.root_node(), None);
        assert!(
            flat.entries.iter().any(|e| e.error),
            "the syntax error is an ERROR node"
        );
    }

    #[test]
    fn reads_a_subtree_and_stops_at_a_depth() {
        let tree = parsed(TEXT);
        let kernel = tree.root_node().child(0).unwrap();
        let whole = Flat::of(kernel, None, &named());
        same_as_tree_sitter(&whole, 0, kernel, None);
        assert_eq!(
            whole.get(0).end as usize,
            whole.len(),
            "nothing beside the root"
        );
        for d in 0..3 {
            let cut = Flat::of(kernel, Some(d), &named());
            same_as_tree_sitter(&cut, 0, kernel, Some(d));
            assert!(cut.len() < whole.len());
        }
    }
}

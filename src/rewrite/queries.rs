//! The tree-sitter queries in `queries/`, compiled once per process. Node kinds live in the
//! `.scm` files; Rust code only sees capture names.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::OnceLock;
use tree_sitter::{Language, Node, Query, QueryCursor, StreamingIterator};

pub fn language() -> Language {
    tree_sitter_cuda::LANGUAGE.into()
}

/// The query files, one per concept. Capture names are unique across them.
const FILES: &[(&str, &str)] = &[
    (
        "device_functions.scm",
        include_str!("../../queries/device_functions.scm"),
    ),
    ("accesses.scm", include_str!("../../queries/accesses.scm")),
    ("locals.scm", include_str!("../../queries/locals.scm")),
    ("sites.scm", include_str!("../../queries/sites.scm")),
    ("bodies.scm", include_str!("../../queries/bodies.scm")),
    (
        "thread_ids.scm",
        include_str!("../../queries/thread_ids.scm"),
    ),
    ("launches.scm", include_str!("../../queries/launches.scm")),
    ("macros.scm", include_str!("../../queries/macros.scm")),
    (
        "unsupported.scm",
        include_str!("../../queries/unsupported.scm"),
    ),
];

/// All query files as one query, so that a file's tree is walked once, not once per concept.
pub fn all() -> &'static Query {
    static Q: OnceLock<Query> = OnceLock::new();
    Q.get_or_init(|| {
        let joined: String = FILES.iter().map(|(_, t)| *t).collect::<Vec<_>>().join("\n");
        Query::new(&language(), &joined).unwrap_or_else(|e| {
            // Compiling is slow (hundreds of ms): only on error is each file compiled alone,
            // so that the message names its file.
            for (name, text) in FILES {
                if let Err(e) = Query::new(&language(), text) {
                    panic!("queries/{name}: {e}");
                }
            }
            panic!("the query files do not compile together: {e}")
        })
    })
}

/// Every capture of one query over a tree, grouped by capture.
pub struct Captures<'t> {
    query: &'static Query,
    root: Node<'t>,
    /// Nodes per capture index.
    by_index: Vec<Vec<Node<'t>>>,
    /// Matches of more than one capture, in match order, for patterns that pair captures.
    pub matches: Vec<Vec<(&'static str, Node<'t>)>>,
}

impl<'t> Captures<'t> {
    pub fn run(query: &'static Query, root: Node<'t>, text: &[u8]) -> Captures<'t> {
        thread_local! {
            // One cursor per thread: it keeps its buffers from file to file.
            static CURSOR: std::cell::RefCell<QueryCursor> = std::cell::RefCell::new(QueryCursor::new());
        }
        let names = query.capture_names();
        let mut by_index = vec![Vec::new(); names.len()];
        let mut matches = Vec::new();
        CURSOR.with_borrow_mut(|cursor| {
            let mut it = cursor.matches(query, root, text);
            while let Some(m) = it.next() {
                let caps = m.captures();
                for c in caps {
                    by_index[c.index as usize].push(c.node);
                }
                // Only matches that pair captures are kept whole.
                if caps.len() > 1 {
                    matches.push(
                        caps.iter()
                            .map(|c| (names[c.index as usize], c.node))
                            .collect(),
                    );
                }
            }
        });
        Captures {
            query,
            root,
            by_index,
            matches,
        }
    }

    /// The node the query ran over.
    pub fn root(&self) -> Node<'t> {
        self.root
    }

    pub fn get(&self, name: &str) -> &[Node<'t>] {
        self.query
            .capture_index_for_name(name)
            .map_or(&[], |i| &self.by_index[i as usize])
    }

    /// Node ids captured under `name`.
    pub fn ids(&self, name: &str) -> IdSet {
        self.get(name).iter().map(Node::id).collect()
    }
}

/// Hashes node ids (addresses) with one multiply: SipHash cost more than the look-ups it served.
#[derive(Default)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, _: &[u8]) {
        unreachable!("only node ids are hashed")
    }
    fn write_usize(&mut self, id: usize) {
        // The high bits of the product are the well-mixed ones; the table indexes by the low.
        self.0 = (id as u64)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .rotate_left(32);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

pub type IdSet = HashSet<usize, BuildHasherDefault<IdHasher>>;
pub type IdMap<V> = HashMap<usize, V, BuildHasherDefault<IdHasher>>;

#[cfg(test)]
mod tests {
    #[test]
    fn every_query_compiles() {
        super::all();
    }
}

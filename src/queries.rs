//! The tree-sitter queries in `queries/`, compiled once per process. Node kinds live in the
//! `.scm` files; Rust code only sees capture names.

use std::collections::HashMap;
use std::sync::OnceLock;
use tree_sitter::{Language, Node, Query, QueryCursor, StreamingIterator};

pub fn language() -> Language {
    tree_sitter_cuda::LANGUAGE.into()
}

/// The query files, one per concept. Capture names are unique across them.
const FILES: &[(&str, &str)] = &[
    (
        "device_functions.scm",
        include_str!("../queries/device_functions.scm"),
    ),
    ("accesses.scm", include_str!("../queries/accesses.scm")),
    ("locals.scm", include_str!("../queries/locals.scm")),
    ("sites.scm", include_str!("../queries/sites.scm")),
    ("bodies.scm", include_str!("../queries/bodies.scm")),
    ("thread_ids.scm", include_str!("../queries/thread_ids.scm")),
    ("launches.scm", include_str!("../queries/launches.scm")),
    ("macros.scm", include_str!("../queries/macros.scm")),
    (
        "unsupported.scm",
        include_str!("../queries/unsupported.scm"),
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

/// Every capture of one query over a tree, grouped by capture name.
pub struct Captures<'t> {
    by_name: HashMap<&'static str, Vec<Node<'t>>>,
    /// Matches of more than one capture, in match order, for patterns that pair captures.
    pub matches: Vec<Vec<(&'static str, Node<'t>)>>,
}

impl<'t> Captures<'t> {
    pub fn run(query: &'static Query, root: Node<'t>, text: &[u8]) -> Captures<'t> {
        let names = query.capture_names();
        let mut cursor = QueryCursor::new();
        let mut by_name: HashMap<&'static str, Vec<Node<'t>>> = HashMap::new();
        let mut matches = Vec::new();
        let mut it = cursor.matches(query, root, text);
        while let Some(m) = it.next() {
            let caps = m.captures();
            for c in caps {
                by_name
                    .entry(names[c.index as usize])
                    .or_default()
                    .push(c.node);
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
        Captures { by_name, matches }
    }

    pub fn get(&self, name: &str) -> &[Node<'t>] {
        self.by_name.get(name).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Node ids captured under `name`.
    pub fn ids(&self, name: &str) -> std::collections::HashSet<usize> {
        self.get(name).iter().map(Node::id).collect()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_query_compiles() {
        super::all();
    }
}

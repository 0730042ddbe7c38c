//! The tree-sitter queries in `queries/`, compiled once per process. Node kinds live in the
//! `.scm` files; Rust code only sees capture names.

use std::collections::HashMap;
use std::sync::OnceLock;
use tree_sitter::{Language, Node, Query, QueryCursor, StreamingIterator};

pub fn language() -> Language {
    tree_sitter_cuda::LANGUAGE.into()
}

macro_rules! query {
    ($fn_name:ident, $file:literal) => {
        pub fn $fn_name() -> &'static Query {
            static Q: OnceLock<Query> = OnceLock::new();
            Q.get_or_init(|| {
                Query::new(&language(), include_str!(concat!("../queries/", $file)))
                    .unwrap_or_else(|e| panic!("queries/{}: {e}", $file))
            })
        }
    };
}

query!(device_functions, "device_functions.scm");
query!(accesses, "accesses.scm");
query!(locals, "locals.scm");
query!(sites, "sites.scm");
query!(bodies, "bodies.scm");
query!(thread_ids, "thread_ids.scm");
query!(launches, "launches.scm");
query!(macros, "macros.scm");

/// Every capture of one query over a tree, grouped by capture name.
pub struct Captures<'t> {
    by_name: HashMap<&'static str, Vec<Node<'t>>>,
    /// Captures that belong to the same match, in match order, for queries that pair captures.
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
            let mut one = Vec::with_capacity(m.captures().len());
            for c in m.captures() {
                let name = names[c.index as usize];
                by_name.entry(name).or_default().push(c.node);
                one.push((name, c.node));
            }
            matches.push(one);
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
        super::device_functions();
        super::accesses();
        super::locals();
        super::sites();
        super::bodies();
        super::thread_ids();
        super::launches();
        super::macros();
    }
}

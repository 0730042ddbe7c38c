//! Lexical scopes by byte range, and which declaration a name used at some byte refers to.
//! Ranges, not `parent()`: tree-sitter finds a parent by walking down from the root.

use crate::rewrite::queries::{self, Capture, Captures};
use crate::rewrite::ranges::Nested;
use std::collections::HashMap;
use std::num::NonZeroU16;
use std::ops::Range;
use std::sync::OnceLock;
use tree_sitter::Node;

/// The name a declarator declares: down its `declarator` fields.
pub fn name_node(node: Node) -> Node {
    static DECLARATOR: OnceLock<NonZeroU16> = OnceLock::new();
    let field = *DECLARATOR.get_or_init(|| queries::field("declarator"));
    let mut n = node;
    while let Some(d) = n.child_by_field_id(field.get()) {
        n = d;
    }
    n
}

/// `name_node`, also through a reference declarator (`int &r`, `T& operator[](int i)`), which
/// holds its declarator in no field.
pub fn function_name<'t>(node: Node<'t>, text: &str) -> Node<'t> {
    let mut n = name_node(node);
    while text[n.byte_range()].starts_with('&') && n.named_child_count() > 0 {
        let last = n.named_child_count() - 1;
        n = name_node(n.named_child(last as u32).expect("counted"));
    }
    n
}

/// The scopes of one file (`@scope`, `@scope.function`), nested by byte range; `None` is the
/// file scope. A scope is its index in the captures' order.
pub struct Scopes {
    nested: Nested,
    function: Vec<bool>,
}

impl Scopes {
    pub fn new(caps: &Captures) -> Scopes {
        let blocks = caps
            .get(Capture::Scope)
            .iter()
            .map(|n| (n.byte_range(), false));
        let functions = caps
            .get(Capture::ScopeFunction)
            .iter()
            .map(|n| (n.byte_range(), true));
        let (ranges, function): (Vec<Range<usize>>, Vec<bool>) = blocks.chain(functions).unzip();
        Scopes {
            nested: Nested::new(ranges),
            function,
        }
    }

    /// The innermost scope containing byte `at`.
    pub fn at(&self, at: usize) -> Option<usize> {
        self.nested.innermost(at..at)
    }

    /// A function's or lambda's own scope, where its parameters live.
    pub fn is_function(&self, scope: usize) -> bool {
        self.function[scope]
    }

    /// The scopes containing byte `at`, innermost first, then the file scope.
    fn outward(&self, at: usize) -> impl Iterator<Item = Option<usize>> + '_ {
        std::iter::successors(Some(self.at(at)), |s| s.map(|s| self.nested.parent(s)))
    }
}

/// One declaration: its scope (None: the file), the byte it is visible from, its value.
type Declared<T> = (Option<usize>, usize, T);

/// A value for each declared name, per scope, visible from the end of its declarator on.
pub struct Bindings<'s, T> {
    /// By name: one hash per look-up, not one per scope.
    by_name: HashMap<&'s str, Vec<Declared<T>>>,
}

impl<T> Default for Bindings<'_, T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'s, T> Bindings<'s, T> {
    pub fn new() -> Self {
        Bindings {
            by_name: HashMap::new(),
        }
    }

    /// `name`, declared in `scope`, is `value` from byte `from` on.
    pub fn declare(&mut self, scope: Option<usize>, name: &'s str, from: usize, value: T) {
        self.by_name
            .entry(name)
            .or_default()
            .push((scope, from, value));
    }

    /// The declarations at file scope: name, the byte each is visible from, value.
    pub fn at_file_scope(&self) -> impl Iterator<Item = (&'s str, usize, &T)> + '_ {
        let all = self.by_name.iter();
        all.flat_map(|(n, d)| d.iter().filter(|d| d.0.is_none()).map(|d| (*n, d.1, &d.2)))
    }

    /// The value of the declaration that `name`, used at byte `at`, refers to: the latest one
    /// before `at` in the innermost scope that has one.
    pub fn lookup(&self, scopes: &Scopes, name: &str, at: usize) -> Option<&T> {
        let decls = self.by_name.get(name)?;
        scopes.outward(at).find_map(|s| {
            let visible = decls.iter().filter(|d| d.0 == s && d.1 <= at);
            visible.max_by_key(|d| d.1).map(|d| &d.2)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rewrite::queries;

    const TEXT: &str = "int x;\nvoid f(int x) {\n  { int x; x; }\n  x;\n}\nint y = x;\n";

    /// Declares each `x` as the line it is on, then looks up the `x` used at each offset.
    fn lookups(at: &[usize]) -> Vec<Option<usize>> {
        let tree = crate::rewrite::parse::parse(TEXT);
        let caps = Captures::run(queries::all(), tree.root_node(), TEXT.as_bytes());
        let scopes = Scopes::new(&caps);
        let mut b = Bindings::new();
        for (i, _) in TEXT.match_indices("int x") {
            let name = i + "int ".len();
            let line = TEXT[..name].matches('\n').count() + 1;
            b.declare(scopes.at(name), "x", name + 1, line);
        }
        at.iter()
            .map(|&a| b.lookup(&scopes, "x", a).copied())
            .collect()
    }

    #[test]
    fn the_innermost_visible_declaration_wins() {
        let inner_use = TEXT.find("x; }").unwrap();
        let body_use = TEXT.find("  x;\n}").unwrap() + 2;
        let file_use = TEXT.rfind('x').unwrap();
        assert_eq!(
            lookups(&[inner_use, body_use, file_use, 0]),
            // The parameter's scope is the function, which holds the body; the first `x` is
            // not visible before its own declarator ends.
            [Some(3), Some(2), Some(1), None]
        );
    }
}

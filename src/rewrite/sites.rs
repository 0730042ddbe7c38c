//! Where each access's fence goes. Walking up from an access, the first node that `sites.scm`
//! gives a role decides: after a statement, at the top of a body and after a loop or `if` whose
//! condition accesses memory, around a returned or switched-on value, or as a comma operand.

use crate::rewrite::aim::{self, Aim};
use crate::rewrite::asm::AsmPointers;
use crate::rewrite::device_code::{Access, AccessKind, first_named};
use crate::rewrite::edits::{Edit, Slot};
use crate::rewrite::flat::{At, Flat};
use crate::rewrite::libcuxx::Words;
use crate::rewrite::parallel;
use crate::rewrite::queries::{Capture, Captures, IdMap, IdSet};
use crate::rewrite::top_level;
use tree_sitter::Node;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Role {
    // Priority order: the first wins when one node has several roles.
    Stop,
    List,
    Return,
    Wrap,
    Comma,
    IfCond,
    LoopCond,
    After,
}

/// Capture names of `sites.scm`, by role.
const ROLES: &[(Capture, Role)] = &[
    (Capture::SiteStop, Role::Stop),
    (Capture::SiteWrap, Role::Wrap),
    (Capture::SiteList, Role::List),
    (Capture::SiteReturn, Role::Return),
    (Capture::SiteComma, Role::Comma),
    (Capture::SiteIfCond, Role::IfCond),
    (Capture::SiteLoopCond, Role::LoopCond),
    (Capture::SiteAfter, Role::After),
];

/// What goes at one position once the fence has an id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Piece {
    /// `WMFIX_FENCE(id);` as a statement.
    Fence,
    /// `if (WMFIX_IN_LOOP(id)) WMFIX_FENCE(id);` at the top of the body of a loop whose
    /// condition the fence follows: the placement the reducer can switch off by itself.
    LoopFence,
    /// `, WMFIX_FENCE_EXPR(id)` after a comma operand.
    CommaFence,
    /// `WMFIX_AFTER(id, ` before a value...
    WrapOpen,
    /// ...or `WMFIX_AFTER_RETURN(id, ` before a returned one, which may be void...
    ReturnOpen,
    /// ...and `)` after it.
    WrapClose,
}

#[derive(Clone, Debug)]
pub struct Spot {
    pub at: usize,
    pub slot: Slot,
    pub piece: Piece,
}

/// One fence before it is numbered: the accesses it orders and where its text goes.
pub struct Site {
    /// The node whose accesses the fence follows (a statement, a condition, a value).
    pub range: std::ops::Range<usize>,
    pub function: usize,
    pub accesses: Vec<(std::ops::Range<usize>, AccessKind)>,
    pub spots: Vec<Spot>,
    /// Braces around unbraced bodies that the spots need (shared bodies repeat across sites;
    /// `edits::apply` drops duplicates).
    pub braces: Vec<Edit>,
    /// For a fence after a statement: the address of one of its accesses, which the fence
    /// hands to the runtime for aimed stress (`aim.rs`).
    pub aim: Option<Aim>,
    /// The accesses a race build records after the site's statement spot besides the one
    /// `aim` names (`aim.rs`'s `race_hooks`).
    pub race_hooks: Vec<(std::ops::Range<usize>, AccessKind)>,
}

impl Site {
    pub fn kind(&self) -> AccessKind {
        self.accesses
            .iter()
            .map(|a| a.1)
            .max()
            .unwrap_or(AccessKind::Load)
    }
}

/// A file's sites in source order, in the lists they were placed in: a big file is planned in
/// pieces, and its hundreds of thousands of sites, joined into one list, would be copied once
/// more into fresh memory (a tenth of a second, on one core).
#[derive(Default)]
pub struct Sites(Vec<Vec<Site>>);

impl Sites {
    pub fn one(sites: Vec<Site>) -> Sites {
        Sites(vec![sites])
    }

    /// `later`'s sites after these.
    pub fn append(&mut self, later: Sites) {
        self.0.extend(later.0.into_iter().filter(|s| !s.is_empty()));
    }

    pub fn len(&self) -> usize {
        self.0.iter().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.0.iter().all(Vec::is_empty)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Site> {
        self.0.iter().flatten()
    }

    /// The sites in one list.
    pub fn into_vec(self) -> Vec<Site> {
        self.0.into_iter().flatten().collect()
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Site> {
        self.0.iter_mut().flatten()
    }
}

/// The result for one file: fence sites, and accesses that have no place.
pub struct Placed<'t> {
    pub sites: Vec<Site>,
    pub unplaced: Vec<Node<'t>>,
}

struct Roles<'t> {
    root: Node<'t>,
    role: IdMap<Role>,
    bodies: IdSet,
    blocks: IdSet,
    labeled: IdSet,
}

impl<'t> Roles<'t> {
    fn new(caps: &Captures<'t>) -> Roles<'t> {
        let mut role: IdMap<Role> = IdMap::default();
        for (cap, r) in ROLES {
            for node in caps.get(*cap) {
                let e = role.entry(node.id()).or_insert(*r);
                *e = (*e).min(*r);
            }
        }
        Roles {
            root: caps.root(),
            role,
            bodies: caps.ids(Capture::Body),
            blocks: caps.ids(Capture::Block),
            labeled: caps.ids(Capture::Labeled),
        }
    }

    fn unbraced_body(&self, n: Node) -> bool {
        self.bodies.contains(&n.id()) && !self.blocks.contains(&n.id())
    }
}

/// A node and how deep it is. Depths order insertions at one byte; they are counted once, on
/// the walk down to an access, because each `Node::parent` call walks down from the root.
#[derive(Clone, Copy)]
struct Deep<'t> {
    node: Node<'t>,
    depth: usize,
}

impl<'t> Deep<'t> {
    fn child(self, node: Node<'t>) -> Deep<'t> {
        Deep {
            node,
            depth: self.depth + 1,
        }
    }
}

/// The node that decides where an access's fence goes.
struct Found<'t> {
    site: Deep<'t>,
    /// The nodes on the way from the root down to the site that placing its fence may look at
    /// (the statement above it and the labels around that), the first at depth `top`: not the
    /// whole way, which in deeply nested code would make memory grow with depth squared.
    path: Vec<Node<'t>>,
    top: usize,
    role: Role,
}

impl<'t> Found<'t> {
    fn at(&self, depth: usize) -> Deep<'t> {
        Deep {
            node: self.path[depth - self.top],
            depth,
        }
    }

    /// The statement a condition belongs to.
    fn statement(&self) -> Deep<'t> {
        self.at(self
            .site
            .depth
            .checked_sub(1)
            .expect("a condition has a statement"))
    }

    /// A statement on the path with the labels around it (`done: x;`): an unbraced body wraps
    /// them all.
    fn labeled(&self, n: Deep<'t>, roles: &Roles) -> Deep<'t> {
        let mut d = n.depth;
        while d > self.top && roles.labeled.contains(&self.path[d - 1 - self.top].id()) {
            d -= 1;
        }
        self.at(d)
    }
}

/// The nodes from `root` down to `node`, both included.
fn path<'t>(root: Node<'t>, node: Node<'t>) -> Vec<Node<'t>> {
    let mut out = vec![root];
    let mut n = root;
    while n.id() != node.id() {
        n = n
            .child_with_descendant(node)
            .expect("the node is in the tree");
        out.push(n);
    }
    out
}

/// How deep `node` is below `root`.
pub fn depth(root: Node, node: Node) -> usize {
    path(root, node).len() - 1
}

/// A site as accesses are gathered into it: where it is, the site, its accesses' nodes.
type Gathered<'t> = (Found<'t>, Site, Vec<(Node<'t>, AccessKind)>);

pub fn place<'t>(
    accesses: &[Access<'t>],
    caps: &Captures<'t>,
    text: &'t str,
    asm: &AsmPointers<'t>,
    words: &Words<'t>,
) -> Placed<'t> {
    let roles = Roles::new(caps);
    let facts = aim::Facts::new(caps, text, asm, words);
    let mut by_site: IdMap<Gathered<'t>> = IdMap::default();
    let mut order = Vec::new();
    let mut unplaced = Vec::new();
    let mut found_at = find_sites(accesses, &roles, caps);
    for a in accesses {
        let Some(found) = found_at.get_mut(&a.node.id()).and_then(Option::take) else {
            unplaced.push(a.node);
            continue;
        };
        let node = found.site.node;
        let entry = by_site.entry(node.id()).or_insert_with(|| {
            order.push(node.id());
            let site = Site {
                range: node.byte_range(),
                function: a.function,
                accesses: vec![],
                spots: vec![],
                braces: vec![],
                aim: None,
                race_hooks: vec![],
            };
            (found, site, vec![])
        });
        entry.1.accesses.push((a.node.byte_range(), a.kind));
        entry.2.push((a.node, a.kind));
    }
    let mut sites = Vec::with_capacity(order.len());
    for id in order {
        let (found, mut site, nodes) = by_site.remove(&id).expect("site recorded");
        if found.role == Role::After {
            site.aim = facts.aim(site.range.clone(), &nodes);
        }
        site.race_hooks = facts.race_hooks(site.range.clone(), &nodes, site.aim.as_ref());
        let mut braces = Vec::new();
        site.spots = spots(&found, &roles, &mut |b| braces.extend(brace_edits(b)));
        site.braces = braces;
        sites.push(site);
    }
    sites.sort_by_key(|s| s.accesses[0].0.start);
    Placed { sites, unplaced }
}

/// For each access, the innermost node with a role that holds it (None: it has no place):
/// one walk down the tree as the query read it, entering only nodes holding an access, keeping
/// the way from the root and the depths on it that have a role, so each access costs the same
/// at any depth. Where the query walked a big file's top-level groups on all cores, so does
/// this walk (each way still starts at the root), reading each top-level node's tree.
fn find_sites<'t>(
    accesses: &[Access<'t>],
    roles: &Roles<'t>,
    caps: &Captures<'t>,
) -> IdMap<Option<Found<'t>>> {
    let mut starts: Vec<usize> = accesses.iter().map(|a| a.node.start_byte()).collect();
    starts.sort_unstable();
    let wanted: IdSet = accesses.iter().map(|a| a.node.id()).collect();
    let walk = Walk {
        starts,
        wanted,
        roles,
    };
    if let Some(flat) = caps.flat() {
        let mut out = IdMap::default();
        walk.under(&[], flat, &mut out);
        return out;
    }
    let parts = parallel::map(top_level::groups(roles.root), |group| {
        let mut out = IdMap::default();
        for top in group {
            walk.under(&[roles.root], &Flat::of(top, None), &mut out);
        }
        out
    });
    let mut parts = parts.into_iter();
    let mut out = parts.next().unwrap_or_default();
    for part in parts {
        out.extend(part);
    }
    out
}

/// What the walk down to the accesses looks for.
struct Walk<'a, 't> {
    /// The accesses' start bytes, sorted.
    starts: Vec<usize>,
    wanted: IdSet,
    roles: &'a Roles<'t>,
}

impl<'t> Walk<'_, 't> {
    /// The first access starting at or after `n`, given the one for a node before it (a walk
    /// enters nodes in order of their starts): no search per node.
    fn first_from(&self, n: Node, mut next: usize) -> usize {
        let start = n.start_byte();
        while self.starts.get(next).is_some_and(|&s| s < start) {
            next += 1;
        }
        next
    }

    /// Walks `tree` (a subtree whose ancestors from the root down are `above`), adding the site
    /// of each wanted access to `out`.
    fn under(&self, above: &[Node<'t>], tree: &Flat<'t>, out: &mut IdMap<Option<Found<'t>>>) {
        let roles = self.roles;
        let mut way: Vec<Node<'t>> = Vec::new();
        let mut with_role: Vec<usize> = Vec::new();
        // Where the subtree of each node on the way below `above` ends, in `tree`.
        let mut ends: Vec<At> = Vec::new();
        let enter = |n: Node<'t>, way: &mut Vec<Node<'t>>, with_role: &mut Vec<usize>| {
            if roles.role.contains_key(&n.id()) {
                with_role.push(way.len());
            }
            way.push(n);
        };
        for n in above {
            enter(*n, &mut way, &mut with_role);
        }
        let Some(top) = (!tree.is_empty()).then(|| tree.get(0).node) else {
            return;
        };
        let mut next = self.starts.partition_point(|&s| s < top.start_byte());
        let mut i: At = 0;
        while (i as usize) < tree.len() {
            while ends.last().is_some_and(|&end| end <= i) {
                ends.pop();
                if with_role.last() == Some(&(way.len() - 1)) {
                    with_role.pop();
                }
                way.pop();
            }
            let node = tree.get(i).node;
            enter(node, &mut way, &mut with_role);
            ends.push(tree.after(i));
            next = self.first_from(node, next);
            let first = self.starts.get(next).copied();
            // An access starts where it is: only then is the node worth a look-up.
            if first == Some(node.start_byte()) && self.wanted.contains(&node.id()) {
                out.insert(node.id(), found(&way, &with_role, roles));
            }
            let holds_access = first.is_some_and(|s| s < node.end_byte());
            i = if holds_access { i + 1 } else { tree.after(i) };
        }
    }
}

/// The site of an access at the end of `way`, whose depths with a role are `with_role`.
fn found<'t>(way: &[Node<'t>], with_role: &[usize], roles: &Roles) -> Option<Found<'t>> {
    let depth = *with_role.last()?;
    let role = roles.role[&way[depth].id()];
    if role == Role::Stop {
        return None;
    }
    // `Found::statement` looks one level up, `Found::labeled` through the labels above that
    // and at the node above them.
    let mut top = depth.saturating_sub(1);
    while top > 0 && roles.labeled.contains(&way[top - 1].id()) {
        top -= 1;
    }
    let top = top.saturating_sub(1);
    Some(Found {
        site: Deep {
            node: way[depth],
            depth,
        },
        path: way[top..=depth].to_vec(),
        top,
        role,
    })
}

/// Where the `{` before an unbraced body goes: right after the token before the body (the `)`
/// of the condition, `else`, `do`), so a `#pragma` between them stays inside, and before any
/// comment between them, which would otherwise swallow the brace (`if (c) // why`).
fn before_body(body: Node) -> usize {
    let mut prev = body.prev_sibling();
    while let Some(p) = prev.filter(Node::is_extra) {
        prev = p.prev_sibling();
    }
    prev.map_or(body.start_byte(), |p| p.end_byte())
}

/// Braces around an unbraced body.
fn brace_edits(body: Deep) -> [Edit; 2] {
    let open_at = before_body(body.node);
    let d = body.depth;
    [
        Edit::insert(open_at, Slot::open(d, false), " {"),
        Edit::insert(body.node.end_byte(), Slot::close(d, true), " }"),
    ]
}

/// Where a wrapped value starts: before the syntax errors just before it, which belong to it
/// (`return typename W<T>::type(*p);` parses as `return`, an error holding `typename`, and the
/// call: the wrap must take `typename` in, or the result would not compile).
fn wrap_start(node: Node) -> usize {
    let mut start = node.start_byte();
    let mut prev = node.prev_sibling();
    while let Some(p) = prev.filter(|p| p.is_error() || p.is_extra()) {
        if p.is_error() {
            start = p.start_byte();
        }
        prev = p.prev_sibling();
    }
    start
}

/// `open` (`WMFIX_AFTER(id, `) before `node` (at depth `d`) and `)` after it.
fn wrapped(node: Node, d: usize, open: Piece, out: &mut Vec<Spot>) {
    out.push(Spot {
        at: wrap_start(node),
        slot: Slot::open(d, false),
        piece: open,
    });
    out.push(Spot {
        at: node.end_byte(),
        slot: Slot::close(d, false),
        piece: Piece::WrapClose,
    });
}

fn spots(found: &Found, roles: &Roles, wrap: &mut dyn FnMut(Deep)) -> Vec<Spot> {
    let mut out = Vec::new();
    let after = |n: Deep, out: &mut Vec<Spot>, wrap: &mut dyn FnMut(Deep)| {
        let whole = found.labeled(n, roles);
        if roles.unbraced_body(whole.node) {
            wrap(whole);
        }
        out.push(Spot {
            at: n.node.end_byte(),
            slot: Slot::close(n.depth, false),
            piece: Piece::Fence,
        });
    };
    let (node, d) = (found.site.node, found.site.depth);
    match found.role {
        Role::After => after(found.site, &mut out, wrap),
        Role::Wrap => wrapped(node, d, Piece::WrapOpen, &mut out),
        Role::Return => wrapped(node, d, Piece::ReturnOpen, &mut out),
        Role::List => {
            let n = node.named_child_count();
            if let Some(last) = n.checked_sub(1).and_then(|i| node.named_child(i as u32)) {
                wrapped(last, d + 1, Piece::WrapOpen, &mut out);
            }
        }
        Role::Comma => out.push(Spot {
            at: node.end_byte(),
            slot: Slot::close(d, false),
            piece: Piece::CommaFence,
        }),
        Role::IfCond => {
            let stmt = found.statement();
            let then = stmt.node.child_by_field_name("consequence");
            out.push(top_of(
                stmt.child(then.expect("if has a consequence")),
                roles,
                wrap,
            ));
            let alternative = stmt.node.child_by_field_name("alternative");
            // The statement of the `else`, not a comment before it.
            match alternative.and_then(|e| Some(stmt.child(e).child(first_named(e)?))) {
                Some(els) => out.push(top_of(els, roles, wrap)),
                None => after(stmt, &mut out, wrap),
            }
        }
        Role::LoopCond => {
            let stmt = found.statement();
            if let Some(body) = stmt.node.child_by_field_name("body") {
                let top = top_of(stmt.child(body), roles, wrap);
                out.push(Spot {
                    piece: Piece::LoopFence,
                    ..top
                });
            }
            after(stmt, &mut out, wrap);
        }
        Role::Stop => unreachable!("stop sites are never placed"),
    }
    out
}

/// A fence at the top of a body, which gets braces if it has none.
fn top_of(body: Deep, roles: &Roles, wrap: &mut dyn FnMut(Deep)) -> Spot {
    let d = body.depth;
    if roles.unbraced_body(body.node) {
        wrap(body);
        let at = before_body(body.node);
        Spot {
            at,
            slot: Slot::open(d, true),
            piece: Piece::Fence,
        }
    } else {
        // After the `{` of a compound statement.
        Spot {
            at: body.node.start_byte() + 1,
            slot: Slot::open(d + 1, true),
            piece: Piece::Fence,
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn depth_is_the_number_of_parents() {
        let text = include_str!("../../tests/fixtures/constructs/control.cu");
        let tree = crate::rewrite::parse::parse(text);
        let root = tree.root_node();
        let mut cursor = root.walk();
        let mut seen = 0;
        loop {
            let node = cursor.node();
            let parents = std::iter::successors(node.parent(), |p| p.parent()).count();
            assert_eq!(super::depth(root, node), parents, "{node:?}");
            seen += 1;
            if cursor.goto_first_child() || cursor.goto_next_sibling() {
                continue;
            }
            while cursor.goto_parent() && !cursor.goto_next_sibling() {}
            if cursor.node() == root {
                break;
            }
        }
        assert!(seen > 500, "walked {seen} nodes");
    }
}

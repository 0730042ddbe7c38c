//! Where each access's fence goes. Walking up from an access, the first node that `sites.scm`
//! gives a role decides: after a statement, at the top of a body and after a loop or `if` whose
//! condition accesses memory, around a returned or switched-on value, or as a comma operand.

use crate::device_code::{Access, AccessKind};
use crate::edits::{Edit, Slot};
use crate::queries::Captures;
use std::collections::{HashMap, HashSet};
use tree_sitter::Node;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Role {
    // Priority order: the first wins when one node has several roles.
    Stop,
    Wrap,
    Comma,
    IfCond,
    LoopCond,
    After,
}

/// Capture names of `sites.scm`, by role.
const ROLES: &[(&str, Role)] = &[
    ("site.stop", Role::Stop),
    ("site.wrap", Role::Wrap),
    ("site.comma", Role::Comma),
    ("site.if_cond", Role::IfCond),
    ("site.loop_cond", Role::LoopCond),
    ("site.after", Role::After),
];

/// What goes at one position once the fence has an id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Piece {
    /// `WMFIX_FENCE(id);` as a statement.
    Fence,
    /// `, WMFIX_FENCE_EXPR(id)` after a comma operand.
    CommaFence,
    /// `WMFIX_AFTER(id, ` before a value...
    WrapOpen,
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

/// The result for one file: fence sites, and accesses that have no place.
pub struct Placed<'t> {
    pub sites: Vec<Site>,
    pub unplaced: Vec<Node<'t>>,
}

struct Roles {
    role: HashMap<usize, Role>,
    bodies: HashSet<usize>,
    blocks: HashSet<usize>,
}

impl Roles {
    fn new(caps: &Captures) -> Roles {
        let mut role: HashMap<usize, Role> = HashMap::new();
        for (name, r) in ROLES {
            for node in caps.get(name) {
                let e = role.entry(node.id()).or_insert(*r);
                *e = (*e).min(*r);
            }
        }
        Roles {
            role,
            bodies: caps.ids("body"),
            blocks: caps.ids("block"),
        }
    }

    fn unbraced_body(&self, n: Node) -> bool {
        self.bodies.contains(&n.id()) && !self.blocks.contains(&n.id())
    }
}

fn depth(mut n: Node) -> usize {
    let mut d = 0;
    while let Some(p) = n.parent() {
        d += 1;
        n = p;
    }
    d
}

pub fn place<'t>(accesses: &[Access<'t>], caps: &Captures<'t>) -> Placed<'t> {
    let roles = Roles::new(caps);
    let mut by_site: HashMap<usize, (Node<'t>, Role, Site)> = HashMap::new();
    let mut order = Vec::new();
    let mut unplaced = Vec::new();
    for a in accesses {
        let Some((node, role)) = find_site(a.node, &roles) else {
            unplaced.push(a.node);
            continue;
        };
        let entry = by_site.entry(node.id()).or_insert_with(|| {
            order.push(node.id());
            let site = Site {
                range: node.byte_range(),
                function: a.function,
                accesses: vec![],
                spots: vec![],
                braces: vec![],
            };
            (node, role, site)
        });
        entry.2.accesses.push((a.node.byte_range(), a.kind));
    }
    let mut sites = Vec::new();
    for id in order {
        let (node, role, mut site) = by_site.remove(&id).expect("site recorded");
        let mut braces = Vec::new();
        site.spots = spots(node, role, &roles, &mut |b| braces.extend(brace_edits(b)));
        site.braces = braces;
        sites.push(site);
    }
    sites.sort_by_key(|s| s.accesses[0].0.start);
    Placed { sites, unplaced }
}

fn find_site<'t>(access: Node<'t>, roles: &Roles) -> Option<(Node<'t>, Role)> {
    let mut n = access;
    loop {
        if let Some(r) = roles.role.get(&n.id()) {
            return (*r != Role::Stop).then_some((n, *r));
        }
        n = n.parent()?;
    }
}

/// Braces around an unbraced body. The `{` goes right after the token before the body (the
/// `)` of the condition, `else`, `do`), so a `#pragma` between them stays inside.
fn brace_edits(body: Node) -> [Edit; 2] {
    let open_at = body
        .prev_sibling()
        .map_or(body.start_byte(), |p| p.end_byte());
    let d = depth(body);
    [
        Edit::insert(open_at, Slot::open(d, false), " {"),
        Edit::insert(body.end_byte(), Slot::close(d, true), " }"),
    ]
}

fn spots(node: Node, role: Role, roles: &Roles, wrap: &mut dyn FnMut(Node)) -> Vec<Spot> {
    let mut out = Vec::new();
    let after = |n: Node, out: &mut Vec<Spot>, wrap: &mut dyn FnMut(Node)| {
        if roles.unbraced_body(n) {
            wrap(n);
        }
        out.push(Spot {
            at: n.end_byte(),
            slot: Slot::close(depth(n), false),
            piece: Piece::Fence,
        });
    };
    let statement = || node.parent().expect("a condition has a statement");
    match role {
        Role::After => after(node, &mut out, wrap),
        Role::Wrap => {
            let d = depth(node);
            out.push(Spot {
                at: node.start_byte(),
                slot: Slot::open(d, false),
                piece: Piece::WrapOpen,
            });
            out.push(Spot {
                at: node.end_byte(),
                slot: Slot::close(d, false),
                piece: Piece::WrapClose,
            });
        }
        Role::Comma => out.push(Spot {
            at: node.end_byte(),
            slot: Slot::close(depth(node), false),
            piece: Piece::CommaFence,
        }),
        Role::IfCond => {
            let stmt = statement();
            let then = stmt
                .child_by_field_name("consequence")
                .expect("if has a consequence");
            out.push(top_of(then, roles, wrap));
            match stmt
                .child_by_field_name("alternative")
                .and_then(|e| e.named_child(0))
            {
                Some(els) => out.push(top_of(els, roles, wrap)),
                None => after(stmt, &mut out, wrap),
            }
        }
        Role::LoopCond => {
            let stmt = statement();
            if let Some(body) = stmt.child_by_field_name("body") {
                out.push(top_of(body, roles, wrap));
            }
            after(stmt, &mut out, wrap);
        }
        Role::Stop => unreachable!("stop sites are never placed"),
    }
    out
}

/// A fence at the top of a body, which gets braces if it has none.
fn top_of(body: Node, roles: &Roles, wrap: &mut dyn FnMut(Node)) -> Spot {
    let d = depth(body);
    if roles.unbraced_body(body) {
        wrap(body);
        let at = body
            .prev_sibling()
            .map_or(body.start_byte(), |p| p.end_byte());
        Spot {
            at,
            slot: Slot::open(d, true),
            piece: Piece::Fence,
        }
    } else {
        // After the `{` of a compound statement.
        Spot {
            at: body.start_byte() + 1,
            slot: Slot::open(d + 1, true),
            piece: Piece::Fence,
        }
    }
}

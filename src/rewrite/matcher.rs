//! The patterns of `queries/*.scm`, matched over the tree read once into memory (`flat.rs`), a
//! match built on one stack of captures. tree-sitter's query cursor reads the same patterns, but
//! its walk costs more than a plain cursor walk twice over, and compiling the queries takes a
//! quarter second a process. This reads the pattern text, resolves every kind and field against
//! the grammar once (an error names the first unknown one), and finds the same matches: `tests`
//! compares both engines on every fixture and case study.
//!
//! The subset read: named kinds, supertypes, `(_)`, "anonymous" tokens, `field:` children in
//! order, the anchor `.` before a child, alternations `[...]`, captures, and a group
//! `((pattern) (#match?|#eq?|#any-of? @capture ...))`. Anything else is an error.

use crate::rewrite::flat::{At, Entry, Flat};
use regex::Regex;
use tree_sitter::{Language, Node};

/// Compiled patterns, in the order of their text.
pub struct Patterns {
    patterns: Vec<Pattern>,
    /// For each node kind id, the patterns whose root may match a node of that kind.
    by_kind: Vec<Vec<u32>>,
    names: Vec<String>,
    /// How many levels below its root the deepest pattern looks.
    depth: usize,
}

struct Pattern {
    root: Alt,
    preds: Vec<Pred>,
}

/// One node pattern or an alternation of them, with the captures of the whole.
struct Alt {
    options: Vec<PNode>,
    captures: Vec<u32>,
}

struct PNode {
    /// The kind ids it matches; `None`: any named node (`(_)`).
    kinds: Option<Vec<u16>>,
    children: Vec<Child>,
    /// Captures of this alternative alone (`[(a) @x (b) @y]`).
    captures: Vec<u32>,
}

struct Child {
    field: Option<u16>,
    /// `.` before it: the first named child, or the named sibling right after the last step's.
    anchored: bool,
    alt: Alt,
}

enum Pred {
    Match(u32, Regex),
    Eq(u32, String),
    AnyOf(u32, Vec<String>),
}

/// A match: each capture with its node, root captures first, then the children's in order.
pub type Binding<'t> = Vec<(u32, Node<'t>)>;

impl Patterns {
    /// Compiles `text` for `language`; the error names the offending pattern text.
    pub fn new(language: &Language, text: &str) -> Result<Patterns, String> {
        let mut p = Parser {
            lang: language,
            toks: tokens(text)?,
            at: 0,
            names: Vec::new(),
            preds: Vec::new(),
        };
        let mut patterns = Vec::new();
        while p.at < p.toks.len() {
            let from = p.at;
            let pattern = p.pattern().map_err(|e| {
                let near = &p.toks[from..p.toks.len().min(from + 12)];
                format!("{e}, in the pattern starting {near:?}")
            })?;
            patterns.push(pattern);
        }
        let mut by_kind = vec![Vec::new(); language.node_kind_count()];
        for (i, pat) in patterns.iter().enumerate() {
            let mut kinds: Vec<u16> = Vec::new();
            for opt in &pat.root.options {
                match &opt.kinds {
                    Some(k) => kinds.extend(k),
                    None => kinds.extend(
                        (0..language.node_kind_count() as u16)
                            .filter(|k| language.node_kind_is_named(*k)),
                    ),
                }
            }
            kinds.sort_unstable();
            kinds.dedup();
            for k in kinds {
                by_kind[k as usize].push(i as u32);
            }
        }
        let depth = patterns.iter().map(|p| p.root.depth()).max().unwrap_or(0);
        Ok(Patterns {
            patterns,
            by_kind,
            names: p.names,
            depth,
        })
    }

    /// The capture names, by capture index.
    pub fn capture_names(&self) -> &[String] {
        &self.names
    }

    /// Every match starting at `node` or (unless `root_only`) under it, in the order
    /// tree-sitter's query cursor gives them: by the node each match ends at (its last step), in
    /// pre-order; matches ending at one node in the order of the nodes they start at, then of
    /// the patterns. Gives back the tree as read, which later walks may reuse.
    pub fn walk<'t>(
        &self,
        node: Node<'t>,
        text: &[u8],
        root_only: bool,
        emit: impl FnMut(&[(u32, Node<'t>)]),
    ) -> Flat<'t> {
        // Matches at `node` alone look no deeper than the deepest pattern.
        let flat = Flat::of(node, root_only.then_some(self.depth));
        self.walk_flat(&flat, text, root_only, emit);
        flat
    }

    fn walk_flat<'t>(
        &self,
        flat: &Flat<'t>,
        text: &[u8],
        root_only: bool,
        mut emit: impl FnMut(&[(u32, Node<'t>)]),
    ) {
        let starts = if root_only { 1 } else { flat.len() };
        let mut path = Vec::new();
        // Matches that end at a node not yet visited, by that node's index.
        let mut pending: foldhash::HashMap<At, Vec<Binding<'t>>> = Default::default();
        for i in 0..flat.len() as At {
            if !pending.is_empty()
                && let Some(done) = pending.remove(&i)
            {
                done.iter().for_each(|b| emit(b));
            }
            if i as usize >= starts {
                if pending.is_empty() {
                    return;
                }
                continue;
            }
            let n = flat.get(i);
            // ERROR nodes (kind u16::MAX) start no pattern.
            for &p in self.by_kind.get(n.kind as usize).into_iter().flatten() {
                let pat = &self.patterns[p as usize];
                if let Some(c) = pat.leaf_capture(n) {
                    // Most patterns: one node, one capture, no predicate.
                    emit(&[(c, n.node)]);
                    continue;
                }
                bindings(flat, &pat.root, i, &mut path, &mut |b, last| {
                    if !pat.preds.iter().all(|p| p.holds(b, text)) {
                        return;
                    }
                    if last == i {
                        emit(b.as_slice());
                    } else {
                        pending.entry(last).or_default().push(b.to_vec());
                    }
                });
            }
        }
    }
}

impl Pattern {
    /// The capture of a pattern that is one node with one capture and no predicate, if `n`
    /// matches it.
    fn leaf_capture(&self, n: &Entry) -> Option<u32> {
        let [opt] = &self.root.options[..] else {
            return None;
        };
        if !opt.children.is_empty() || !self.preds.is_empty() {
            return None;
        }
        let c = match (&self.root.captures[..], &opt.captures[..]) {
            ([c], []) | ([], [c]) => *c,
            _ => return None,
        };
        fits(opt, n).then_some(c)
    }
}

impl Alt {
    /// How many levels below its node the deepest step looks.
    fn depth(&self) -> usize {
        let child = |o: &PNode| o.children.iter().map(|c| 1 + c.alt.depth()).max();
        self.options.iter().filter_map(child).max().unwrap_or(0)
    }
}

fn fits(opt: &PNode, node: &Entry) -> bool {
    match &opt.kinds {
        Some(k) => k.contains(&node.kind),
        // As tree-sitter's `(_)`: any named node but an ERROR.
        None => node.named && !node.error,
    }
}

/// What is called with each match found: its captures and the node its last step matched.
type OnMatch<'a, 't> = dyn FnMut(&mut Vec<(u32, Node<'t>)>, At) + 'a;

/// Calls `on_match` with every way `alt` matches node `at` of `flat`, its captures after `path`'s
/// (which it leaves as it was).
fn bindings<'t>(
    flat: &Flat<'t>,
    alt: &Alt,
    at: At,
    path: &mut Vec<(u32, Node<'t>)>,
    on_match: &mut OnMatch<'_, 't>,
) {
    let node = flat.get(at);
    for opt in &alt.options {
        if !fits(opt, node) {
            continue;
        }
        let mark = path.len();
        path.extend((alt.captures.iter().chain(&opt.captures)).map(|&c| (c, node.node)));
        match flat.first_child(at) {
            _ if opt.children.is_empty() => on_match(path, at),
            Some(first) => steps(flat, &opt.children, at, Some(first), at, path, on_match),
            None => {}
        }
        path.truncate(mark);
    }
}

/// Every way the child steps `rest` match the children of `parent` from `from` on (the
/// sibling after the one the previous step matched, which ended at `end`).
fn steps<'t>(
    flat: &Flat<'t>,
    rest: &[Child],
    parent: At,
    from: Option<At>,
    end: At,
    path: &mut Vec<(u32, Node<'t>)>,
    on_match: &mut OnMatch<'_, 't>,
) {
    let Some((step, more)) = rest.split_first() else {
        return on_match(path, end);
    };
    let mut passed_named = false;
    let mut kid = from;
    while let Some(j) = kid {
        kid = flat.next_sibling(parent, j);
        let e = flat.get(j);
        // An anchored step takes the first named child after the previous step's.
        if step.anchored && passed_named {
            break;
        }
        passed_named |= e.named;
        if step.field.is_some_and(|f| f != e.field) {
            continue;
        }
        bindings(flat, &step.alt, j, path, &mut |path, end| {
            steps(flat, more, parent, kid, end, path, on_match)
        });
    }
}

impl Pred {
    fn holds(&self, b: &[(u32, Node)], text: &[u8]) -> bool {
        let cap = match self {
            Pred::Match(c, _) | Pred::Eq(c, _) | Pred::AnyOf(c, _) => *c,
        };
        let test = |s: &str| match self {
            Pred::Match(_, re) => re.is_match(s),
            Pred::Eq(_, v) => s == v,
            Pred::AnyOf(_, vs) => vs.iter().any(|v| v == s),
        };
        b.iter()
            .filter(|(c, _)| *c == cap)
            .all(|(_, n)| std::str::from_utf8(&text[n.byte_range()]).is_ok_and(test))
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Open,
    Close,
    OpenAlt,
    CloseAlt,
    Anchor,
    Capture(String),
    Str(String),
    Field(String),
    Word(String),
    Predicate(String),
}

/// The tokens of pattern text; `;` starts a comment to the end of the line.
fn tokens(text: &str) -> Result<Vec<Tok>, String> {
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    let word = |c: char| c.is_alphanumeric() || "_-.?!".contains(c);
    while let Some((i, c)) = chars.next() {
        match c {
            c if c.is_whitespace() => {}
            ';' => while chars.next_if(|(_, c)| *c != '\n').is_some() {},
            '(' => out.push(Tok::Open),
            ')' => out.push(Tok::Close),
            '[' => out.push(Tok::OpenAlt),
            ']' => out.push(Tok::CloseAlt),
            '.' => out.push(Tok::Anchor),
            '"' => {
                let mut s = String::new();
                loop {
                    match chars.next() {
                        Some((_, '"')) => break,
                        Some((_, '\\')) => match chars.next() {
                            Some((_, 'n')) => s.push('\n'),
                            Some((_, e)) => s.push(e),
                            None => return Err("unterminated string".into()),
                        },
                        Some((_, c)) => s.push(c),
                        None => return Err("unterminated string".into()),
                    }
                }
                out.push(Tok::Str(s));
            }
            '@' | '#' => {
                let mut s = String::new();
                while let Some((_, c)) = chars.next_if(|(_, c)| word(*c)) {
                    s.push(c);
                }
                out.push(if c == '@' {
                    Tok::Capture(s)
                } else {
                    Tok::Predicate(s)
                });
            }
            c if word(c) => {
                let mut s = c.to_string();
                while let Some((_, c)) = chars.next_if(|(_, c)| word(*c) && *c != '.') {
                    s.push(c);
                }
                if chars.next_if(|(_, c)| *c == ':').is_some() {
                    out.push(Tok::Field(s));
                } else {
                    out.push(Tok::Word(s));
                }
            }
            _ => return Err(format!("unexpected `{c}` at byte {i}")),
        }
    }
    Ok(out)
}

struct Parser<'l> {
    lang: &'l Language,
    toks: Vec<Tok>,
    at: usize,
    names: Vec<String>,
    /// The predicates of the pattern being read, wherever in it they stand.
    preds: Vec<Pred>,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.at)
    }

    fn next(&mut self) -> Result<Tok, String> {
        let t = self.toks.get(self.at).cloned().ok_or("unexpected end")?;
        self.at += 1;
        Ok(t)
    }

    fn expect(&mut self, t: Tok) -> Result<(), String> {
        let got = self.next()?;
        if got == t {
            Ok(())
        } else {
            Err(format!("expected {t:?}, found {got:?}"))
        }
    }

    fn capture(&mut self, name: String) -> u32 {
        match self.names.iter().position(|n| *n == name) {
            Some(i) => i as u32,
            None => {
                self.names.push(name);
                self.names.len() as u32 - 1
            }
        }
    }

    /// A top-level pattern: an alternation or node, or a group of one with predicates.
    fn pattern(&mut self) -> Result<Pattern, String> {
        let grouped = self.peek() == Some(&Tok::Open)
            && matches!(self.toks.get(self.at + 1), Some(Tok::Open | Tok::OpenAlt));
        if grouped {
            self.expect(Tok::Open)?;
        }
        let root = self.alt()?;
        if grouped {
            while self.predicate()? {}
            self.expect(Tok::Close)?;
        }
        let preds = std::mem::take(&mut self.preds);
        Ok(Pattern { root, preds })
    }

    /// A predicate `(#name @capture "text" ...)` if one comes next: read into `preds`.
    fn predicate(&mut self) -> Result<bool, String> {
        let is = self.peek() == Some(&Tok::Open)
            && matches!(self.toks.get(self.at + 1), Some(Tok::Predicate(_)));
        if !is {
            return Ok(false);
        }
        self.expect(Tok::Open)?;
        let Tok::Predicate(name) = self.next()? else {
            unreachable!()
        };
        let Tok::Capture(cap) = self.next()? else {
            return Err(format!("#{name} takes a capture first"));
        };
        let cap = self.capture(cap);
        let mut args = Vec::new();
        while let Some(Tok::Str(s)) = self.peek() {
            args.push(s.clone());
            self.at += 1;
        }
        self.expect(Tok::Close)?;
        self.preds.push(match (name.as_str(), args.len()) {
            ("match?", 1) => Pred::Match(cap, Regex::new(&args[0]).map_err(|e| e.to_string())?),
            ("eq?", 1) => Pred::Eq(cap, args.remove(0)),
            ("any-of?", _) => Pred::AnyOf(cap, args),
            _ => return Err(format!("unsupported predicate #{name}")),
        });
        Ok(true)
    }

    /// A node, token or alternation, and the captures after it.
    fn alt(&mut self) -> Result<Alt, String> {
        let options = match self.next()? {
            Tok::OpenAlt => {
                let mut options = Vec::new();
                while self.peek() != Some(&Tok::CloseAlt) {
                    let a = self.alt()?;
                    options.extend(a.options.into_iter().map(|mut o| {
                        o.captures.extend(&a.captures);
                        o
                    }));
                }
                self.expect(Tok::CloseAlt)?;
                options
            }
            Tok::Open => vec![self.node()?],
            Tok::Str(s) => vec![PNode {
                kinds: Some(self.kinds(&s, false)?),
                children: Vec::new(),
                captures: Vec::new(),
            }],
            t => return Err(format!("expected a pattern, found {t:?}")),
        };
        let mut captures = Vec::new();
        while let Some(Tok::Capture(_)) = self.peek() {
            let Tok::Capture(c) = self.next()? else {
                unreachable!()
            };
            captures.push(self.capture(c));
        }
        Ok(Alt { options, captures })
    }

    /// After `(`: a kind or `_` and its children, up to `)`.
    fn node(&mut self) -> Result<PNode, String> {
        let Tok::Word(kind) = self.next()? else {
            return Err("a node pattern starts with its kind".into());
        };
        let kinds = if kind == "_" {
            None
        } else {
            Some(self.kinds(&kind, true)?)
        };
        let mut children = Vec::new();
        loop {
            if self.predicate()? {
                continue;
            }
            let anchored = self.peek() == Some(&Tok::Anchor);
            if anchored {
                self.at += 1;
            }
            let field = match self.peek() {
                Some(Tok::Close) if !anchored => break,
                Some(Tok::Field(f)) => {
                    let f = f.clone();
                    self.at += 1;
                    let id = self.lang.field_id_for_name(&f);
                    Some(u16::from(id.ok_or(format!("unknown field `{f}`"))?))
                }
                _ => None,
            };
            children.push(Child {
                field,
                anchored,
                alt: self.alt()?,
            });
        }
        self.expect(Tok::Close)?;
        Ok(PNode {
            kinds,
            children,
            captures: Vec::new(),
        })
    }

    /// Every kind id named `name` (a supertype: its subtypes, all the way down).
    fn kinds(&self, name: &str, named: bool) -> Result<Vec<u16>, String> {
        let lang = self.lang;
        let mut ids: Vec<u16> = (0..lang.node_kind_count() as u16)
            .filter(|&k| {
                lang.node_kind_for_id(k) == Some(name)
                    && if lang.node_kind_is_supertype(k) {
                        named
                    } else {
                        lang.node_kind_is_named(k) == named && lang.node_kind_is_visible(k)
                    }
            })
            .collect();
        let mut i = 0;
        while i < ids.len() {
            if lang.node_kind_is_supertype(ids[i]) {
                for s in lang.subtypes_for_supertype(ids[i]) {
                    if !ids.contains(s) {
                        ids.push(*s);
                    }
                }
            }
            i += 1;
        }
        ids.retain(|&k| !lang.node_kind_is_supertype(k));
        ids.sort_unstable();
        if ids.is_empty() {
            return Err(format!("unknown node kind `{name}`"));
        }
        Ok(ids)
    }
}

#[cfg(test)]
#[path = "matcher_tests.rs"]
mod tests;

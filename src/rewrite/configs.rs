//! A file whose `#if` groups split statements, or declare a name `__device__` in one branch
//! and otherwise in another, planned once per configuration of its groups (`branches.rs`) and
//! the plans merged into one, so that every branch is instrumented and the code each
//! configuration compiles carries that configuration's own plan (issue 45).
//!
//! The merge works in units that stand or fall together: a fence with its braces, a fixed edit
//! (a launch's two edits are one unit). A fence planned alike (same statement, places and
//! braces, however deep) by several configurations is one unit, listing the accesses each of
//! them sees and aimed only where they agree. A unit is kept where every configuration that compiles any of
//! its places planned it; a brace it shares (an `if` before a group, its body split by it) may
//! stand where another unit that configuration planned has it. What is left out is left out of
//! every branch, with a warning: the code each configuration compiles is its own plan less some
//! whole fences, which compiles wherever the original does.

use crate::rewrite::branches::Groups;
use crate::rewrite::device_code::{Precision, Program};
use crate::rewrite::edits::{Edit, Slot};
use crate::rewrite::parse::{self, MaskedText, SyntaxError};
use crate::rewrite::plan::{self, FilePlan, Function};
use crate::rewrite::sites::{Piece, Site, Sites};
use crate::rewrite::source::SourceFile;
use std::collections::{HashMap, HashSet};
use std::ops::Range;

/// A file planned per configuration: the merged plan and the first syntax error of any
/// configuration.
pub struct Merged {
    pub plan: FilePlan,
    pub syntax_error: Option<SyntaxError>,
}

/// The plan of `file` (masked as `masked`) merged from one plan per configuration of `groups`;
/// `None` where a configuration is nested too deep for the queries. `split`: the file parses
/// only with branches left out (a group splits a statement), so the branches `first_branches`
/// blanked that now hold a fence are counted (`Precision::if_branches`).
pub fn plan(
    file: &SourceFile,
    masked: &MaskedText,
    program: &Program,
    groups: &Groups,
    split: bool,
) -> Option<Merged> {
    let mut plans = Vec::with_capacity(groups.count);
    let mut syntax_error = None;
    for config in 0..groups.count {
        let text = groups.config_text(&masked.text, config);
        let tree = parse::parse_config(&text);
        let error = parse::syntax_error(&tree, &file.text);
        if error.as_ref().is_some_and(|e| e.too_deep) {
            return None;
        }
        syntax_error = syntax_error.or(error);
        plans.push(plan::plan(file, &tree, program, &masked.qualified));
    }
    let mut plan = merge(file, groups, plans);
    if split {
        plan.precision.if_branches = new_branches(groups, &plan);
    }
    Some(Merged { plan, syntax_error })
}

/// Fences or edits that stand or fall together.
struct Unit {
    /// A fence, its function an index into the merged functions; or None for fixed edits.
    site: Option<Site>,
    fixed: Vec<Edit>,
    /// The configurations whose plans have it, as bits.
    plans: u64,
    kept: bool,
}

impl Unit {
    /// Where its own text goes (not braces, which other units may share).
    fn places(&self) -> Vec<usize> {
        match &self.site {
            Some(s) => s.spots.iter().map(|s| s.at).collect(),
            None => self.fixed.iter().map(|e| e.start).collect(),
        }
    }

    fn braces(&self) -> &[Edit] {
        self.site.as_ref().map_or(&[], |s| &s.braces)
    }

    fn at(&self) -> usize {
        self.site
            .as_ref()
            .map_or_else(|| self.fixed[0].start, |s| s.range.start)
    }
}

/// What makes two configurations' fences one: the statement, the function, every place and
/// the braces.
type SiteKey = (Range<usize>, usize, Vec<(usize, Piece)>, Vec<Shape>);

/// An edit but for how deep its node is, which orders it only among edits at one byte: a group
/// that opens a block in one configuration (`#ifdef P` around a loop's head and its `}`) puts
/// the same code deeper there.
type Shape = (usize, usize, String, bool, bool);

fn shape(e: &Edit) -> Shape {
    let (close, second) = match e.slot {
        Slot::Close { second, .. } => (true, second),
        Slot::Open { second, .. } => (false, second),
        Slot::Replace => (false, true),
    };
    (e.start, e.end, e.text.clone(), close, second)
}

fn merge(file: &SourceFile, groups: &Groups, plans: Vec<FilePlan>) -> FilePlan {
    let count = plans.len();
    let mut functions: Vec<Function> = Vec::new();
    let mut function_ids: HashMap<(String, usize, usize), usize> = HashMap::new();
    let mut units: Vec<Unit> = Vec::new();
    let mut sites: HashMap<SiteKey, usize> = HashMap::new();
    let mut fixed: HashMap<Vec<Shape>, usize> = HashMap::new();
    let mut braces: HashMap<Shape, Edit> = HashMap::new();
    let mut warnings: Vec<String> = Vec::new();
    let mut warned: HashSet<String> = HashSet::new();
    let mut precision = Precision::default();
    let (mut has_device_code, mut launches) = (false, false);
    for (config, p) in plans.into_iter().enumerate() {
        let bit = 1u64 << config;
        has_device_code |= p.has_device_code;
        launches |= p.launches;
        precision = max(precision, p.precision);
        for w in p.warnings {
            if warned.insert(w.clone()) {
                warnings.push(w);
            }
        }
        let ids: Vec<usize> = p
            .functions
            .into_iter()
            .map(|f| {
                let key = (f.name.clone(), f.body.start, f.body.end);
                *function_ids.entry(key).or_insert_with(|| {
                    functions.push(f);
                    functions.len() - 1
                })
            })
            .collect();
        for mut site in p.sites.into_vec() {
            site.function = ids[site.function];
            // One brace, however deep each configuration has it: written once.
            for b in &mut site.braces {
                *b = braces.entry(shape(b)).or_insert_with(|| b.clone()).clone();
            }
            let key: SiteKey = (
                site.range.clone(),
                site.function,
                site.spots.iter().map(|s| (s.at, s.piece)).collect(),
                site.braces.iter().map(shape).collect(),
            );
            match sites.get(&key) {
                Some(&u) => {
                    units[u].plans |= bit;
                    agree(units[u].site.as_mut().expect("a fence's unit"), &site);
                }
                None => {
                    sites.insert(key, units.len());
                    units.push(Unit {
                        site: Some(site),
                        fixed: Vec::new(),
                        plans: bit,
                        kept: true,
                    });
                }
            }
        }
        for edits in fixed_units(p.fixed) {
            let key: Vec<Shape> = edits.iter().map(shape).collect();
            match fixed.get(&key) {
                Some(&u) => units[u].plans |= bit,
                None => {
                    fixed.insert(key, units.len());
                    units.push(Unit {
                        site: None,
                        fixed: edits,
                        plans: bit,
                        kept: true,
                    });
                }
            }
        }
    }
    settle(groups, count, &mut units);
    let mut kept_sites = Vec::new();
    let mut kept_fixed = Vec::new();
    let mut dropped: Vec<(usize, String)> = Vec::new();
    for u in units {
        if !u.kept {
            let what = match &u.site {
                Some(s) => format!(
                    "the fence after `{}`",
                    plan::one_line(&file.text[s.range.clone()])
                ),
                None => format!("`{}`", u.fixed[0].text.trim()),
            };
            dropped.push((u.at(), what));
        } else if let Some(site) = u.site {
            kept_sites.push(site);
        } else {
            kept_fixed.extend(u.fixed);
        }
    }
    dropped.sort();
    dropped.dedup();
    warnings.extend(dropped.into_iter().map(|(at, what)| {
        format!(
            "{}: {what} differs between the configurations of this file's `#if` groups (a statement split by `#if`, or a name declared differently in its branches); left out of every branch",
            file.location(at)
        )
    }));
    kept_sites.sort_by_key(|s| (s.accesses[0].0.start, s.range.start));
    kept_fixed.sort_by_key(|e| (e.start, e.slot));
    FilePlan {
        fixed: kept_fixed,
        sites: Sites::one(kept_sites),
        functions,
        has_device_code,
        launches,
        warnings,
        precision,
    }
}

/// `kept`, one configuration's fence, also as `other` (the same places) has it: the accesses
/// of both (in branches of a group inside the statement, each configuration has its own), aimed
/// only where both aim alike and recording for a race build only what both record: text copied
/// into the fence only where each configuration planned it, so that it compiles in each.
fn agree(kept: &mut Site, other: &Site) {
    for a in &other.accesses {
        if !kept.accesses.contains(a) {
            kept.accesses.push(a.clone());
        }
    }
    kept.accesses.sort_by_key(|a| a.0.start);
    if kept.aim != other.aim {
        kept.aim = None;
    }
    kept.race_hooks.retain(|h| other.race_hooks.contains(h));
}

/// A plan's fixed edits as units: a launch's opening and closing edits are one.
fn fixed_units(fixed: Vec<Edit>) -> Vec<Vec<Edit>> {
    let mut out: Vec<Vec<Edit>> = Vec::new();
    let mut open = false;
    for e in fixed {
        if open {
            out.last_mut().expect("an opened launch").push(e);
            open = false;
        } else {
            open = e.text == "wmfix_launch(" || e.text == "wmfix_launch_ex(";
            out.push(vec![e]);
        }
    }
    out
}

/// Leaves out units until each configuration compiles only what it planned: a unit is left out
/// where a configuration compiles one of its places without having planned it, compiles one of
/// its braces that no unit it planned and kept has, or planned it but does not compile it all.
fn settle(groups: &Groups, count: usize, units: &mut [Unit]) {
    loop {
        let mut covered: Vec<HashSet<Shape>> = vec![HashSet::new(); count];
        for u in units.iter().filter(|u| u.kept) {
            for (c, set) in covered.iter_mut().enumerate() {
                if u.plans >> c & 1 == 1 {
                    set.extend(u.braces().iter().map(shape));
                }
            }
        }
        let wrong = |u: &Unit| {
            let places = u.places();
            (0..count).any(|c| {
                let shown = |at: &usize| groups.visible(c, *at);
                if u.plans >> c & 1 == 1 {
                    !places.iter().all(shown) || !u.braces().iter().all(|b| shown(&b.start))
                } else {
                    places.iter().any(shown)
                        || u.braces()
                            .iter()
                            .any(|b| shown(&b.start) && !covered[c].contains(&shape(b)))
                }
            })
        };
        let out: Vec<usize> = (0..units.len())
            .filter(|&i| units[i].kept && wrong(&units[i]))
            .collect();
        if out.is_empty() {
            return;
        }
        for i in out {
            units[i].kept = false;
        }
    }
}

fn max(a: Precision, b: Precision) -> Precision {
    Precision {
        hidden_globals: a.hidden_globals.max(b.hidden_globals),
        local_params: a.local_params.max(b.local_params),
        macro_functions: a.macro_functions.max(b.macro_functions),
        macro_functions_fenced: a.macro_functions_fenced.max(b.macro_functions_fenced),
        if_branches: 0,
    }
}

/// The `#elif`/`#else` branches (and branches inside them) that hold a fence of `plan`: those
/// that parsing with each group's first branch alone left uninstrumented.
fn new_branches(groups: &Groups, plan: &FilePlan) -> usize {
    let holding: HashSet<usize> = plan
        .sites
        .iter()
        .filter_map(|s| groups.branch_at(s.spots.first()?.at))
        .filter(|&b| groups.beyond_first(b))
        .collect();
    holding.len()
}

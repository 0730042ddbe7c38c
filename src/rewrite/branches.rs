//! A file's `#if` groups and the configurations that together keep every branch of them
//! (issue 45). A configuration keeps one branch of every group (a group without `#else` has an
//! empty one, kept where none of the others is) and blanks the rest and every group's directive
//! lines with spaces, newlines kept: the same byte offsets, so each configuration's plan edits
//! the original text (`configs.rs`). `#if 0` branches are never compiled and blank in every
//! configuration. Branches inside a branch share that branch's configurations: a group needs as
//! many configurations as its branches need together, a branch as many as its most demanding
//! group, and the file as many as its most demanding top-level group.

use crate::rewrite::ranges::Nested;
use std::ops::Range;

/// More configurations than this are not planned: the file keeps the first branch of each
/// group (`mask::first_branches`), said in a warning.
pub const MAX_CONFIGS: usize = 32;

pub struct Branch {
    pub group: usize,
    /// 0 for the `#if`, then each `#elif`/`#else`; a group's implicit empty `#else` is last.
    pub index: usize,
    /// Its code: from after its directive to the next directive of its group.
    pub body: Range<usize>,
    /// `#if 0`: never compiled.
    pub dead: bool,
    /// The empty `#else` of a group that has none.
    pub implicit: bool,
}

pub struct Group {
    /// The branch the group is inside.
    pub parent: Option<usize>,
    pub branches: Vec<usize>,
}

pub struct Groups {
    pub groups: Vec<Group>,
    pub branches: Vec<Branch>,
    /// Every line of every group's directives (`#if`, `#elif`, `#else`, `#endif` and their
    /// continuation lines): blank in every configuration.
    directives: Vec<Range<usize>>,
    /// Per branch: the configurations that keep it, as bits.
    keep: Vec<u64>,
    /// How many configurations there are.
    pub count: usize,
    /// The explicit branches' bodies, and the branch of each range.
    bodies: Nested,
    body_branch: Vec<usize>,
    directive_ranges: Nested,
}

/// The directives that open, continue and close groups, each with the bytes of its lines.
fn directives(text: &str) -> Vec<(&str, Range<usize>, &str)> {
    let mut out = Vec::new();
    let mut at = 0;
    let mut continued = false;
    for line in text.split_inclusive('\n') {
        let range = at..at + line.len();
        at += line.len();
        let was_continued = continued;
        continued = line.trim_end_matches(['\n', '\r']).ends_with('\\');
        if was_continued {
            // A continuation line of the directive before it: its bytes join that directive's.
            if let Some((_, r, _)) = out
                .last_mut()
                .filter(|(_, r, _): &&mut (_, Range<usize>, _)| r.end == range.start)
            {
                r.end = range.end;
            }
            continue;
        }
        let Some(d) = line.trim_start().strip_prefix('#').map(str::trim_start) else {
            continue;
        };
        let word_len = d
            .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .unwrap_or(d.len());
        let word = &d[..word_len];
        if matches!(
            word,
            "if" | "ifdef" | "ifndef" | "elif" | "else" | "elifdef" | "elifndef" | "endif"
        ) {
            out.push((word, range, &d[word_len..]));
        }
    }
    out
}

/// Whether an `#if`'s condition is `0`: a branch never compiled.
fn never(condition: &str) -> bool {
    let c = condition.split("//").next().unwrap_or("");
    let c = c.split("/*").next().unwrap_or("");
    c.trim() == "0"
}

impl Groups {
    /// The groups of `text`; `None` where it has none with more than one branch, or needs more
    /// than `MAX_CONFIGS` configurations.
    pub fn scan(text: &str) -> Option<Groups> {
        if !text.contains("#if") {
            return None;
        }
        let mut groups: Vec<Group> = Vec::new();
        let mut branches: Vec<Branch> = Vec::new();
        let mut directive_lines = Vec::new();
        // Open groups, and whether each has had its `#else`.
        let mut open: Vec<(usize, bool)> = Vec::new();
        let close = |branches: &mut Vec<Branch>, g: &Group, end: usize| {
            let last = *g.branches.last().expect("a group has a branch");
            branches[last].body.end = end;
        };
        for (word, range, condition) in directives(text) {
            match word {
                "if" | "ifdef" | "ifndef" => {
                    let parent = open
                        .last()
                        .map(|&(g, _)| *groups[g].branches.last().unwrap());
                    let g = groups.len();
                    branches.push(Branch {
                        group: g,
                        index: 0,
                        body: range.end..range.end,
                        dead: word == "if" && never(condition),
                        implicit: false,
                    });
                    groups.push(Group {
                        parent,
                        branches: vec![branches.len() - 1],
                    });
                    open.push((g, false));
                }
                _ if open.is_empty() => continue,
                "endif" => {
                    let (g, has_else) = open.pop().expect("an open group");
                    close(&mut branches, &groups[g], range.start);
                    if !has_else {
                        Self::implicit(&mut groups, &mut branches, g, range.start);
                    }
                }
                _ => {
                    let (g, has_else) = open.last_mut().expect("an open group");
                    close(&mut branches, &groups[*g], range.start);
                    *has_else |= word == "else";
                    let index = groups[*g].branches.len();
                    branches.push(Branch {
                        group: *g,
                        index,
                        body: range.end..range.end,
                        dead: false,
                        implicit: false,
                    });
                    groups[*g].branches.push(branches.len() - 1);
                }
            }
            directive_lines.push(range);
        }
        // Groups left open at the end of the text end there.
        while let Some((g, has_else)) = open.pop() {
            close(&mut branches, &groups[g], text.len());
            if !has_else {
                Self::implicit(&mut groups, &mut branches, g, text.len());
            }
        }
        if groups.iter().all(|g| g.branches.len() < 2) {
            return None;
        }
        choiceless(text, &groups, &mut branches);
        let (keep, count) = assign(&groups, &branches)?;
        let explicit: Vec<usize> = (0..branches.len())
            .filter(|&b| !branches[b].implicit)
            .collect();
        Some(Groups {
            bodies: Nested::new(explicit.iter().map(|&b| branches[b].body.clone())),
            body_branch: explicit,
            directive_ranges: Nested::new(directive_lines.iter().cloned()),
            directives: directive_lines,
            groups,
            branches,
            keep,
            count,
        })
    }

    fn implicit(groups: &mut [Group], branches: &mut Vec<Branch>, g: usize, at: usize) {
        branches.push(Branch {
            group: g,
            index: groups[g].branches.len(),
            body: at..at,
            dead: false,
            implicit: true,
        });
        groups[g].branches.push(branches.len() - 1);
    }

    /// Whether configuration `config` keeps branch `b`.
    pub fn keeps(&self, config: usize, b: usize) -> bool {
        self.keep[b] >> config & 1 == 1
    }

    /// `text` as configuration `config` has it: the directive lines and the branches it does
    /// not keep blanked.
    pub fn config_text(&self, text: &str, config: usize) -> String {
        let mut out = text.as_bytes().to_vec();
        let blanked = (0..self.branches.len())
            .filter(|&b| !self.keeps(config, b))
            .map(|b| self.branches[b].body.clone());
        for r in self.directives.iter().cloned().chain(blanked) {
            for c in &mut out[r] {
                if *c != b'\n' && *c != b'\r' {
                    *c = b' ';
                }
            }
        }
        String::from_utf8(out).expect("blanking whole lines keeps UTF-8")
    }

    /// The innermost branch whose code holds byte `at`; `None` outside every group.
    pub fn branch_at(&self, at: usize) -> Option<usize> {
        self.bodies.innermost(at..at).map(|i| self.body_branch[i])
    }

    /// Whether configuration `config` compiles byte `at`: not on a directive line, and every
    /// branch around it kept.
    pub fn visible(&self, config: usize, at: usize) -> bool {
        !self.directive_ranges.holds(at..at)
            && self.branch_at(at).is_none_or(|b| self.keeps(config, b))
    }

    /// Whether branch `b` is one that `mask::first_branches` blanks: an `#elif`/`#else`
    /// branch, or one inside such a branch.
    pub fn beyond_first(&self, b: usize) -> bool {
        let mut b = Some(b);
        while let Some(i) = b {
            if self.branches[i].index > 0 {
                return true;
            }
            b = self.groups[self.branches[i].group].parent;
        }
        false
    }

    /// Whether a name declared `__device__` in one branch of a group is named in another
    /// branch of it (`__device__ int n = 4;` against `constexpr int n = 4;`): which one a use
    /// reads depends on the configuration.
    pub fn declared_per_branch(&self, text: &str) -> bool {
        !self.per_branch_names(text).is_empty()
    }

    /// The names `declared_per_branch` finds.
    pub fn per_branch_names<'s>(&self, text: &'s str) -> Vec<&'s str> {
        let mut out = Vec::new();
        for g in &self.groups {
            let bodies: Vec<&str> = g
                .branches
                .iter()
                .map(|&b| &text[self.branches[b].body.clone()])
                .collect();
            for (i, body) in bodies.iter().enumerate() {
                out.extend(device_variables(body).filter(|name| {
                    bodies.iter().enumerate().any(|(j, other)| {
                        j != i
                            && crate::rewrite::macros::identifiers(other).any(|(_, w)| w == *name)
                    })
                }));
            }
        }
        out
    }
}

/// Marks as never kept the branches no configuration needs: the empty `#else` of an include
/// guard (`#ifndef X` then `#define X`), and every branch but the first kept one of a group whose
/// branches hold no code (`#  pragma GCC system_header` per compiler, `#define`s of one value
/// or another), which every configuration parses alike.
fn choiceless(text: &str, groups: &[Group], branches: &mut [Branch]) {
    for g in groups {
        let first = &branches[g.branches[0]];
        let head = text[..first.body.start].trim_end_matches(['\n', '\r']);
        let directive = head.rsplit('\n').next().unwrap_or("").trim_start();
        let guard = directive
            .strip_prefix('#')
            .map(str::trim_start)
            .and_then(|d| d.strip_prefix("ifndef"))
            .and_then(|d| crate::rewrite::macros::identifiers(d).next())
            .map(|(_, name)| name);
        let defines = |name: &str| {
            let body = &text[first.body.clone()];
            let line = body.lines().map(str::trim).find(|l| !l.is_empty());
            line.and_then(|l| l.strip_prefix('#'))
                .map(str::trim_start)
                .and_then(|l| l.strip_prefix("define"))
                .and_then(|l| crate::rewrite::macros::identifiers(l).next())
                .is_some_and(|(_, n)| n == name)
        };
        if guard.is_some_and(defines) {
            for &b in &g.branches {
                branches[b].dead |= branches[b].implicit;
            }
        }
        let free = g
            .branches
            .iter()
            .all(|&b| code_free(&text[branches[b].body.clone()]));
        if free && let Some(kept) = g.branches.iter().position(|&b| !branches[b].dead) {
            for &b in &g.branches[kept + 1..] {
                branches[b].dead = true;
            }
        }
    }
}

/// Whether `body` holds only directives (not a `#define` naming a thread-id built-in, which
/// `plan.rs` rewrites), comments and blank lines.
fn code_free(body: &str) -> bool {
    let (mut comment, mut continued) = (false, false);
    body.lines().all(|l| {
        let t = l.trim();
        let was_continued = std::mem::replace(&mut continued, t.ends_with('\\'));
        if comment {
            comment = !t.contains("*/");
            return true;
        }
        if t.is_empty() || t.starts_with("//") || was_continued || t.starts_with('#') {
            return !["threadIdx", "blockIdx", "gridDim"]
                .iter()
                .any(|w| t.contains(w));
        }
        if t.starts_with("/*") {
            if let Some(end) = t.find("*/") {
                return t[end + 2..].trim().is_empty();
            }
            comment = true;
            return true;
        }
        false
    })
}

/// The names that lines declaring a `__device__` variable (not a function) declare: the last
/// identifier before `=`, `;`, `[` or `{`.
fn device_variables(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .filter(|l| l.contains("__device__") && !l.contains('('))
        .filter_map(|l| {
            let head = l.split(['=', ';', '[', '{']).next()?;
            crate::rewrite::macros::identifiers(head)
                .last()
                .map(|(_, w)| w)
        })
}

/// Which configurations keep each branch, and how many there are; `None` above `MAX_CONFIGS`.
fn assign(groups: &[Group], branches: &[Branch]) -> Option<(Vec<u64>, usize)> {
    // Children come after their parents: needs are summed from the last group back.
    let mut need_branch = vec![1usize; branches.len()];
    let mut need_group = vec![0usize; groups.len()];
    for g in (0..groups.len()).rev() {
        for &b in &groups[g].branches {
            if branches[b].dead {
                need_branch[b] = 0;
            }
        }
        need_group[g] = groups[g].branches.iter().map(|&b| need_branch[b]).sum();
        if let Some(p) = groups[g].parent
            && !branches[p].dead
        {
            need_branch[p] = need_branch[p].max(need_group[g]);
        }
    }
    let count = (0..groups.len())
        .filter(|&g| groups[g].parent.is_none())
        .map(|g| need_group[g])
        .max()
        .unwrap_or(1)
        .max(1);
    if count > MAX_CONFIGS {
        return None;
    }
    let mut keep = vec![0u64; branches.len()];
    for g in groups {
        let mut mine: Vec<usize> = match g.parent {
            None => (0..count).collect(),
            Some(p) => (0..count).filter(|c| keep[p] >> c & 1 == 1).collect(),
        };
        let alive: Vec<usize> = g
            .branches
            .iter()
            .copied()
            .filter(|&b| need_branch[b] > 0)
            .collect();
        for (i, &b) in alive.iter().enumerate() {
            let take = if i + 1 == alive.len() {
                mine.len()
            } else {
                need_branch[b].min(mine.len())
            };
            for c in mine.drain(..take) {
                keep[b] |= 1 << c;
            }
        }
    }
    Some((keep, count))
}

#[cfg(test)]
#[path = "branches_tests.rs"]
mod tests;

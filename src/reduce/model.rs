//! Model completion: testing finds the fences this GPU needs, not all that the PTX memory model
//! requires. For each kept fence this names the synchronisation pattern it belongs to (a
//! release before a flag store, an unlock or a ticket; an acquire after a flag read in a spin
//! loop, a lock's compare-and-swap or a ticket), finds the other side of the same variable among the program's
//! fence sites, and proposes the fence there. The rules are textual, over `fences.json` and the
//! sources; where none applies the fence is reported as not recognised rather than guessed.

use crate::fences::id::{FenceId, Ids};
use crate::fences::record::{AccessKind, FenceRecord};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// A fence the model requires beside a kept one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Completion {
    pub id: FenceId,
    /// The kept fence it completes.
    pub partner: FenceId,
    /// `release` or `acquire`: what the proposed fence does.
    pub side: String,
    pub variable: String,
    pub reasoning: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Completed {
    pub fences: Vec<Completion>,
    /// Kept fences whose pattern no rule recognised, with what was looked for.
    pub unrecognised: Vec<(FenceId, String)>,
}

impl Completed {
    pub fn ids(&self) -> Ids {
        self.fences.iter().map(|c| c.id).collect()
    }
}

/// What one fence site does to synchronisation.
#[derive(Clone, Debug, PartialEq)]
enum Role {
    /// A lock's compare-and-swap on the variable.
    Lock(String),
    /// `atomicExch(v, 0)`: an unlock.
    Unlock(String),
    /// A load in a loop condition: a spin on a flag.
    Spin(String),
    None,
}

/// The program's fence sites and sources, for the rules.
pub struct Program<'a> {
    pub records: &'a [FenceRecord],
    pub sources: &'a BTreeMap<PathBuf, String>,
}

pub fn complete(p: &Program, kept: &Ids) -> Completed {
    let mut out = Completed::default();
    for &k in kept {
        let Some(r) = p.records.get(k.0) else {
            continue;
        };
        let found = match role(r) {
            Role::Lock(v) => p.acquire_partners(r, &v, "the lock's compare-and-swap"),
            Role::Spin(v) => p.acquire_partners(r, &v, "the spin on the flag"),
            _ if p.ticket(r).is_some() => p.ticket_releases(r),
            _ => p.ticket_acquire(r).unwrap_or_else(|| p.release_partners(r)),
        };
        match found {
            Ok(list) => {
                for c in list {
                    // A fence in a function no launched kernel reaches would never run.
                    let runs = p.records.get(c.id.0).is_some_and(|r| !r.unreachable);
                    if runs && !kept.contains(&c.id) && !out.fences.iter().any(|x| x.id == c.id) {
                        out.fences.push(c);
                    }
                }
            }
            Err(why) => out.unrecognised.push((k, why)),
        }
    }
    out
}

impl Program<'_> {
    /// Kept `k` is an acquire on `v`: the release side is a fence before each flag store or
    /// unlock of `v`.
    fn acquire_partners(
        &self,
        k: &FenceRecord,
        v: &str,
        what: &str,
    ) -> Result<Vec<Completion>, String> {
        let mut list = vec![];
        let flag_stores = self.records.iter().filter(|r| {
            r.kind == AccessKind::Store && stores(r).iter().any(|s| s == v) && is_flag(self, v)
        });
        let unlock_fns: Vec<&FenceRecord> = self
            .records
            .iter()
            .filter(|r| matches!(role(r), Role::Unlock(_)))
            .collect();
        let mut before: Vec<(FenceId, String)> = flag_stores
            .filter_map(|w| {
                self.preceding(w.file.clone(), w.line)
                    .map(|b| (b, format!("the store `{}`", w.access)))
            })
            .collect();
        if matches!(role(k), Role::Lock(_)) {
            for u in &unlock_fns {
                for line in self.calls(&u.file, &u.function) {
                    if let Some(b) = self.preceding(u.file.clone(), line) {
                        before.push((b, format!("the call of `{}` on line {line}", u.function)));
                    }
                }
            }
        }
        for (id, at) in before {
            list.push(Completion {
                id,
                partner: k.id,
                side: "release".into(),
                variable: v.into(),
                reasoning: format!(
                    "fence {} is an acquire after {what} (`{}`); the writes before the matching release must be ordered before it: fence {id} sits before {at} (release; narrower: `cuda::atomic_ref` store with `memory_order_release`, or `st.release`)",
                    k.id, k.access
                ),
            });
        }
        if list.is_empty() {
            return Err(format!(
                "fence {} acquires `{v}` but no fence site precedes a release of it",
                k.id
            ));
        }
        Ok(list)
    }

    /// Kept `k` orders writes before a flag store or an unlock: the acquire side is the fence
    /// after each spin on the flag, or after each lock's compare-and-swap.
    fn release_partners(&self, k: &FenceRecord) -> Result<Vec<Completion>, String> {
        let (v, what, unlock) = self.release_after(k).ok_or_else(|| {
            format!(
                "fence {} (`{}` in {}) is followed by no flag store (a variable read in a spin loop) and no unlock, in its function or, one level up, after its calls",
                k.id, k.access, k.function
            )
        })?;
        let acquires: Vec<&FenceRecord> = self
            .records
            .iter()
            .filter(|r| match role(r) {
                Role::Spin(s) => !unlock && s == v,
                Role::Lock(_) => unlock,
                _ => false,
            })
            .collect();
        if acquires.is_empty() {
            return Err(format!(
                "fence {} releases `{v}` ({what}) but no acquire of it was found",
                k.id
            ));
        }
        Ok(acquires
            .into_iter()
            .map(|a| Completion {
                id: a.id,
                partner: k.id,
                side: "acquire".into(),
                variable: v.clone(),
                reasoning: format!(
                    "fence {} is a release before {what}; a reader must order its later loads after seeing it: fence {} follows `{}` in {} (acquire; narrower: `cuda::atomic_ref` load with `memory_order_acquire`, or `ld.acquire`){}",
                    k.id,
                    a.id,
                    a.access,
                    a.function,
                    if a.placements.iter().any(|p| p.loop_body) { "; its after-the-loop placement is the one needed" } else { "" }
                ),
            })
            .collect())
    }

    /// `T t = atomicInc(v, ..)` (or Add, Sub, Dec) whose result is compared with `==` on its
    /// line or the next three: a ticket, as in a last-block reduction (the block that draws
    /// the last ticket reads what the others wrote before theirs). Its variable.
    fn ticket(&self, r: &FenceRecord) -> Option<String> {
        let call = r.accesses.iter().find_map(|a| a.strip_prefix("atomic: "))?;
        let name = call.split('(').next()?.trim();
        if !matches!(name, "atomicInc" | "atomicAdd" | "atomicSub" | "atomicDec") {
            return None;
        }
        let (lhs, _) = r.access.split_once(name)?;
        let result = lhs
            .trim_end()
            .strip_suffix('=')?
            .split_whitespace()
            .last()?;
        let text = self.sources.get(&r.file)?;
        let compared = text
            .lines()
            .skip(r.line.saturating_sub(1))
            .take(4)
            .any(|l| l.contains(&format!("{result} ==")) || l.contains(&format!("== {result}")));
        compared.then(|| call_args(call).first().map(|v| base(v)))?
    }

    /// Kept `k` is the fence after a ticket: the acquire of the block that draws the last one.
    /// The release side is the fence before each ticket on the same variable.
    fn ticket_releases(&self, k: &FenceRecord) -> Result<Vec<Completion>, String> {
        let v = self.ticket(k).unwrap_or_default();
        let list: Vec<Completion> = self
            .records
            .iter()
            .filter(|t| self.ticket(t).as_deref() == Some(v.as_str()))
            .filter_map(|t| Some((t, self.preceding(t.file.clone(), t.line)?)))
            .map(|(t, id)| Completion {
                id,
                partner: k.id,
                side: "release".into(),
                variable: v.clone(),
                reasoning: format!(
                    "fence {} is an acquire after the ticket `{}`: the block that draws the last ticket reads what the others wrote before theirs, so each writer needs a release before its ticket: fence {id} sits before `{}` (narrower: the ticket as `cuda::atomic_ref` `fetch_add` with `memory_order_acq_rel`)",
                    k.id, k.access, t.access
                ),
            })
            .collect();
        if list.is_empty() {
            return Err(format!(
                "fence {} acquires the ticket `{v}` but no fence site precedes a ticket",
                k.id
            ));
        }
        Ok(list)
    }

    /// Kept `k` directly precedes a ticket in its function: a release before it, whose
    /// acquire is the fence after each ticket on the same variable.
    fn ticket_acquire(&self, k: &FenceRecord) -> Option<Result<Vec<Completion>, String>> {
        let next = self.next_in_function(k)?;
        let v = self.ticket(next)?;
        let list = self
            .records
            .iter()
            .filter(|t| self.ticket(t).as_deref() == Some(v.as_str()))
            .map(|t| Completion {
                id: t.id,
                partner: k.id,
                side: "acquire".into(),
                variable: v.clone(),
                reasoning: format!(
                    "fence {} is a release before the ticket `{}`; the block that draws the last ticket must order its reads of the others' writes after it: fence {} follows `{}` (narrower: the ticket as `cuda::atomic_ref` `fetch_add` with `memory_order_acq_rel`)",
                    k.id, next.access, t.id, t.access
                ),
            })
            .collect();
        Some(Ok(list))
    }

    /// The next fence site after `k` in its function.
    fn next_in_function(&self, k: &FenceRecord) -> Option<&FenceRecord> {
        self.records
            .iter()
            .filter(|r| {
                r.file == k.file
                    && r.function == k.function
                    && (r.line, r.column) > (k.line, k.column)
            })
            .min_by_key(|r| (r.line, r.column))
    }

    /// The variable `k` releases, what releases it, and whether that is an unlock.
    fn release_after(&self, k: &FenceRecord) -> Option<(String, String, bool)> {
        let next = self.next_in_function(k);
        if let Some(n) = next {
            if let Some(v) = stores(n).into_iter().find(|s| is_flag(self, s)) {
                return Some((v.clone(), format!("the flag store `{}`", n.access), false));
            }
            if let Role::Unlock(v) = role(n) {
                return Some((v, format!("the unlock `{}`", n.access), true));
            }
        }
        let end = next.map_or(usize::MAX, |n| n.line);
        if let Some(found) = self.unlock_call(&k.file, k.line, end) {
            return Some(found);
        }
        if next.is_none() {
            for line in self.calls(&k.file, &k.function) {
                if let Some(found) = self.unlock_call(&k.file, line, line + 3) {
                    return Some(found);
                }
            }
        }
        None
    }

    /// A call of an unlock function on the lines after `from`, up to `to` (exclusive) and
    /// within the function.
    fn unlock_call(
        &self,
        file: &PathBuf,
        from: usize,
        to: usize,
    ) -> Option<(String, String, bool)> {
        let text = self.sources.get(file)?;
        for (n, line) in text
            .lines()
            .enumerate()
            .skip(from)
            .take(to.saturating_sub(from + 1).min(5))
        {
            if line.starts_with('}') {
                return None;
            }
            for r in self
                .records
                .iter()
                .filter(|r| matches!(role(r), Role::Unlock(_)))
            {
                if let Some(at) = line.find(&format!("{}(", r.function)) {
                    let arg = line[at + r.function.len() + 1..]
                        .split(')')
                        .next()
                        .unwrap_or("");
                    let v = base(arg);
                    return Some((
                        v,
                        format!("the unlock `{}` on line {}", line.trim(), n + 1),
                        true,
                    ));
                }
            }
        }
        None
    }

    /// Lines (1-based) in `file` that call `function`, not its definition.
    fn calls(&self, file: &PathBuf, function: &str) -> Vec<usize> {
        let Some(text) = self.sources.get(file) else {
            return vec![];
        };
        let pattern = format!("{function}(");
        text.lines()
            .enumerate()
            .filter(|(_, l)| {
                l.find(&pattern).is_some_and(|at| {
                    !l.contains("__device__")
                        && !l.contains("__global__")
                        && !l[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_')
                })
            })
            .map(|(n, _)| n + 1)
            .collect()
    }

    /// The fence site just before `line` in the same function: the last record above it with
    /// no function definition between.
    fn preceding(&self, file: PathBuf, line: usize) -> Option<FenceId> {
        let r = self
            .records
            .iter()
            .filter(|r| r.file == file && r.line < line)
            .max_by_key(|r| (r.line, r.column))?;
        let text = self.sources.get(&file)?;
        let between: Vec<&str> = text.lines().skip(r.line).take(line - 1 - r.line).collect();
        let crosses = between
            .iter()
            .any(|l| l.contains("__device__") || l.contains("__global__") || l.starts_with('}'));
        (!crosses).then_some(r.id)
    }
}

fn role(r: &FenceRecord) -> Role {
    for a in &r.accesses {
        let (kind, text) = a.split_once(": ").unwrap_or(("", a));
        let args = call_args(text);
        match (
            kind,
            text.split('(').next().unwrap_or("").trim(),
            args.as_slice(),
        ) {
            ("atomic", "atomicCAS", [v, ..]) => return Role::Lock(base(v)),
            ("atomic", "atomicExch", [v, zero]) if zero.trim() == "0" => {
                return Role::Unlock(base(v));
            }
            ("load", _, _) if r.placements.iter().any(|p| p.loop_body) => {
                return Role::Spin(base(text));
            }
            _ => {}
        }
    }
    Role::None
}

/// The variables a site stores to.
fn stores(r: &FenceRecord) -> Vec<String> {
    r.accesses
        .iter()
        .filter_map(|a| a.strip_prefix("store: "))
        .map(base)
        .collect()
}

/// A variable read in a spin loop somewhere.
fn is_flag(p: &Program, v: &str) -> bool {
    p.records
        .iter()
        .any(|r| role(r) == Role::Spin(v.to_string()))
}

/// `flag[tile - 1]` -> `flag`; `&locks[b]` -> `locks`; `q->tail` -> `q->tail`.
fn base(e: &str) -> String {
    let e = e.trim().trim_start_matches(['&', '*', '(']);
    e.split(['[', ' ', ',', ')'])
        .next()
        .unwrap_or("")
        .to_string()
}

/// `f(a, g(b), c)` -> `["a", "g(b)", "c"]`.
fn call_args(text: &str) -> Vec<String> {
    let Some(open) = text.find('(') else {
        return vec![];
    };
    let (mut depth, mut cur, mut out) = (0, String::new(), vec![]);
    for c in text[open + 1..].chars() {
        match c {
            '(' => depth += 1,
            ')' if depth == 0 => break,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    out.push(cur);
    out.into_iter().map(|s| s.trim().to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_and_arguments() {
        assert_eq!(base("flag[tile - 1]"), "flag");
        assert_eq!(base("&locks[b]"), "locks");
        assert_eq!(base("*c"), "c");
        assert_eq!(
            call_args("atomicCAS(mutex, f(0, 1), 1)"),
            ["mutex", "f(0, 1)", "1"]
        );
    }

    fn record(id: usize, function: &str, line: usize, access: &str, spin: bool) -> FenceRecord {
        use crate::fences::record::{How, Placement};
        let (kind, text) = access.split_once(": ").unwrap();
        let kind = if kind == "load" {
            AccessKind::Load
        } else {
            AccessKind::Store
        };
        let at = |loop_body| Placement {
            line,
            column: 1,
            byte: 0,
            how: How::Statement,
            loop_body,
        };
        FenceRecord {
            id: FenceId(id),
            file: "k.cu".into(),
            line,
            column: 3,
            function: function.into(),
            access: text.into(),
            kind,
            aimed: None,
            accesses: vec![access.into()],
            placements: if spin {
                vec![at(true), at(false)]
            } else {
                vec![at(false)]
            },
            unreachable: false,
            library: false,
        }
    }

    #[test]
    fn no_partner_is_proposed_where_no_launched_kernel_reaches() {
        let mut dead = record(3, "old_reader", 30, "load: *flag", true);
        dead.unreachable = true;
        let records = vec![
            record(0, "writer", 2, "store: data[0]", false),
            record(1, "writer", 3, "store: *flag", false),
            record(2, "reader", 20, "load: *flag", true),
            dead,
        ];
        let sources = BTreeMap::new();
        let p = Program {
            records: &records,
            sources: &sources,
        };
        let done = complete(&p, &[FenceId(0)].into_iter().collect());
        assert_eq!(done.ids(), [FenceId(2)].into_iter().collect(), "{done:?}");
    }
}

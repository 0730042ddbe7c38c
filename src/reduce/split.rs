//! How binary reduction cuts the fences: the paper's halves, delta debugging, and the
//! structure-aware split that first drops whole kernels and device functions, then runs ddmin
//! on the fences of those left. Each is written over `Remover`, the reducer's "drop these and
//! check" step.

use crate::fences::id::{FenceId, Ids};
use anyhow::Result;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Split {
    /// The paper's: drop the first half, else the second half, while one succeeds.
    Halves,
    /// Delta debugging: drop one of n chunks; refine n up to single fences.
    Ddmin,
    /// Drop whole kernels and device functions first (ddmin over functions), then ddmin over
    /// the fences of the functions left.
    Structure,
}

pub trait Remover {
    /// `f` without `remove`, if that passed its check.
    fn try_remove(&mut self, f: &Ids, remove: &[FenceId]) -> Result<Option<Ids>>;
    /// No more removals: the budget is spent, or the set being reduced is no longer trusted.
    fn should_stop(&self) -> bool;
}

/// Binary reduction of `f` by `split`; `groups` are the fences of each function (structure);
/// ddmin tries the units of `library` (fences in library headers) first.
pub fn binary(
    r: &mut dyn Remover,
    f: Ids,
    split: Split,
    groups: &[Ids],
    library: &Ids,
) -> Result<Ids> {
    match split {
        Split::Halves => halves(r, f),
        Split::Ddmin => ddmin(r, f.clone(), singles(&f, library)),
        Split::Structure => {
            let f = ddmin(r, f.clone(), functions(&f, groups, library))?;
            ddmin(r, f.clone(), singles(&f, library))
        }
    }
}

fn halves(r: &mut dyn Remover, mut f: Ids) -> Result<Ids> {
    while f.len() > 1 && !r.should_stop() {
        let v: Vec<FenceId> = f.iter().copied().collect();
        let (h1, h2) = v.split_at(v.len() / 2);
        if let Some(rest) = r.try_remove(&f, h1)? {
            f = rest;
        } else if let Some(rest) = r.try_remove(&f, h2)? {
            f = rest;
        } else {
            break;
        }
    }
    Ok(f)
}

/// Delta debugging over `units` (sets of fences dropped together): drop one of n chunks of
/// units; on success go on with the rest and n - 1 chunks, else refine n up to single units.
fn ddmin(r: &mut dyn Remover, mut f: Ids, mut units: Vec<Vec<FenceId>>) -> Result<Ids> {
    let mut n = 2;
    while units.len() >= 2 && !r.should_stop() {
        let mut removed = false;
        for (start, end) in chunks(units.len(), n) {
            let drop: Vec<FenceId> = units[start..end].concat();
            if let Some(rest) = r.try_remove(&f, &drop)? {
                f = rest;
                units.drain(start..end);
                n = (n - 1).max(2);
                removed = true;
                break;
            }
        }
        if !removed {
            if n >= units.len() {
                break;
            }
            n = (2 * n).min(units.len());
        }
    }
    Ok(f)
}

fn singles(f: &Ids, library: &Ids) -> Vec<Vec<FenceId>> {
    library_first(f, library)
        .into_iter()
        .map(|x| vec![x])
        .collect()
}

/// `f` with its fences in library headers first, each part in id order: the order removals
/// are tried, so that of two fences ordering the same accesses the patchable one stays.
pub fn library_first(f: &Ids, library: &Ids) -> Vec<FenceId> {
    let (lib, own): (Vec<FenceId>, Vec<FenceId>) = f.iter().partition(|x| library.contains(x));
    lib.into_iter().chain(own).collect()
}

/// Units wholly in library headers first; otherwise in the order of their first fence.
fn units_library_first(units: &mut [Vec<FenceId>], library: &Ids) {
    units.sort_by_key(|u| (!u.iter().all(|x| library.contains(x)), u[0]));
}

/// The fences of `f` grouped by function, library functions first, then in the order of their
/// first fence; fences in no group are units of their own.
fn functions(f: &Ids, groups: &[Ids], library: &Ids) -> Vec<Vec<FenceId>> {
    let mut units: Vec<Vec<FenceId>> = groups
        .iter()
        .map(|g| g.intersection(f).copied().collect::<Vec<_>>())
        .filter(|u| !u.is_empty())
        .collect();
    let grouped: Ids = units.iter().flatten().copied().collect();
    units.extend(f.difference(&grouped).map(|x| vec![*x]));
    units_library_first(&mut units, library);
    units
}

/// `len` items cut into `n` chunks of near-equal length, in order: (start, end) of each.
pub fn chunks(len: usize, n: usize) -> Vec<(usize, usize)> {
    let n = n.clamp(1, len.max(1));
    (0..n)
        .map(|k| (k * len / n, (k + 1) * len / n))
        .filter(|(s, e)| s < e)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Passes a set iff it keeps every fence of `required`; counts checks.
    struct Exact {
        required: Ids,
        checks: usize,
    }

    impl Remover for Exact {
        fn try_remove(&mut self, f: &Ids, remove: &[FenceId]) -> Result<Option<Ids>> {
            self.checks += 1;
            let rest: Ids = f.iter().copied().filter(|x| !remove.contains(x)).collect();
            Ok(self.required.is_subset(&rest).then_some(rest))
        }
        fn should_stop(&self) -> bool {
            false
        }
    }

    fn ids(v: impl IntoIterator<Item = usize>) -> Ids {
        v.into_iter().map(FenceId).collect()
    }

    #[test]
    fn chunks_cover_in_order() {
        assert_eq!(chunks(5, 2), vec![(0, 2), (2, 5)]);
        assert_eq!(chunks(2, 8), vec![(0, 1), (1, 2)]);
    }

    #[test]
    fn structure_drops_whole_functions_with_fewer_checks() {
        // ls-bh-like: 90 fences in 6 kernels of 15; needed ones spread over two kernels.
        let groups: Vec<Ids> = (0..6).map(|k| ids(15 * k..15 * (k + 1))).collect();
        let required = ids([16, 20, 61, 70]);
        let run = |split| {
            let mut r = Exact {
                required: required.clone(),
                checks: 0,
            };
            let f = binary(&mut r, FenceId::all(90), split, &groups, &Ids::new()).unwrap();
            (f, r.checks)
        };
        let (structure, by_structure) = run(Split::Structure);
        let (ddmin, by_ddmin) = run(Split::Ddmin);
        let (halves, _) = run(Split::Halves);
        assert_eq!(structure, required);
        assert_eq!(ddmin, required);
        assert!(
            halves.len() > 4,
            "halves cannot split spread fences: {halves:?}"
        );
        assert!(
            by_structure < by_ddmin,
            "structure {by_structure} checks, ddmin {by_ddmin}"
        );
    }

    #[test]
    fn functions_group_fences_and_keep_the_ungrouped_alone() {
        let groups = vec![ids([0, 1, 5]), ids([2, 3])];
        assert_eq!(
            functions(&ids([0, 2, 3, 5, 7]), &groups, &Ids::new()),
            vec![
                vec![FenceId(0), FenceId(5)],
                vec![FenceId(2), FenceId(3)],
                vec![FenceId(7)]
            ]
        );
    }
}

//! The whole analysis of a tune's raw counts: patch size, sequence and spread, the profile.

use crate::litmus::profile::{Profile, slug};
use crate::tune::choice::{SequenceChoice, SpreadChoice, best_sequence, best_spread};
use crate::tune::patch::{PatchAnalysis, critical_patch_size};
use crate::tune::raw::RawCounts;
use anyhow::Result;
use serde::Serialize;

// ---------------------------------------------------------------------------------------------
// The whole analysis

/// What [`analyse`] found in each phase present in the raw counts.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Analysis {
    pub gpu: String,
    pub patch: Option<PatchAnalysis>,
    /// Whether the patch counts vary with the stressed location or with the distance.
    pub structure: Option<crate::tune::structure::Structure>,
    pub sequence: Option<SequenceChoice>,
    pub spread: Option<SpreadChoice>,
    /// Inconsistencies between phases, choices made on no data.
    pub warnings: Vec<String>,
    pub profile: Profile,
}

/// Analyses every phase of `raw` (which must have passed [`RawCounts::validate`]), with the
/// file's epsilon unless `epsilon` overrides it, and builds the profile.
///
/// When no test's counts vary with the stressed location and the tests agree on the distance
/// where weak behaviours step up (`tune_structure`), the profile's patch size is that distance:
/// a patch size read from location noise would mean nothing. Otherwise it is the critical
/// patch size, else the fallback of
/// [`critical_patch_size`], else (no patch phase, or no epsilon-patch) the patch size the
/// sequence or spread phase was run with. Its sequence and spread are the choices of the
/// sequence and spread phases; a phase that is missing leaves its key out.
pub fn analyse(raw: &RawCounts, epsilon: Option<u64>) -> Result<Analysis> {
    let p = &raw.params;
    let epsilon = epsilon.unwrap_or(p.epsilon);
    let mut warnings = Vec::new();
    let patch = match &raw.patch {
        Some(ph) => Some(critical_patch_size(&ph.counts, epsilon)?),
        None => None,
    };
    let sequence = match &raw.sequence {
        Some(ph) => Some(best_sequence(&ph.entries())?),
        None => None,
    };
    let spread = match &raw.spread {
        Some(ph) => Some(best_spread(&ph.scores)?),
        None => None,
    };

    let structure = raw
        .patch
        .as_ref()
        .map(|ph| crate::tune::structure::Structure::of(&ph.counts));
    let from_distance = structure.as_ref().and_then(|s| s.patch_from_distance());
    let measured_p = from_distance.or(patch.as_ref().and_then(PatchAnalysis::chosen));
    let (patch_size, patch_note) = match (&patch, measured_p) {
        (Some(_), Some(size)) if from_distance.is_some() => (
            Some(size),
            format!(
                "from distance, not location: no test's weak behaviours vary with the stressed \
                 location, and they change in aligned blocks of {size} words of distance in \
                 every test that shows such blocks"
            ),
        ),
        (Some(pa), Some(size)) if pa.critical.is_some() => {
            (Some(size), format!("epsilon = {epsilon}; {}", pa.verdict()))
        }
        (Some(pa), Some(size)) => (
            Some(size),
            format!("FALLBACK, not a critical patch size: {}", pa.verdict()),
        ),
        (patch, _) => {
            let recorded = raw
                .sequence
                .as_ref()
                .map(|s| ("sequence", s.patch_size))
                .or(raw.spread.as_ref().map(|s| ("spread", s.patch_size)));
            let why = match patch {
                Some(pa) => pa.verdict(),
                None => "patch finding was not run".into(),
            };
            match recorded {
                Some((phase, size)) => (
                    Some(size),
                    format!("{why}; the patch size the {phase} phase was run with"),
                ),
                None => (None, why),
            }
        }
    };
    if let (Some(size), Some(ph)) = (measured_p, &raw.sequence)
        && ph.patch_size != size
    {
        warnings.push(format!(
            "the sequence phase was run with patch size {}, but patch finding gives {size}",
            ph.patch_size
        ));
    }
    if let (Some(size), Some(ph)) = (measured_p, &raw.spread)
        && ph.patch_size != size
    {
        warnings.push(format!(
            "the spread phase was run with patch size {}, but patch finding gives {size}",
            ph.patch_size
        ));
    }
    if let (Some(c), Some(ph)) = (&sequence, &raw.spread)
        && c.chosen != ph.sequence
    {
        warnings.push(format!(
            "the spread phase was run with sequence {}, but sequence finding chose {}",
            ph.sequence, c.chosen
        ));
    }
    for (what, all_zero) in [
        (
            "sequence",
            sequence
                .as_ref()
                .is_some_and(|c| c.all.iter().all(|(_, s)| s.iter().all(|(_, &v)| v == 0))),
        ),
        (
            "spread",
            spread
                .as_ref()
                .is_some_and(|c| c.all.iter().all(|(_, s)| s.iter().all(|(_, &v)| v == 0))),
        ),
    ] {
        if all_zero {
            warnings.push(format!(
                "no weak behaviour at all in the {what} phase: its choice is arbitrary"
            ));
        }
    }

    let sequence_note = match &sequence {
        Some(c) => format!(
            "the most effective of {} access sequences: {}",
            c.all.len(),
            c.decided_by.describe()
        ),
        None => "sequence finding was not run".into(),
    };
    let spread_note = match &spread {
        Some(c) => format!(
            "the most effective of spreads 1..{}: {}",
            c.all.len(),
            c.decided_by.describe()
        ),
        None => "spread finding was not run".into(),
    };
    let driver = if p.driver.is_empty() {
        String::new()
    } else {
        format!(", driver {}", p.driver)
    };
    let profile = Profile {
        name: slug(&p.gpu),
        gpu: p.gpu.clone(),
        description: format!("tuned by wmfix tune on {}{driver}, {}", p.gpu, p.date),
        patch_size,
        sequence: sequence.as_ref().map(|c| c.chosen.clone()),
        spread: spread.as_ref().map(|c| c.chosen),
        header: vec![
            format!(
                "wmfix chip profile for {}: stressing parameters for sys-str (Sorensen & \
                 Donaldson, PLDI 2016, Sec. 3).",
                p.gpu
            ),
            format!("Measured {}{driver}, with: {}", p.date, p.command),
            format!(
                "D = {}, L = {}, C = {}, epsilon = {epsilon}, N = {}, M = {}. Raw counts and \
                 plots: beside this file.",
                p.distances, p.locations, p.executions, p.max_sequence_length, p.max_spread
            ),
        ],
        notes: [patch_note, sequence_note, spread_note],
    };
    Ok(Analysis {
        gpu: p.gpu.clone(),
        patch,
        structure,
        sequence,
        spread,
        warnings,
        profile,
    })
}

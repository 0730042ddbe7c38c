//! Why each kept fence is kept, fence by fence (reduce.json, the summary, the head of
//! `fences.patch`): the race its absence leaves in a detection run, the check that erred
//! without it, store buffering, or the memory model; and where a reduction disagrees with a
//! race detection of the same build.

use crate::fences::id::{FenceId, Ids};
use crate::fences::record::FenceRecord;
use crate::out_dir::OutDir;
use crate::reduce::by_race::{RaceProof, RaceStart};
use crate::reduce::model::Completed;
use crate::reduce::record::KeptFence;
use crate::reduce::reduced::Reduced;

/// Each kept fence's evidence, in words.
pub fn prove(
    kept: &mut [KeptFence],
    result: &Reduced,
    race: Option<&RaceStart>,
    model: &Completed,
    records: &[FenceRecord],
) {
    for k in kept {
        let mut why = Vec::new();
        if let Some(p) = race.and_then(|r| r.proofs.get(&k.id)) {
            why.push(race_words(p, records));
        }
        if race.is_some_and(|r| r.store_load.contains(&k.id)) {
            why.push(
                "store buffering: a store before a load of another address other blocks write (no race shows it)"
                    .to_string(),
            );
        }
        if let Some(e) = result.erred_without.get(&k.id) {
            why.push(e.to_string());
        }
        for c in model.fences.iter().filter(|c| c.id == k.id) {
            why.push(format!("model partner of fence {}", c.partner));
        }
        k.proof = why;
    }
}

fn race_words(p: &RaceProof, records: &[FenceRecord]) -> String {
    let at = |site: Option<FenceId>| match site.and_then(|s| records.get(s.0)) {
        Some(r) => format!("{}:{}", r.file.display(), r.line),
        None => "an uninstrumented access".to_string(),
    };
    let strong = if p.strong { ", both strong" } else { "" };
    format!(
        "orders race {} -> {} ({}{strong}) seen in detection run {}",
        at(p.first),
        at(p.second),
        p.kind,
        p.run
    )
}

/// The block at the head of `fences.patch` (before the diff, where patch tools skip text).
pub fn patch_head(kept: &[KeptFence]) -> String {
    if kept.iter().all(|k| k.proof.is_empty()) {
        return String::new();
    }
    let mut s = String::from("wmfix reduce: why each fence is kept\n");
    for k in kept {
        let why = if k.proof.is_empty() {
            "its removal failed a check (no count kept)".to_string()
        } else {
            k.proof.join("; ")
        };
        s += &format!("  fence {} at {}: {why}\n", k.id, k.location);
    }
    s + "\n"
}

/// Where this reduction and a race detection of the same build disagree: the fences that
/// order races the detection saw and the reduction dropped (stress could not show them), and
/// a detection that did not check every event.
pub fn disagreement(out: &OutDir, result: &Reduced, race: Option<&RaceStart>) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(r) = race.filter(|r| !r.complete) {
        lines.push(format!(
            "the detection runs did not check every event ({} not recorded): races in the rest may need more fences",
            r.dropped
        ));
    }
    if let Some(named) = detected(out) {
        let dropped: Vec<String> = named
            .difference(&result.fences)
            .map(|f| f.to_string())
            .collect();
        if !dropped.is_empty() {
            lines.push(format!(
                "disagrees with `wmfix race` on this build ({}): it names fence(s) {} for the races it saw, which this reduction dropped (stress did not show them); `--oracle race` keeps them",
                out.race().report().display(),
                dropped.join(", ")
            ));
        }
    }
    lines
}

/// The fences `wmfix race` suggested for this very build (its build stamp equal to the
/// instrumented build's), with wmfix's fences off in its runs.
fn detected(out: &OutDir) -> Option<Ids> {
    let stamp = std::fs::read_to_string(out.build_stamp()).ok()?;
    let race_stamp = std::fs::read_to_string(out.race().stamp()).ok()?;
    if stamp != race_stamp {
        return None;
    }
    let text = std::fs::read_to_string(out.race().report()).ok()?;
    let doc: serde_json::Value = serde_json::from_str(&text).ok()?;
    if doc.get("fences")?.as_str()? != "none" {
        return None;
    }
    let ids = doc.get("suggested")?.as_array()?;
    ids.iter()
        .map(|v| v.as_u64().map(|n| FenceId(n as usize)))
        .collect()
}

/// The race oracle's line: what the detection runs decided.
pub fn race_line(r: &RaceStart) -> String {
    let ids: Vec<String> = r.fences.iter().map(|f| f.to_string()).collect();
    let mut s = format!(
        "race oracle: {} racing place pairs in {} detection run(s) ({} events, {:.1} s), {} of them ordered by no fence; start set {{{}}} after {} detections ({:.1} s)",
        r.races,
        r.traces,
        r.events,
        r.run_seconds,
        r.unordered_by_any_fence,
        ids.join(", "),
        r.detections,
        r.seconds
    );
    if !r.complete {
        s += &format!(
            "; NOT every event checked ({} not recorded or of a launch cut short; --race-trace-memory, --race-events): the races found stand, others may be missed",
            r.dropped
        );
    }
    if !r.store_load.is_empty() {
        let ids: Vec<String> = r.store_load.iter().map(|f| f.to_string()).collect();
        s += &format!(
            "; of them {{{}}} between a store and a later flag load (store buffering, which no race shows)",
            ids.join(", ")
        );
    }
    if !r.note.is_empty() {
        s += &format!("; {}", r.note);
    }
    s
}

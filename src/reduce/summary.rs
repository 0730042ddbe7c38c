//! The printed summary of a reduction: what `wmfix reduce` says on stdout when it ends.

use crate::reduce::record::{Dropped, Report};
use crate::reduce::why;

/// Seconds as h:mm:ss.
pub fn hms(seconds: f64) -> String {
    let s = seconds.max(0.0) as u64;
    format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// The printed summary. `with_race`: the race oracle's line too (on stdout; under `--json`
/// the summary goes to stderr, where that line was printed when it was found).
pub fn summary(r: &Report, with_race: bool) -> String {
    let res = &r.result;
    let mut s = match &r.race {
        Some(race) if with_race => why::race_line(race) + "\n",
        _ => String::new(),
    };
    s += &format!(
        "wmfix reduce: {} -> {} fences under {} ({} checks, {} answered from the cache, {} runs, {} of runs, {:.0} s wall)\n",
        r.initial_fences,
        res.fences.len(),
        r.env,
        res.checks,
        res.cached_checks,
        res.runs,
        hms(res.seconds),
        r.wall_seconds
    );
    let phases = describe_phases(&r.phases);
    if !phases.is_empty() {
        s += &format!("wall time: {phases}\n");
    }
    for k in &r.kept {
        let mut placed = String::new();
        if res.after_loop_only.contains(&k.id) {
            placed += "  (after the loop only)";
        }
        if res.added_back.contains(&k.id) {
            placed +=
                "  (found after a failed stability check: without it the program errs rarely)";
        }
        s += &format!(
            "  fence {:>3}  {}  in {}  after {} `{}`{placed}\n",
            k.id,
            k.location,
            k.function,
            k.kind.label(),
            k.access
        );
        for why in &k.proof {
            s += &format!("             why: {why}\n");
        }
    }
    for d in &r.disagreement {
        s += &format!("{}\n", crate::exit_code::warning(d));
    }
    if let Some(line) = dropped_line(
        &r.unreachable,
        "unreachable: {} fences dropped without runs, in functions no launched kernel reaches",
    ) {
        s += &line;
    }
    if let Some(line) = dropped_line(
        &r.off_global,
        "off global memory: {} fences dropped after the check with every fence, whose runs never executed them on global memory",
    ) {
        s += &line;
    }
    if let (Some((e, n)), Some(p)) = (res.unfenced, res.assumed_rate) {
        s += &format!(
            "without fences: {e} errors in {n} runs; a missing needed fence is assumed to err at >= {:.1}% of runs (95% lower bound)\n",
            100.0 * p
        );
    }
    if let Some(m) = res.check_miss_probability {
        s += &format!(
            "checks: {} runs each; one misses an error at that rate with probability {m:.2e}\n",
            res.iterations
        );
    }
    if let (Some(m), true) = (res.miss_probability, res.complete) {
        // The stability check is sized for --rare-rate where that is below the checks' rate.
        let rate = match (res.stability_rate, res.assumed_rate) {
            (Some(q), Some(p)) if q < p && r.steps > 1 => format!(
                "in as few as {:.2}% of steps ({:.2}% of {}-step runs, were steps independent; --rare-rate)",
                100.0 * crate::stats::rate_a_step(q, r.steps),
                100.0 * q,
                r.steps
            ),
            (Some(q), Some(p)) if q < p => {
                format!("in as few as {:.2}% of runs (--rare-rate)", 100.0 * q)
            }
            _ => "at that rate".to_string(),
        };
        s += &format!(
            "stability: {} clean runs; a missing fence erring {rate} would go unseen with probability {m:.2e}\n",
            res.stability_runs
        );
    }
    if !res.every_fence_checked && res.complete && res.stability_runs > 0 {
        s += "every fence: not run; the start set's clean stability runs stand for that check\n";
    }
    if let Some(why) = r.sanity.describe("reduction") {
        s += &format!("sanity: {why}\n");
    }
    if let Some(w) = r.warm_check.as_ref().filter(|w| !w.kept_warm) {
        s += &format!("warm: {}\n", w.line());
    }
    for f in &r.library_fences {
        s += &format!(
            "library: {f}: needed inside a library header, a finding for that library (not in the patch)\n"
        );
    }
    for f in &r.unplaced_fences {
        s += &format!(
            "not in the patch: {f}: inside a macro's expansion or a header's later inclusion (the instrumented build lacked it too)\n"
        );
    }
    for c in &r.model.fences {
        s += &format!(
            "model: fence {:>3} ({} on `{}`), required by the PTX memory model, not observed on this GPU: {}\n",
            c.id, c.side, c.variable, c.reasoning
        );
    }
    for (id, why) in &r.model.unrecognised {
        s += &format!("model: fence {id}: pattern not recognised: {why}\n");
    }
    if !res.note.is_empty() {
        s += &format!("note: {}\n", res.note);
    }
    s += &format!(
        "patch: {} (apply with `wmfix apply` or `patch -p1` in {})\n",
        r.patch.display(),
        r.app.display()
    );
    s
}

/// Dropped fences by function, after `what` with `{}` their number: `unreachable: 3 fences ...:
/// f (2, 3), k (7)`.
fn dropped_line(dropped: &[Dropped], what: &str) -> Option<String> {
    if dropped.is_empty() {
        return None;
    }
    let mut by: Vec<(&str, Vec<String>)> = Vec::new();
    for d in dropped {
        match by.iter_mut().find(|(f, _)| *f == d.function) {
            Some((_, ids)) => ids.push(d.id.to_string()),
            None => by.push((&d.function, vec![d.id.to_string()])),
        }
    }
    let each: Vec<String> = by
        .iter()
        .map(|(f, ids)| format!("{f} ({})", ids.join(", ")))
        .collect();
    Some(format!(
        "{}: {}\n",
        what.replace("{}", &dropped.len().to_string()),
        each.join(", ")
    ))
}

/// "build 12 s, warm check 25 s": the phases of at least half a second.
fn describe_phases(phases: &[(String, f64)]) -> String {
    phases
        .iter()
        .filter(|(_, s)| *s >= 0.5)
        .map(|(p, s)| format!("{p} {s:.0} s"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_under_half_a_second_are_left_out_of_the_line() {
        let phases = vec![
            ("build".to_string(), 12.3),
            ("probe".to_string(), 0.2),
            ("runs".to_string(), 25.6),
        ];
        assert_eq!(describe_phases(&phases), "build 12 s, runs 26 s");
        assert_eq!(describe_phases(&phases[1..2]), "");
    }
}

//! The kept fences: each with its place (`file:line`, function, the access it follows), the
//! source lines around it (`source`), how the reduction found it, and the model's completion
//! (`reduce::model`): the fence the PTX memory model requires on the other side of the same
//! synchronisation, or why no pattern was recognised.

use crate::fences::record::AccessKind;
use crate::reduce::record::{KeptFence, Report as Reduction};
use crate::report::html::{esc, prose};
use crate::report::source::{Excerpt, Sources, file_and_line};
use std::fmt::Write;

/// The section, or nothing when the reduction kept no fence and the model adds none.
pub fn section(r: &Reduction, sources: &Sources) -> String {
    let mut s = String::from("<section id=\"fences\">\n<h2>Kept fences</h2>\n");
    if r.kept.is_empty() {
        s += "<p>The reduction kept no fence.</p>\n";
    } else {
        s += "<p>Source lines as the files are now: <span class=\"swatch\" style=\"background:#fff3c4\"></span>the access the fence follows, \
              <span class=\"swatch\" style=\"background:#e3f1ff\"></span>another line where <code>fences.patch</code> puts it.</p>\n";
    }
    for k in &r.kept {
        s += &card(r, k, sources);
    }
    let orphans = r
        .model
        .fences
        .iter()
        .filter(|c| !r.kept.iter().any(|k| k.id == c.partner));
    for c in orphans {
        let _ = writeln!(
            s,
            "<p class=\"model\">Model completion: fence {} ({} on <code>{}</code>): {}</p>",
            c.id,
            esc(&c.side),
            esc(&c.variable),
            prose(&c.reasoning)
        );
    }
    for f in &r.library_fences {
        let _ = writeln!(
            s,
            "<p class=\"note\">Needed inside a library header, not in the patch: {}</p>",
            esc(f)
        );
    }
    for f in &r.unplaced_fences {
        let _ = writeln!(
            s,
            "<p class=\"note\">Not in the patch (inside a macro's expansion or a header's later inclusion): {}</p>",
            esc(f)
        );
    }
    s + "</section>\n"
}

/// The kept fence's kind. Records made before issue 47 call a cache-operator or CUB load/store
/// call (`__stcg(p, v)`) an atomic: a site of theirs whose text calls no `atomicX` is one.
fn kind(k: &KeptFence) -> AccessKind {
    let calls_atomic = k.access.match_indices("atomic").any(|(at, _)| {
        let before = k.access[..at].chars().next_back();
        let after = k.access[at + "atomic".len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
            && after.is_some_and(|c| c.is_ascii_uppercase())
    });
    match k.kind {
        AccessKind::Atomic if !calls_atomic => AccessKind::Call,
        kind => kind,
    }
}

fn card(r: &Reduction, k: &KeptFence, sources: &Sources) -> String {
    let mut s = format!(
        "<div class=\"fence-card\" id=\"fence-{id}\">\n<h3>fence {id} at <code>{}</code> in <code>{}</code>, after {} <code>{}</code></h3>\n",
        esc(&k.location),
        esc(&k.function),
        kind(k).label(),
        esc(&k.access),
        id = k.id
    );
    if r.result.added_back.contains(&k.id) {
        s += "<p>Found after a failed stability check (add-back): without it the program errs rarely.</p>\n";
    }
    if r.result.after_loop_only.contains(&k.id) {
        s += "<p>Needed after the loop only (its placement at the top of the loop body is off).</p>\n";
    }
    for why in &k.proof {
        let _ = writeln!(s, "<p>Why: {}</p>", esc(why));
    }
    s += &lines(r, k, sources);
    s += &model(r, k);
    s + "</div>\n"
}

fn lines(r: &Reduction, k: &KeptFence, sources: &Sources) -> String {
    let Some((file, line)) = file_and_line(&k.location) else {
        return format!(
            "<p class=\"note\">Location {} is not file:line:column.</p>\n",
            esc(&k.location)
        );
    };
    // Preprocessed mode: a library header's fence is a finding for that library, and its
    // header is not among the application's files.
    let in_library = format!("{file}:{line} (fence {})", k.id);
    if r.library_fences.contains(&in_library) {
        return "<p>In a library header, outside the application's folder: a finding for that library, not in <code>fences.patch</code>.</p>\n".to_string();
    }
    let placed: Vec<usize> = k.placements.iter().map(|p| p.line).collect();
    match sources.excerpt(file, line, &k.access, &placed) {
        Ok(e) => render(&e),
        Err(why) => format!("<p class=\"note\">No source lines: {}</p>\n", prose(&why)),
    }
}

fn render(e: &Excerpt) -> String {
    let width = e.lines.last().map_or(1, |(n, _)| n.to_string().len());
    let mut s = String::new();
    if let Some(n) = &e.note {
        let _ = writeln!(s, "<p class=\"note\">{}</p>", esc(n));
    }
    s += "<pre class=\"source\">";
    for (n, text) in &e.lines {
        let class = if *n == e.at {
            " class=\"fence\""
        } else if e.placed.contains(n) {
            " class=\"placed\""
        } else {
            ""
        };
        let _ = write!(s, "<span{class}>{n:>width$}  {}</span>", esc(text));
    }
    s + "</pre>\n"
}

fn model(r: &Reduction, k: &KeptFence) -> String {
    let mut s = String::new();
    for c in r.model.fences.iter().filter(|c| c.partner == k.id) {
        let _ = writeln!(
            s,
            "<p class=\"model\"><strong>Model completion:</strong> fence {} ({} on <code>{}</code>), required by the PTX memory model, not observed on this GPU: {}</p>",
            c.id,
            esc(&c.side),
            esc(&c.variable),
            prose(&c.reasoning)
        );
    }
    for (_, why) in r.model.unrecognised.iter().filter(|(id, _)| *id == k.id) {
        let _ = writeln!(
            s,
            "<p class=\"model\"><strong>Model completion:</strong> pattern not recognised: {}</p>",
            prose(why)
        );
    }
    s
}

//! The reduction's progress: what `reduce.json` says of it (fences before and after, checks,
//! runs, seconds) and, from `journal.jsonl`, every request: the fences it ran with, passed
//! (no run erred) or failed, over the requests and over the seconds they took. The line is
//! the fences of the last set that passed, the set the reduction held at that point.

use crate::chart::{self, drawing_error};
use crate::reduce::journal::Entry;
use crate::reduce::record::Report as Reduction;
use crate::report::doc::Doc;
use crate::report::html::{count, esc, figure, percent, provenance};
use crate::report::journal::Journal;
use anyhow::Result;
use plotters::prelude::*;
use std::fmt::Write;

/// One request of the journal as the charts show it.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// 1, 2, ...: its place in the journal.
    pub number: usize,
    /// Fences it ran with.
    pub fences: usize,
    pub runs: usize,
    pub errors: usize,
    /// Cut short by a budget or ctrl-c before it answered.
    pub cut: bool,
    /// Seconds of requests up to and including this one.
    pub seconds: f64,
    /// Fences of the last set that passed, this one included (None before any passed).
    pub held: Option<usize>,
}

impl Step {
    pub fn passed(&self) -> bool {
        self.errors == 0 && !self.cut
    }
}

/// The steps of a journal; `all` is the number of fences `all` stands for.
pub fn steps(entries: &[Entry], all: usize) -> Vec<Step> {
    let (mut seconds, mut held) = (0.0, None);
    let mut out = Vec::with_capacity(entries.len());
    for (i, e) in entries.iter().enumerate() {
        seconds += e.tally.seconds;
        let fences = e.fences.ids(all).len();
        let cut = !e.request.finished_by(&e.tally) && e.tally.errors == 0;
        let mut s = Step {
            number: i + 1,
            fences,
            runs: e.tally.runs,
            errors: e.tally.errors,
            cut,
            seconds,
            held,
        };
        if s.passed() {
            held = Some(fences);
            s.held = held;
        }
        out.push(s);
    }
    out
}

/// The number of fences `all` stands for: the reduction's, else the journal header's.
fn all_fences(reduction: Option<&Doc<Reduction>>, journal: &Journal) -> usize {
    reduction
        .map(|r| r.value.initial_fences)
        .unwrap_or_else(|| {
            let n = journal
                .header
                .get("fences")
                .and_then(serde_json::Value::as_u64);
            n.unwrap_or(0) as usize
        })
}

/// The section: the reduction's summary, then the charts and the table of requests.
pub fn section(
    reduction: Option<&Doc<Reduction>>,
    journal: Option<&Doc<Journal>>,
) -> Result<String> {
    let mut s = String::from("<section id=\"reduce\">\n<h2>Reduction</h2>\n");
    if let Some(r) = reduction {
        s += &summary(&r.value);
        s += &provenance(r);
    }
    match journal {
        Some(j) => {
            let all = all_fences(reduction, &j.value);
            s += &journal_part(&steps(&j.value.entries, all), &j.value)?;
            s += &provenance(j);
        }
        None => {
            s += "<p>No <code>journal.jsonl</code> beside the record: the progress charts need it.</p>\n"
        }
    }
    Ok(s + "</section>\n")
}

fn summary(r: &Reduction) -> String {
    let res = &r.result;
    let state = if res.undecided {
        "undecided: the budget ended before anything was decided, every fence kept"
    } else if res.complete {
        "complete: the stability check passed"
    } else if r.interrupted {
        "interrupted: the best set so far, not checked for stability"
    } else {
        "incomplete: the budget ended before the stability check"
    };
    let mut s = format!(
        "<p class=\"headline\"><strong>{} &rarr; {} fences</strong> under <code>{}</code> ({state}).</p>\n<table>\n",
        r.initial_fences,
        res.fences.len(),
        esc(&r.env.to_string())
    );
    let rows = [
        ("checks", count(res.checks)),
        ("checks answered from the cache", count(res.cached_checks)),
        ("runs", count(res.runs)),
        ("seconds of runs", format!("{:.1}", res.seconds)),
        ("wall seconds", format!("{:.1}", r.wall_seconds)),
    ];
    for (k, v) in rows {
        let _ = writeln!(s, "<tr><th>{k}</th><td class=\"num\">{v}</td></tr>");
    }
    s += "</table>\n";
    if let (Some((e, n)), Some(p)) = (res.unfenced, res.assumed_rate) {
        let _ = writeln!(
            s,
            "<p>Without fences: {e} errors in {n} runs; a missing needed fence is assumed to err in at least {} of runs (95% lower bound).</p>",
            percent(p)
        );
    }
    if let (Some(m), true) = (res.miss_probability, res.complete) {
        let _ = writeln!(
            s,
            "<p>Stability: {} clean runs; a missing fence would have gone unseen with probability {m:.2e}.</p>",
            count(res.stability_runs)
        );
    }
    let dropped = r.unreachable.len() + r.off_global.len();
    if dropped > 0 {
        let _ = writeln!(
            s,
            "<p>{} fences dropped without a check: {} in functions no launched kernel reaches, {} never run on global memory.</p>",
            dropped,
            r.unreachable.len(),
            r.off_global.len()
        );
    }
    if !res.note.is_empty() {
        let _ = writeln!(s, "<p class=\"note\">{}</p>", esc(&res.note));
    }
    s
}

fn journal_part(steps: &[Step], j: &Journal) -> Result<String> {
    let passed = steps.iter().filter(|s| s.passed()).count();
    let cut = steps.iter().filter(|s| s.cut).count();
    let failed = steps.len() - passed - cut;
    let mut s = format!(
        "<p>The journal: <strong>{} requests, {passed} passed, {failed} failed</strong>{}; {} runs.</p>\n",
        steps.len(),
        if cut > 0 {
            format!(", {cut} cut short")
        } else {
            String::new()
        },
        count(steps.iter().map(|s| s.runs).sum())
    );
    if j.torn_last_line {
        s += "<p class=\"note\">Its last line was cut short (a reduction killed while writing it) and is left out.</p>\n";
    }
    if steps.is_empty() {
        return Ok(s);
    }
    s += LEGEND;
    s += "<div class=\"charts\">\n";
    s += &figure(
        &chart(steps, Axis::Requests)?,
        "Fences of each request, by request",
    );
    s += &figure(
        &chart(steps, Axis::Seconds)?,
        "Fences of each request, by the seconds of requests so far",
    );
    s += "</div>\n";
    s += &table(steps);
    Ok(s)
}

const LEGEND: &str = "<p class=\"legend\"><span><i class=\"swatch\" style=\"background:#2CA02C\"></i>passed</span>\
<span><i class=\"swatch\" style=\"background:#D62728\"></i>failed</span>\
<span><i class=\"swatch\" style=\"background:#9E9E9E\"></i>cut short</span>\
<span><i class=\"swatch\" style=\"background:#1F77B4;height:0.2em\"></i>fences of the last set that passed</span></p>\n";

fn table(steps: &[Step]) -> String {
    let mut s = String::from(
        "<details><summary>Every request</summary>\n<table>\n<tr><th class=\"num\">request</th>\
         <th class=\"num\">fences</th><th class=\"num\">runs</th><th class=\"num\">errors</th>\
         <th>answer</th><th class=\"num\">seconds so far</th></tr>\n",
    );
    for st in steps {
        let answer = match (st.passed(), st.cut) {
            (true, _) => "passed",
            (false, true) => "cut short",
            _ => "failed",
        };
        let _ = writeln!(
            s,
            "<tr><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td>{answer}</td><td class=\"num\">{:.1}</td></tr>",
            st.number, st.fences, st.runs, st.errors, st.seconds
        );
    }
    s + "</table>\n</details>\n"
}

#[derive(Clone, Copy, PartialEq)]
enum Axis {
    Requests,
    Seconds,
}

/// A step's colour: passed green, failed red, cut short grey.
fn colour(s: &Step) -> RGBColor {
    match (s.passed(), s.cut) {
        (true, _) => chart::GREEN,
        (false, true) => chart::GREY,
        _ => chart::RED,
    }
}

fn chart(steps: &[Step], axis: Axis) -> Result<String> {
    let x = |s: &Step| match axis {
        Axis::Requests => s.number as f64,
        Axis::Seconds => s.seconds,
    };
    let x_max = steps.iter().map(x).fold(1.0, f64::max);
    let y_max = steps.iter().map(|s| s.fences).max().unwrap_or(1).max(1) as f64;
    let x_desc = match axis {
        Axis::Requests => "request",
        Axis::Seconds => "seconds of requests",
    };
    chart::svg((460, 300), |root| {
        let mut c = ChartBuilder::on(root)
            .margin(10)
            .x_label_area_size(38)
            .y_label_area_size(48)
            .build_cartesian_2d(0.0..x_max * 1.03, 0.0..y_max * 1.05)
            .map_err(drawing_error)?;
        c.configure_mesh()
            .x_desc(x_desc)
            .y_desc("fences")
            .y_label_formatter(&|y| tick(*y, true))
            .x_label_formatter(&|x| tick(*x, axis == Axis::Requests || x_max >= 20.0))
            .label_style(chart::text(12))
            .axis_desc_style(chart::text(13))
            .light_line_style(WHITE)
            .draw()
            .map_err(drawing_error)?;
        c.draw_series(LineSeries::new(
            held_line(steps, x),
            chart::BLUE.stroke_width(2),
        ))
        .map_err(drawing_error)?;
        let points = steps
            .iter()
            .map(|s| Circle::new((x(s), s.fences as f64), 3, colour(s).filled()));
        c.draw_series(points).map_err(drawing_error)?;
        Ok(())
    })
}

/// A tick's label: whole numbers only where the axis counts (or spans enough), else one
/// decimal.
fn tick(x: f64, whole: bool) -> String {
    match whole {
        true if (x - x.round()).abs() < 1e-9 => format!("{x:.0}"),
        true => String::new(),
        false => format!("{x:.1}"),
    }
}

/// The fences held, as a staircase: flat until a request passes, then down (or up) to it.
fn held_line(steps: &[Step], x: impl Fn(&Step) -> f64) -> Vec<(f64, f64)> {
    let mut line: Vec<(f64, f64)> = Vec::new();
    for s in steps {
        let Some(h) = s.held.map(|h| h as f64) else {
            continue;
        };
        match line.last() {
            None => line.push((x(s), h)),
            Some(&(_, last)) if last != h => line.extend([(x(s), last), (x(s), h)]),
            Some(_) => {}
        }
    }
    if let (Some(s), Some(&(at, h))) = (steps.last(), line.last())
        && x(s) > at
    {
        line.push((x(s), h));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(fences: &str, runs: usize, errors: usize, max_runs: usize, seconds: f64) -> Entry {
        serde_json::from_value(serde_json::json!({
            "nonce": 1, "fences": fences,
            "request": {"max_runs": max_runs, "max_seconds": null, "stop_after_errors": 1},
            "tally": {"runs": runs, "errors": errors, "timeouts": 0, "seconds": seconds}
        }))
        .unwrap()
    }

    #[test]
    fn steps_count_fences_add_up_seconds_and_hold_the_last_passed_set() {
        let entries = [
            entry("all", 4, 0, 4, 2.0),
            entry("none", 20, 20, 100, 6.0),
            entry("0-3", 1, 1, 3, 1.0),
            entry("4-9", 3, 0, 3, 1.5),
            entry("4", 2, 0, 46, 0.5),
        ];
        let s = steps(&entries, 10);
        let fences: Vec<usize> = s.iter().map(|s| s.fences).collect();
        assert_eq!(fences, [10, 0, 4, 6, 1]);
        let held: Vec<Option<usize>> = s.iter().map(|s| s.held).collect();
        assert_eq!(held, [Some(10), Some(10), Some(10), Some(6), Some(6)]);
        assert_eq!(s[4].seconds, 11.0);
        // The last request ran 2 of its 46 runs, none erred: cut short, not passed.
        assert!(s[4].cut && !s[4].passed());
        assert!(!s[1].passed() && !s[1].cut, "the run without fences failed");
        assert_eq!(
            held_line(&s, |s| s.number as f64),
            [(1.0, 10.0), (4.0, 10.0), (4.0, 6.0), (5.0, 6.0)]
        );
    }

    #[test]
    fn the_journal_part_counts_passed_and_failed_requests() {
        let entries = [entry("all", 4, 0, 4, 2.0), entry("none", 20, 20, 100, 6.0)];
        let j = Journal::default();
        let html = journal_part(&steps(&entries, 3), &j).unwrap();
        assert!(html.contains("2 requests, 1 passed, 1 failed"), "{html}");
        assert!(html.contains("<svg") && html.contains("seconds of requests"));
    }
}

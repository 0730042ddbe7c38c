//! The test table: per environment of each `summary.json`, runs, errors and the error rate with
//! its 95% Wilson interval (`stats::wilson95`), drawn as an interval bar on a 0-100% track
//! with the 5% effectiveness threshold (`stats::effective`) marked.
//!
//! `Summary` is the part of `wmfix test`'s `summary.json` the page shows (`cmd::test::Summary`
//! writes it; `cmd::report`'s tests check that this reads what that writes).

use crate::chart::{self, drawing_error};
use crate::fences::set::FenceSet;
use crate::report::doc::Doc;
use crate::report::html::{count, esc, percent, source_of};
use crate::run::counts::Counts;
use crate::run::profile::ProfileUsed;
use anyhow::Result;
use plotters::prelude::*;
use serde::Deserialize;
use std::fmt::Write;
use std::path::PathBuf;

#[derive(Clone, Debug, Deserialize)]
pub struct Summary {
    pub app: PathBuf,
    pub fences: FenceSet,
    pub rows: Vec<Row>,
    #[serde(default)]
    pub interrupted: bool,
    #[serde(default)]
    pub profile: Option<ProfileUsed>,
    /// Steps a run (absent: 1).
    #[serde(default)]
    pub steps: Option<u32>,
}

/// One environment: its counts and the seconds its runs took.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct Row {
    #[serde(flatten)]
    pub counts: Counts,
    pub seconds: f64,
}

impl Row {
    /// The error rate and its 95% interval; None without runs.
    pub fn rate(&self) -> Option<(f64, (f64, f64))> {
        let c = &self.counts;
        (c.runs > 0).then(|| {
            let rate = c.errors() as f64 / c.runs as f64;
            (rate, crate::stats::wilson95(c.errors(), c.runs))
        })
    }
}

/// The bar's size in pixels.
const BAR: (u32, u32) = (160, 18);

/// The interval bar of a rate: a grey 0-100% track, the interval in blue, the rate as a dark
/// tick, the 5% threshold as a red line.
pub fn interval_bar(rate: f64, (lo, hi): (f64, f64)) -> Result<String> {
    let (w, h) = (BAR.0 as i32, BAR.1 as i32);
    let x = |p: f64| (p.clamp(0.0, 1.0) * f64::from(w - 1)).round() as i32;
    chart::svg(BAR, |a| {
        let track = Rectangle::new(
            [(0, h / 2 - 2), (w - 1, h / 2 + 2)],
            chart::LIGHT_GREY.filled(),
        );
        // An interval narrower than a pixel still shows.
        let (l, r) = (x(lo), x(hi).max(x(lo) + 1));
        let interval = Rectangle::new([(l, 3), (r, h - 3)], chart::BLUE.mix(0.55).filled());
        let tick = Rectangle::new([(x(rate) - 1, 1), (x(rate) + 1, h - 1)], BLACK.filled());
        let five = PathElement::new(vec![(x(0.05), 0), (x(0.05), h)], chart::RED);
        for e in [track, interval, tick] {
            a.draw(&e).map_err(drawing_error)?;
        }
        a.draw(&five).map_err(drawing_error)?;
        Ok(())
    })
}

/// The section: one table, a row per environment of each summary.
pub fn section(summaries: &[Doc<Summary>]) -> Result<String> {
    let mut s = String::from("<section id=\"test\">\n<h2>Tests under stress</h2>\n");
    s += "<p>Each run either passes its check or errs (fails it, times out or crashes). \
          The bar spans 0-100% of runs: the blue band is the error rate's 95% Wilson interval, \
          the black tick the rate, the red line 5% (an environment above it exposes the bug).</p>\n";
    s += "<table>\n<tr><th>fences</th><th>environment</th><th class=\"num\">runs</th>\
          <th class=\"num\">errors</th><th class=\"num\">error rate</th>\
          <th class=\"num\">95% interval</th><th>0-100%</th><th class=\"num\">seconds</th></tr>\n";
    for doc in summaries {
        for row in &doc.value.rows {
            s += &table_row(&doc.value, row)?;
        }
    }
    s += "</table>\n<ul class=\"provenance\">\n";
    for doc in summaries {
        let _ = writeln!(s, "<li>{}{}</li>", source_of(doc), notes(&doc.value));
    }
    Ok(s + "</ul>\n</section>\n")
}

fn table_row(summary: &Summary, row: &Row) -> Result<String> {
    let (rate, interval, bar) = match row.rate() {
        Some((r, (lo, hi))) => (
            percent(r),
            format!("{} - {}", percent(lo), percent(hi)),
            interval_bar(r, (lo, hi))?,
        ),
        None => ("-".into(), "-".into(), String::new()),
    };
    let errors = format!(
        "<span title=\"failed {}, timed out {}, crashed {}\">{}</span>",
        row.counts.fail,
        row.counts.timeout,
        row.counts.crash,
        count(row.counts.errors())
    );
    Ok(format!(
        "<tr><td><code>{}</code></td><td><code>{}</code></td><td class=\"num\">{}</td>\
         <td class=\"num\">{errors}</td><td class=\"num\">{rate}</td><td class=\"num\">{interval}</td>\
         <td>{bar}</td><td class=\"num\">{:.1}</td></tr>\n",
        esc(&summary.fences.to_string()),
        esc(&row.counts.env),
        count(row.counts.runs),
        row.seconds
    ))
}

fn notes(summary: &Summary) -> String {
    let mut s = String::new();
    if let Some(p) = &summary.profile {
        let _ = write!(s, "; chip profile {}", esc(&p.name));
    }
    if summary.interrupted {
        s += "; <span class=\"note\">interrupted: the counts are of the runs made</span>";
    }
    if let Some(steps) = summary.steps.filter(|&n| n > 1) {
        let per_step: Vec<String> = summary
            .rows
            .iter()
            .filter_map(|r| {
                let (rate, _) = r.rate()?;
                let step = crate::stats::rate_a_step(rate, steps);
                Some(format!(
                    "<code>{}</code> {}",
                    esc(&r.counts.env),
                    percent(step)
                ))
            })
            .collect();
        let _ = write!(
            s,
            "; runs of {steps} steps: errors a step, were steps independent, {}",
            per_step.join(", ")
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rects(svg: &str) -> Vec<(i32, i32)> {
        svg.lines()
            .filter(|l| l.starts_with("<rect"))
            .map(|l| {
                let num = |k: &str| -> i32 {
                    let s = &l[l.find(&format!(" {k}=\"")).unwrap() + k.len() + 3..];
                    s[..s.find('"').unwrap()].parse().unwrap()
                };
                (num("x"), num("width"))
            })
            .collect()
    }

    #[test]
    fn the_interval_bar_spans_the_wilson_interval() {
        // 20 errors in 100 runs: 13.3% - 28.9%.
        let (lo, hi) = crate::stats::wilson95(20, 100);
        let svg = interval_bar(0.2, (lo, hi)).unwrap();
        // Background, track, interval, tick.
        let r = rects(&svg);
        assert_eq!(r.len(), 4, "{svg}");
        let (x, w) = r[2];
        assert_eq!(x, (lo * 159.0).round() as i32);
        assert_eq!(x + w, (hi * 159.0).round() as i32);
        assert!(svg.contains(&format!("stroke=\"{}\"", chart::hex(chart::RED))));
    }

    #[test]
    fn a_row_shows_its_counts_rate_and_interval() {
        let summary: Summary = serde_json::from_str(
            r#"{"app": "/a", "fences": "none", "rows": [{"env": "sys-str+", "runs": 1000, "pass": 1, "fail": 990, "timeout": 9, "crash": 0, "seconds": 12.25}]}"#,
        )
        .unwrap();
        let row = table_row(&summary, &summary.rows[0]).unwrap();
        assert!(row.contains("<code>sys-str+</code>"), "{row}");
        assert!(
            row.contains(">1,000<") && row.contains(">999</span>"),
            "{row}"
        );
        assert!(
            row.contains(">99.9%<") && row.contains("99.4% - 100.0%"),
            "{row}"
        );
        assert!(row.contains("failed 990, timed out 9, crashed 0"));
        assert!(row.contains(">12.2<") || row.contains(">12.3<"), "{row}");
    }
}

//! What the fences cost (`cost.json`): a panel per measure (the program's own timing, wall time,
//! GPU energy), a bar per variant (no fences, the reduced ones, every fence) at its mean over
//! the first variant's, with the 95% interval of that ratio; and the table of the means.

use crate::chart::{self, drawing_error};
use crate::cost::measure::{Report as Cost, Row};
use crate::report::doc::Doc;
use crate::report::html::{count, esc, figure, provenance};
use anyhow::Result;
use plotters::prelude::*;
use std::fmt::Write;

/// A measure: its name, unit and where a row keeps its ratio.
struct Measure {
    name: &'static str,
    ratio: fn(&Row) -> Option<(f64, f64)>,
}

const MEASURES: [Measure; 3] = [
    Measure {
        name: "program's own time",
        ratio: |r| r.reported_ratio,
    },
    Measure {
        name: "wall time",
        ratio: |r| r.wall_ratio,
    },
    Measure {
        name: "GPU energy",
        ratio: |r| r.energy_ratio,
    },
];

pub fn section(doc: &Doc<Cost>) -> Result<String> {
    let c = &doc.value;
    let mut s = String::from("<section id=\"cost\">\n<h2>What the fences cost</h2>\n");
    let _ = writeln!(
        s,
        "<p>{} of {} rounds{}; each round ran every variant once, in a random order.</p>",
        c.rounds_done,
        c.rounds_asked,
        c.gpu
            .as_deref()
            .map(|g| format!(" on {}", esc(g)))
            .unwrap_or_default()
    );
    let measures: Vec<&Measure> = MEASURES
        .iter()
        .filter(|m| c.rows.iter().any(|r| (m.ratio)(r).is_some()))
        .collect();
    if !measures.is_empty() && !c.rows.is_empty() {
        let first = esc(&c.rows[0].variant);
        s += &figure(
            &chart(&c.rows, &measures)?,
            &format!(
                "Each variant's mean over the variant <code>{first}</code>'s, with its 95% interval; the dashed line is 1."
            ),
        );
    }
    s += &table(c);
    if let Some(n) = &c.energy_note {
        let _ = writeln!(s, "<p class=\"note\">Energy: {}</p>", esc(n));
    }
    s += &provenance(doc);
    Ok(s + "</section>\n")
}

fn table(c: &Cost) -> String {
    let mut s = String::from(
        "<table>\n<tr><th>variant</th><th class=\"num\">fences</th><th class=\"num\">runs</th>\
         <th class=\"num\">errors</th><th class=\"num\">program's own ms</th>\
         <th class=\"num\">wall s</th><th class=\"num\">energy J</th></tr>\n",
    );
    let mean = |m: &Option<crate::stats::Spread>, digits: usize| {
        m.map_or("-".to_string(), |m| {
            format!("{:.digits$} &plusmn; {:.digits$}", m.mean, m.ci95)
        })
    };
    for r in &c.rows {
        let _ = writeln!(
            s,
            "<tr><td><code>{}</code></td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            esc(&r.variant),
            count(r.fences),
            count(r.runs),
            count(r.errors),
            mean(&r.reported_ms, 3),
            mean(&r.wall_s, 4),
            mean(&r.energy_j, 2),
        );
    }
    s + "</table>\n"
}

fn chart(rows: &[Row], measures: &[&Measure]) -> Result<String> {
    let size = (40 + 300 * measures.len() as u32, 300);
    chart::svg(size, |root| {
        let panels = root.split_evenly((1, measures.len()));
        for (m, area) in measures.iter().zip(&panels) {
            panel(rows, m, area)?;
        }
        Ok(())
    })
}

fn panel(rows: &[Row], m: &Measure, area: &chart::Area) -> Result<()> {
    let top = rows
        .iter()
        .filter_map(|r| (m.ratio)(r).map(|(v, h)| v + h))
        .fold(1.0, f64::max)
        * 1.1;
    let names: Vec<String> = rows.iter().map(|r| r.variant.clone()).collect();
    let over = format!("x {}", names.first().map_or("", String::as_str));
    // `0..n - 1` segmented is the n segments 0, 1, ..., n - 1.
    let last = rows.len().saturating_sub(1);
    let mut c = ChartBuilder::on(area)
        .caption(m.name, chart::text(15))
        .margin(8)
        .x_label_area_size(24)
        .y_label_area_size(44)
        .build_cartesian_2d((0..last).into_segmented(), 0.0..top)
        .map_err(drawing_error)?;
    c.configure_mesh()
        .disable_x_mesh()
        .light_line_style(WHITE)
        .y_desc(over)
        .x_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => names.get(*i).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .label_style(chart::text(12))
        .axis_desc_style(chart::text(12))
        .draw()
        .map_err(drawing_error)?;
    for (i, r) in rows.iter().enumerate() {
        let Some((v, h)) = (m.ratio)(r) else { continue };
        let colour = chart::SERIES[i % chart::SERIES.len()];
        let mut bar = Rectangle::new(
            [
                (SegmentValue::Exact(i), 0.0),
                (SegmentValue::Exact(i + 1), v),
            ],
            colour.mix(0.8).filled(),
        );
        bar.set_margin(0, 0, 14, 14);
        c.draw_series([bar]).map_err(drawing_error)?;
        let whisker = [
            (SegmentValue::CenterOf(i), (v - h).max(0.0)),
            (SegmentValue::CenterOf(i), v + h),
        ];
        c.draw_series([PathElement::new(whisker, BLACK.stroke_width(2))])
            .map_err(drawing_error)?;
    }
    let one = [(SegmentValue::Exact(0), 1.0), (SegmentValue::Last, 1.0)];
    c.draw_series(DashedLineSeries::new(one, 5, 4, chart::DARK_GREY.into()))
        .map_err(drawing_error)?;
    Ok(())
}

//! The plots of `wmfix tune`, drawn with plotters (`chart`): patch finding in the style of the
//! paper's Fig. 3 (per test and distance, a bar per stressed location) and spread finding in
//! the style of Fig. 4 (score per spread, one line per test).

use crate::chart::{self, Area, drawing_error};
use crate::litmus::vocabulary::PerTest;
use anyhow::Result;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// A bar above epsilon: a hot location.
pub const HOT: RGBColor = chart::BLUE;
/// A bar at or below epsilon: noise.
pub const NOISE: RGBColor = chart::GREY;
/// The dashed line at epsilon.
pub const EPSILON: RGBColor = chart::RED;

/// Fig. 3: a panel per test (rows) and distance (columns); in each, a bar per stressed
/// location l whose height is the weak behaviours of `<T_d, l>`, scaled to the panel's
/// largest count (written in its title). Bars above `epsilon` are blue (`HOT`), the rest grey
/// (`NOISE`); a dashed red line marks epsilon, thin lines mark multiples of `patch`. Distances
/// not in the table are skipped.
pub fn patch_plot(
    counts: &PerTest<Vec<Vec<u64>>>,
    distances: &[usize],
    epsilon: u64,
    patch: Option<usize>,
    title: &str,
) -> Result<String> {
    let distances: Vec<usize> = distances
        .iter()
        .copied()
        .filter(|&d| d < counts.mp.len())
        .collect();
    let cols = distances.len().max(1);
    let size = (40 + 550 * cols as u32, 470);
    chart::svg(size, |root| {
        let body = root.titled(title, chart::text(18)).map_err(drawing_error)?;
        let panels = body.split_evenly((3, cols));
        for (row, (t, table)) in counts.iter().enumerate() {
            for (col, &d) in distances.iter().enumerate() {
                let panel = Panel {
                    counts: &table[d],
                    epsilon,
                    patch,
                    caption: format!("{t}, d = {d}"),
                };
                panel.draw(&panels[row * cols + col])?;
            }
        }
        Ok(())
    })
}

/// One panel of Fig. 3.
struct Panel<'a> {
    counts: &'a [u64],
    epsilon: u64,
    patch: Option<usize>,
    caption: String,
}

impl Panel<'_> {
    fn draw(&self, area: &Area) -> Result<()> {
        let locations = self.counts.len().max(1);
        let max = self.counts.iter().copied().max().unwrap_or(0);
        let mut c = ChartBuilder::on(area)
            .caption(format!("{} (max {max})", self.caption), chart::text(14))
            .margin(6)
            .x_label_area_size(18)
            .y_label_area_size(10)
            .build_cartesian_2d(0.0..locations as f64, 0.0..max.max(1) as f64)
            .map_err(drawing_error)?;
        c.configure_mesh()
            .disable_mesh()
            .disable_y_axis()
            .x_labels(3)
            .x_label_formatter(&|x| format!("{x:.0}"))
            .label_style(chart::text(11))
            .draw()
            .map_err(drawing_error)?;
        if let Some(p) = self.patch.filter(|&p| p > 0) {
            let lines = (p..locations).step_by(p).map(|l| {
                let x = l as f64;
                PathElement::new(vec![(x, 0.0), (x, max.max(1) as f64)], chart::LIGHT_GREY)
            });
            c.draw_series(lines).map_err(drawing_error)?;
        }
        let bars = self.counts.iter().enumerate().filter(|(_, n)| **n > 0);
        c.draw_series(bars.map(|(l, &n)| {
            let colour = if n > self.epsilon { HOT } else { NOISE };
            let x = l as f64;
            Rectangle::new([(x, 0.0), (x + 1.0, n as f64)], colour.filled())
        }))
        .map_err(drawing_error)?;
        if max > 0 && self.epsilon < max {
            let e = self.epsilon as f64;
            let line = [(0.0, e), (locations as f64, e)];
            c.draw_series(DashedLineSeries::new(line, 5, 4, EPSILON.into()))
                .map_err(drawing_error)?;
        }
        if max == 0 {
            let middle = (locations as f64 / 2.0, 0.5);
            let style = chart::text(12).pos(Pos::new(HPos::Center, VPos::Center));
            c.draw_series([Text::new("no weak behaviour", middle, style)])
                .map_err(drawing_error)?;
        }
        Ok(())
    }
}

/// Fig. 4: score per spread m = 1..M (`scores[test][m - 1]`), one line per test (a point per
/// spread), and a dashed line at the chosen spread.
pub fn spread_plot(
    scores: &PerTest<Vec<u64>>,
    chosen: Option<usize>,
    title: &str,
) -> Result<String> {
    let m = scores.mp.len().max(1);
    let max = scores
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .max()
        .unwrap_or(0)
        .max(1);
    chart::svg((640, 380), |root| {
        let mut c = ChartBuilder::on(root)
            .caption(title, chart::text(18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(1.0..(m as f64).max(2.0), 0.0..max as f64 * 1.08)
            .map_err(drawing_error)?;
        c.configure_mesh()
            .x_desc("spread (patch-sized regions stressed at once)")
            .y_desc("score")
            .x_labels(m.min(16))
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_labels(5)
            .y_label_formatter(&|y| crate::tune::report::human(*y as u64))
            .label_style(chart::text(12))
            .axis_desc_style(chart::text(14))
            .light_line_style(WHITE)
            .draw()
            .map_err(drawing_error)?;
        if let Some(k) = chosen.filter(|&k| k >= 1 && k <= m) {
            let x = k as f64;
            let line = [(x, 0.0), (x, max as f64)];
            c.draw_series(DashedLineSeries::new(line, 5, 4, chart::DARK_GREY.into()))
                .map_err(drawing_error)?;
            let at = (x, max as f64 * 1.08);
            c.draw_series([Text::new(format!("  chosen: {k}"), at, chart::text(12))])
                .map_err(drawing_error)?;
        }
        for (i, (t, v)) in scores.iter().enumerate() {
            let colour = chart::SERIES[i];
            let points: Vec<(f64, f64)> = v
                .iter()
                .enumerate()
                .map(|(k, &s)| ((k + 1) as f64, s as f64))
                .collect();
            c.draw_series(LineSeries::new(points.clone(), colour.stroke_width(2)))
                .map_err(drawing_error)?
                .label(t.name())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 4), (x + 16, y + 4)], colour.filled())
                });
            c.draw_series(PointSeries::of_element(
                points,
                3,
                colour.filled(),
                &|p, s, st| Circle::new(p, s, st),
            ))
            .map_err(drawing_error)?;
        }
        c.configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .border_style(chart::LIGHT_GREY)
            .background_style(WHITE)
            .label_font(chart::text(12))
            .draw()
            .map_err(drawing_error)?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(s: &str, pat: &str) -> usize {
        s.matches(pat).count()
    }

    fn fill(c: RGBColor) -> String {
        format!("fill=\"{}\"", chart::hex(c))
    }

    /// The value of attribute `name` in an element's text.
    fn attr(element: &str, name: &str) -> f64 {
        let start = element.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
        let rest = &element[start..];
        rest[..rest.find('"').unwrap()].parse().unwrap()
    }

    /// The circles of colour `c`, as (cx, cy), in the order drawn.
    fn circles(svg: &str, c: RGBColor) -> Vec<(f64, f64)> {
        svg.lines()
            .filter(|l| l.starts_with("<circle") && l.contains(&fill(c)))
            .map(|l| (attr(l, "cx"), attr(l, "cy")))
            .collect()
    }

    #[test]
    fn patch_plot_has_a_bar_per_nonzero_count_coloured_by_epsilon() {
        // L = 8, D = 2; d = 1: two hot locations, one noise location.
        let table = |hot: &[(usize, u64)]| {
            let mut t = vec![vec![0u64; 8]; 2];
            for &(l, c) in hot {
                t[1][l] = c;
            }
            t
        };
        let counts = PerTest {
            mp: table(&[(2, 10), (3, 12), (6, 2)]),
            lb: table(&[]),
            sb: table(&[(0, 4)]),
        };
        let svg = patch_plot(&counts, &[0, 1, 5], 3, Some(4), "t <&>").unwrap();
        assert!(svg.starts_with("<svg ") && svg.contains("xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.ends_with("</svg>\n"));
        // MP's two counts above 3 and SB's 4 are hot; MP's 2 is noise.
        assert_eq!(count(&svg, &fill(HOT)), 3, "{svg}");
        assert_eq!(count(&svg, &fill(NOISE)), 1);
        // Distance 5 is not in the table: two columns only, so 6 panel titles.
        assert_eq!(count(&svg, ", d = "), 6);
        assert!(svg.contains("MP, d = 1 (max 12)"));
        // Panels without weak behaviour say so: d = 0 of all three tests and d = 1 of LB.
        assert_eq!(count(&svg, "no weak behaviour"), 4);
        assert!(svg.contains("t &lt;&amp;&gt;"));
        // The epsilon line (dashed, red) in the two panels whose largest count passes it.
        assert!(count(&svg, &format!("stroke=\"{}\"", chart::hex(EPSILON))) >= 2);
        // Every opened element is closed: text elements have their closing tag.
        assert_eq!(count(&svg, "<text"), count(&svg, "</text>"));
    }

    #[test]
    fn a_taller_count_is_a_taller_bar() {
        let counts = PerTest {
            mp: vec![vec![5, 10, 0, 0]],
            lb: vec![vec![0; 4]],
            sb: vec![vec![0; 4]],
        };
        let svg = patch_plot(&counts, &[0], 1, None, "bars").unwrap();
        let heights: Vec<f64> = svg
            .lines()
            .filter(|l| l.starts_with("<rect") && l.contains(&fill(HOT)))
            .map(|l| attr(l, "height"))
            .collect();
        assert_eq!(heights.len(), 2, "{svg}");
        assert!((heights[1] / heights[0] - 2.0).abs() < 0.1, "{heights:?}");
    }

    #[test]
    fn spread_plot_has_a_line_per_test_with_a_point_per_spread() {
        let scores = PerTest {
            mp: vec![5, 9, 7, 3],
            lb: vec![1, 4, 2, 2],
            sb: vec![0, 8, 8, 1],
        };
        let svg = spread_plot(&scores, Some(2), "spread").unwrap();
        for (c, name) in chart::SERIES.iter().zip(["MP", "LB", "SB"]) {
            let line = format!(
                "<polyline fill=\"none\" opacity=\"1\" stroke=\"{}\"",
                chart::hex(*c)
            );
            assert_eq!(count(&svg, &line), 1, "{name}: {svg}");
            assert_eq!(circles(&svg, *c).len(), 4, "{name}");
            assert!(
                svg.contains(&format!(">\n{name}\n</text>")),
                "legend {name}"
            );
        }
        assert!(svg.contains("chosen: 2"));
        // Points left to right by spread, higher scores higher up: MP's 9 at the top of the
        // plot, SB's 0 at the bottom.
        let mp = circles(&svg, chart::SERIES[0]);
        assert!(mp.windows(2).all(|w| w[0].0 < w[1].0), "{mp:?}");
        let top = mp[1].1;
        let sb = circles(&svg, chart::SERIES[2]);
        let bottom = sb[0].1;
        let all: Vec<f64> = chart::SERIES
            .iter()
            .flat_map(|c| circles(&svg, *c))
            .map(|p| p.1)
            .collect();
        assert!(all.iter().all(|&y| top <= y && y <= bottom), "{all:?}");
        assert!(
            mp[2].1 > mp[1].1 && mp[3].1 > mp[0].1,
            "7 below 9, 3 below 5: {mp:?}"
        );
        assert!(svg.ends_with("</svg>\n"));
    }
}

//! The plots of `wmfix tune`, as SVG text written by hand: patch finding in the style of the
//! paper's Fig. 3 (per test and distance, a bar per stressed location) and spread finding in
//! the style of Fig. 4 (score per spread, one line per test).

use crate::litmus::vocabulary::PerTest;
use std::fmt::Write;

/// Colours of the tests' lines (matplotlib's first three).
const COLOURS: [&str; 3] = ["#1f77b4", "#ff7f0e", "#2ca02c"];

/// A small SVG writer: elements are appended as text.
pub struct Svg {
    body: String,
    width: f64,
    height: f64,
}

/// Escapes text for SVG (XML) content and attribute values.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

impl Svg {
    pub fn new(width: f64, height: f64) -> Svg {
        let mut s = Svg {
            body: String::new(),
            width,
            height,
        };
        s.rect(0.0, 0.0, width, height, "white", "background");
        s
    }

    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str, class: &str) {
        let _ = writeln!(
            self.body,
            r#"<rect class="{class}" x="{x:.2}" y="{y:.2}" width="{w:.2}" height="{h:.2}" fill="{fill}"/>"#
        );
    }

    pub fn line(&mut self, (x1, y1): (f64, f64), (x2, y2): (f64, f64), stroke: &str, dash: bool) {
        let dash = if dash {
            r#" stroke-dasharray="4 3""#
        } else {
            ""
        };
        let _ = writeln!(
            self.body,
            r#"<line x1="{x1:.2}" y1="{y1:.2}" x2="{x2:.2}" y2="{y2:.2}" stroke="{stroke}" stroke-width="1"{dash}/>"#
        );
    }

    pub fn polyline(&mut self, points: &[(f64, f64)], stroke: &str, class: &str) {
        let pts: Vec<String> = points
            .iter()
            .map(|(x, y)| format!("{x:.2},{y:.2}"))
            .collect();
        let _ = writeln!(
            self.body,
            r#"<polyline class="{class}" points="{}" fill="none" stroke="{stroke}" stroke-width="1.5"/>"#,
            pts.join(" ")
        );
    }

    pub fn circle(&mut self, (x, y): (f64, f64), r: f64, fill: &str) {
        let _ = writeln!(
            self.body,
            r#"<circle cx="{x:.2}" cy="{y:.2}" r="{r:.1}" fill="{fill}"/>"#
        );
    }

    /// Text at (x, y); `anchor` is `start`, `middle` or `end`.
    pub fn text(&mut self, (x, y): (f64, f64), size: f64, anchor: &str, s: &str) {
        let _ = writeln!(
            self.body,
            r#"<text x="{x:.2}" y="{y:.2}" font-size="{size}" text-anchor="{anchor}">{}</text>"#,
            escape(s)
        );
    }

    pub fn finish(self) -> String {
        format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" \
             viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\">\n{}</svg>\n",
            self.body,
            w = self.width,
            h = self.height
        )
    }
}

/// Fig. 3: a panel per test (rows) and distance (columns); in each, a bar per stressed
/// location l whose height is the weak behaviours of `<T_d, l>`, scaled to the panel's
/// largest count (written in its title). Bars above `epsilon` are blue (class `hot`), the rest
/// grey (class `noise`); a dashed red line marks epsilon, thin lines mark multiples of
/// `patch`. Distances not in the table are skipped.
pub fn patch_plot(
    counts: &PerTest<Vec<Vec<u64>>>,
    distances: &[usize],
    epsilon: u64,
    patch: Option<usize>,
    title: &str,
) -> String {
    let distances: Vec<usize> = distances
        .iter()
        .copied()
        .filter(|&d| d < counts.mp.len())
        .collect();
    let locations = counts.mp.first().map_or(0, Vec::len).max(1);
    let (pw, ph, gap, left, top) = (520.0, 90.0, 30.0, 40.0, 50.0);
    let cols = distances.len().max(1) as f64;
    let width = left + cols * (pw + gap);
    let height = top + 3.0 * (ph + 45.0) + 10.0;
    let mut svg = Svg::new(width, height);
    svg.text((width / 2.0, 22.0), 15.0, "middle", title);
    let bar = pw / locations as f64;
    for (row, (t, table)) in counts.iter().enumerate() {
        for (col, &d) in distances.iter().enumerate() {
            let x0 = left + col as f64 * (pw + gap);
            let y0 = top + row as f64 * (ph + 45.0) + 18.0;
            let counts = &table[d];
            let max = counts.iter().copied().max().unwrap_or(0);
            svg.text(
                (x0, y0 - 6.0),
                12.0,
                "start",
                &format!("{t}, d = {d} (max {max})"),
            );
            if let Some(p) = patch.filter(|&p| p > 0) {
                for l in (p..locations).step_by(p) {
                    let x = x0 + l as f64 * bar;
                    svg.line((x, y0), (x, y0 + ph), "#e0e0e0", false);
                }
            }
            for (l, &c) in counts.iter().enumerate() {
                if c == 0 {
                    continue;
                }
                let h = ph * c as f64 / max as f64;
                let (fill, class) = if c > epsilon {
                    (COLOURS[0], "hot")
                } else {
                    ("#9e9e9e", "noise")
                };
                svg.rect(x0 + l as f64 * bar, y0 + ph - h, bar, h, fill, class);
            }
            if max > 0 && epsilon < max {
                let y = y0 + ph - ph * epsilon as f64 / max as f64;
                svg.line((x0, y), (x0 + pw, y), "#d62728", true);
            }
            if max == 0 {
                svg.text(
                    (x0 + pw / 2.0, y0 + ph / 2.0),
                    11.0,
                    "middle",
                    "no weak behaviour",
                );
            }
            svg.line((x0, y0 + ph), (x0 + pw, y0 + ph), "black", false);
            for l in [0, locations / 2, locations] {
                svg.text(
                    (x0 + l as f64 * bar, y0 + ph + 13.0),
                    10.0,
                    "middle",
                    &l.to_string(),
                );
            }
        }
    }
    svg.finish()
}

/// Fig. 4: score per spread m = 1..M (`scores[test][m - 1]`), one line per test, and a dashed
/// line at the chosen spread.
pub fn spread_plot(scores: &PerTest<Vec<u64>>, chosen: Option<usize>, title: &str) -> String {
    let m = scores.mp.len().max(1);
    let (width, height) = (640.0, 380.0);
    let (left, right, top, bottom) = (70.0, 20.0, 45.0, 55.0);
    let (pw, ph) = (width - left - right, height - top - bottom);
    let max = scores
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .max()
        .unwrap_or(0)
        .max(1);
    let x_of = |k: usize| left + pw * (k as f64 - 1.0) / ((m as f64 - 1.0).max(1.0));
    let y_of = |v: u64| top + ph - ph * v as f64 / max as f64;
    let mut svg = Svg::new(width, height);
    svg.text((width / 2.0, 22.0), 15.0, "middle", title);
    svg.line((left, top), (left, top + ph), "black", false);
    svg.line((left, top + ph), (left + pw, top + ph), "black", false);
    for i in 0..=4 {
        let v = max * i / 4;
        let y = y_of(v);
        svg.line((left - 4.0, y), (left, y), "black", false);
        svg.text(
            (left - 7.0, y + 4.0),
            10.0,
            "end",
            &crate::tune::report::human(v),
        );
    }
    let step = m.div_ceil(16).max(1);
    for k in (1..=m).filter(|k| k % step == 0 || *k == 1) {
        let x = x_of(k);
        svg.line((x, top + ph), (x, top + ph + 4.0), "black", false);
        svg.text((x, top + ph + 16.0), 10.0, "middle", &k.to_string());
    }
    svg.text(
        (left + pw / 2.0, height - 14.0),
        12.0,
        "middle",
        "spread (patch-sized regions stressed at once)",
    );
    svg.text((14.0, top - 12.0), 12.0, "start", "score");
    if let Some(c) = chosen.filter(|&c| c >= 1 && c <= m) {
        let x = x_of(c);
        svg.line((x, top), (x, top + ph), "#555555", true);
        svg.text(
            (x + 4.0, top + 10.0),
            10.0,
            "start",
            &format!("chosen: {c}"),
        );
    }
    for (i, (t, v)) in scores.iter().enumerate() {
        let pts: Vec<(f64, f64)> = v
            .iter()
            .enumerate()
            .map(|(k, &s)| (x_of(k + 1), y_of(s)))
            .collect();
        svg.polyline(&pts, COLOURS[i], &format!("line-{}", t.name()));
        for &p in &pts {
            svg.circle(p, 2.0, COLOURS[i]);
        }
        let ly = top + 8.0 + 16.0 * i as f64;
        let lx = left + pw - 60.0;
        svg.line((lx, ly), (lx + 20.0, ly), COLOURS[i], false);
        svg.text((lx + 26.0, ly + 4.0), 11.0, "start", t.name());
    }
    svg.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(s: &str, pat: &str) -> usize {
        s.matches(pat).count()
    }

    #[test]
    fn patch_plot_has_a_bar_per_nonzero_count_and_classes_by_epsilon() {
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
        let svg = patch_plot(&counts, &[0, 1, 5], 3, Some(4), "t <&>");
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.ends_with("</svg>\n"));
        assert_eq!(count(&svg, r#"class="hot""#), 3, "{svg}");
        assert_eq!(count(&svg, r#"class="noise""#), 1);
        // Distance 5 is not in the table: two columns only, so 6 panel titles.
        assert_eq!(count(&svg, ", d = "), 6);
        assert!(svg.contains("MP, d = 1 (max 12)"));
        // Panels without weak behaviour say so: d = 0 of all three tests and d = 1 of LB.
        assert_eq!(count(&svg, "no weak behaviour"), 4);
        assert!(svg.contains("t &lt;&amp;&gt;"));
        // Every opened element is closed: text elements have their closing tag.
        assert_eq!(count(&svg, "<text"), count(&svg, "</text>"));
    }

    #[test]
    fn spread_plot_has_a_line_per_test_with_a_point_per_spread() {
        let scores = PerTest {
            mp: vec![5, 9, 7, 3],
            lb: vec![1, 4, 2, 2],
            sb: vec![0, 8, 8, 1],
        };
        let svg = spread_plot(&scores, Some(2), "spread");
        for t in ["MP", "LB", "SB"] {
            assert_eq!(count(&svg, &format!("class=\"line-{t}\"")), 1);
        }
        assert_eq!(count(&svg, "<circle"), 12);
        assert!(svg.contains("chosen: 2"));
        // The highest score sits at the top of the plot area (y = 45), zero at the bottom.
        assert!(svg.contains("points=\"70.00,169.44 253.33,45.00"), "{svg}");
        assert!(svg.ends_with("</svg>\n"));
    }
}

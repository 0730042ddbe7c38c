//! The page's HTML: escaping, the frame (inline CSS, no script, nothing fetched) and the
//! small pieces every section uses.

use crate::report::doc::{Doc, Meta};
use std::fmt::Write;

/// `s` as HTML text or a quoted attribute value.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `s` as HTML text with its `backticked` spans as code.
pub fn prose(s: &str) -> String {
    let mut out = String::new();
    for (i, part) in s.split('`').enumerate() {
        // Odd parts are inside backticks, unless the last backtick has no partner.
        let inside = i % 2 == 1 && s.matches('`').count() > i;
        if inside {
            out += &format!("<code>{}</code>", esc(part));
        } else {
            if i % 2 == 1 {
                out.push('`');
            }
            out += &esc(part);
        }
    }
    out
}

/// `n` with thousands separated by commas: 12,345.
pub fn count(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A share as a percentage with one decimal: `12.5%`.
pub fn percent(p: f64) -> String {
    format!("{:.1}%", 100.0 * p)
}

const STYLE: &str = "
body { font-family: sans-serif; margin: 2em auto; max-width: 72em; padding: 0 1em; color: #222; line-height: 1.4; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { border-bottom: 1px solid #ccc; padding-bottom: 0.2em; margin-top: 2em; }
h3 { font-size: 1.05em; margin-bottom: 0.3em; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { padding: 0.25em 0.6em; border-bottom: 1px solid #e4e4e4; text-align: left; vertical-align: middle; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
code, pre { font-family: monospace; font-size: 0.92em; }
pre.source { background: #f7f7f7; border: 1px solid #e0e0e0; padding: 0.5em 0; overflow-x: auto; }
pre.source span { display: block; padding: 0 0.8em; white-space: pre; }
pre.source span.fence { background: #fff3c4; }
pre.source span.placed { background: #e3f1ff; }
.provenance { color: #555; font-size: 0.88em; }
ul.provenance { padding-left: 1.2em; }
.provenance code { word-break: break-all; }
.note { color: #7a4b00; }
.fence-card { border-left: 4px solid #1f77b4; padding-left: 1em; margin: 1.2em 0; }
.model { margin: 0.3em 0; }
figure { margin: 0.8em 0; }
figcaption { color: #555; font-size: 0.9em; }
.charts { display: flex; flex-wrap: wrap; gap: 1em; }
.legend span { margin-right: 1.2em; }
.swatch { display: inline-block; width: 0.9em; height: 0.9em; vertical-align: middle; margin-right: 0.3em; }
svg { max-width: 100%; height: auto; }
";

/// The whole page: `title`, then `body`.
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n{body}</body>\n</html>\n",
        esc(title)
    )
}

/// Where a section's numbers come from: the file, and the GPU script's meta when it kept one.
pub fn provenance<T>(doc: &Doc<T>) -> String {
    format!("<p class=\"provenance\">{}</p>\n", source_of(doc))
}

/// `provenance`'s text, for a list of several.
pub fn source_of<T>(doc: &Doc<T>) -> String {
    let mut s = format!("From <code>{}</code>", esc(&doc.path.display().to_string()));
    if let Some(m) = &doc.meta {
        s += &meta(m);
    }
    s
}

fn meta(m: &Meta) -> String {
    let mut s = String::new();
    let parts = [
        ("GPU", &m.gpu),
        ("driver", &m.driver),
        ("wmfix", &m.commit),
        ("date", &m.date),
    ];
    for (name, v) in parts {
        if let Some(v) = v {
            let _ = write!(s, "; {name} {}", esc(v));
        }
    }
    if let Some(c) = &m.command {
        let _ = write!(s, "; command <code>{}</code>", esc(c));
    }
    s
}

/// A figure: the chart's SVG with a caption.
pub fn figure(svg: &str, caption: &str) -> String {
    format!("<figure>\n{svg}<figcaption>{caption}</figcaption>\n</figure>\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_numbers_read_well() {
        assert_eq!(esc("a<b & \"c\"'"), "a&lt;b &amp; &quot;c&quot;&#39;");
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1000), "1,000");
        assert_eq!(count(1234567), "1,234,567");
        assert_eq!(percent(0.8388), "83.9%");
        assert_eq!(prose("a `x < y` b"), "a <code>x &lt; y</code> b");
        assert_eq!(prose("`a` and `b"), "<code>a</code> and `b");
    }

    #[test]
    fn the_page_fetches_nothing_and_runs_no_script() {
        let p = page("a <b>", "<p>x</p>\n");
        assert!(p.starts_with("<!DOCTYPE html>"));
        assert!(p.contains("<title>a &lt;b&gt;</title>"));
        assert!(!p.contains("<script") && !p.contains("http"), "{p}");
    }
}

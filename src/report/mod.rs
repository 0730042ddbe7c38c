//! `wmfix report`: one self-contained HTML page (inline CSS and SVG, no script, nothing fetched)
//! of what an output folder, or the GPU script's step folders, hold: the test table with
//! interval bars (`test_table`), the reduction's progress (`progress`), each kept fence with
//! its source lines and the model's completion (`kept`, `source`), the cost chart (`cost`).
//! Each section is there only when its file is. The files are found by `files` and read by `doc`
//! (wrapped as `{"meta", "result"}` or not); the charts are drawn with plotters (`chart`).

pub mod cost;
pub mod doc;
pub mod files;
pub mod html;
pub mod journal;
pub mod kept;
pub mod progress;
pub mod source;
pub mod test_table;

use crate::report::files::Found;
use crate::report::source::Sources;
use anyhow::Result;
use std::path::{Path, PathBuf};

/// What a page is made of: the files found, and where the application's sources are now.
pub struct Inputs {
    pub found: Found,
    /// The application's folder, for the kept fences' source lines.
    pub sources: Option<PathBuf>,
}

/// The application's name: the last part of the path the records give.
fn app_name(found: &Found) -> Option<String> {
    let app = found
        .reduction
        .as_ref()
        .map(|r| r.value.app.clone())
        .or_else(|| found.summaries.first().map(|s| s.value.app.clone()))
        .or_else(|| found.cost.as_ref().map(|c| c.value.app.clone()))?;
    app.file_name().map(|n| n.to_string_lossy().into_owned())
}

/// The page.
pub fn page(inputs: &Inputs) -> Result<String> {
    let f = &inputs.found;
    let title = match app_name(f) {
        Some(name) => format!("wmfix report: {name}"),
        None => "wmfix report".to_string(),
    };
    let mut body = format!("<h1>{}</h1>\n", html::esc(&title));
    body += &contents(f);
    if !f.summaries.is_empty() {
        body += &test_table::section(&f.summaries)?;
    }
    if f.reduction.is_some() || f.journal.is_some() {
        body += &progress::section(f.reduction.as_ref(), f.journal.as_ref())?;
    }
    if let Some(r) = &f.reduction {
        let sources = Sources {
            root: inputs.sources.clone(),
            recorded: &r.value.sources,
        };
        body += &kept::section(&r.value, &sources);
    }
    if let Some(c) = &f.cost {
        body += &cost::section(c)?;
    }
    body += &format!(
        "<p class=\"provenance\">Made by wmfix {} (<code>wmfix report</code>).</p>\n",
        env!("CARGO_PKG_VERSION")
    );
    Ok(html::page(&title, &body))
}

/// Links to the sections the page has.
fn contents(f: &Found) -> String {
    let mut links = Vec::new();
    if !f.summaries.is_empty() {
        links.push(("test", "Tests under stress"));
    }
    if f.reduction.is_some() || f.journal.is_some() {
        links.push(("reduce", "Reduction"));
    }
    if f.reduction.is_some() {
        links.push(("fences", "Kept fences"));
    }
    if f.cost.is_some() {
        links.push(("cost", "What the fences cost"));
    }
    let items: Vec<String> = links
        .iter()
        .map(|(id, name)| format!("<a href=\"#{id}\">{name}</a>"))
        .collect();
    format!("<p>{}</p>\n", items.join(" &middot; "))
}

/// The sources' folder: `given` (the application's folder named on the command line), else
/// the folder the reduction recorded, if it is there.
pub fn sources_folder(given: Option<&Path>, found: &Found) -> Option<PathBuf> {
    if let Some(g) = given {
        return Some(g.to_path_buf());
    }
    let recorded = &found.reduction.as_ref()?.value.app;
    recorded.is_dir().then(|| recorded.clone())
}

//! `wmfix tune --analyse FILE`: saved raw counts to a profile, the analysis and the plots.

use crate::exit_code::{self, fail};
use crate::tune::analysis::{Analysis, analyse};
use crate::tune::plots;
use crate::tune::raw::RawCounts;
use crate::tune::report::report;
use anyhow::Result;
use std::path::{Path, PathBuf};

// ---------------------------------------------------------------------------------------------
// `wmfix tune --analyse`

pub struct Options {
    /// The raw-counts JSON.
    pub raw: PathBuf,
    /// Where `profile.toml`, `analysis.json` and the plots go (created; other files there are
    /// left alone, the raw counts may live there).
    pub out: PathBuf,
    /// Overrides the file's noise threshold.
    pub epsilon: Option<u64>,
}

pub struct Done {
    pub analysis: Analysis,
    pub report: String,
    /// `profile.toml`.
    pub profile: PathBuf,
    /// Every file written, the profile too.
    pub written: Vec<PathBuf>,
}

/// `wmfix tune --analyse FILE`: reads the raw counts, analyses them, writes the profile,
/// `analysis.json` and the plots (`patches.svg` in the style of Fig. 3 for distances 0, P and
/// 2P; `spread.svg` in the style of Fig. 4).
pub fn run(opts: &Options) -> Result<Done> {
    let raw = RawCounts::load(&opts.raw)?;
    write(&raw, &opts.raw, &opts.out, opts.epsilon)
}

/// Analyses `raw` (read from, or just written to, `origin`) and writes the results into `out`.
pub fn write(raw: &RawCounts, origin: &Path, out: &Path, epsilon: Option<u64>) -> Result<Done> {
    let analysis = analyse(raw, epsilon)
        .map_err(|e| fail(exit_code::BAD_INPUT, format!("{}: {e:#}", origin.display())))?;
    let report = report(raw, &analysis);
    let cant_write = |path: &Path, e: std::io::Error| {
        fail(
            exit_code::CANT_WRITE,
            format!("{}: cannot write: {e}", path.display()),
        )
    };
    std::fs::create_dir_all(out).map_err(|e| cant_write(out, e))?;
    let profile = out.join("profile.toml");
    let mut files: Vec<(PathBuf, String)> = vec![
        (profile.clone(), analysis.profile.to_toml()),
        (
            out.join("analysis.json"),
            serde_json::to_string_pretty(&analysis)? + "\n",
        ),
    ];
    if let (Some(ph), Some(pa)) = (&raw.patch, &analysis.patch) {
        let p = pa.chosen().unwrap_or(32);
        let distances: Vec<usize> = [0, p, 2 * p]
            .into_iter()
            .filter(|&d| d < raw.params.distances)
            .collect();
        files.push((
            out.join("patches.svg"),
            plots::patch_plot(
                &ph.counts,
                &distances,
                pa.epsilon,
                pa.chosen(),
                &format!(
                    "Patch finding on {} (epsilon = {})",
                    raw.params.gpu, pa.epsilon
                ),
            )?,
        ));
    }
    if let (Some(ph), Some(c)) = (&raw.spread, &analysis.spread) {
        files.push((
            out.join("spread.svg"),
            plots::spread_plot(
                &ph.scores,
                Some(c.chosen),
                &format!("Spread finding on {} ({})", raw.params.gpu, ph.sequence),
            )?,
        ));
    }
    let mut written = Vec::new();
    for (path, text) in files {
        std::fs::write(&path, text).map_err(|e| cant_write(&path, e))?;
        written.push(path);
    }
    Ok(Done {
        analysis,
        report,
        profile,
        written,
    })
}

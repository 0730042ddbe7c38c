//! `fences.patch`: a unified diff against the user's original sources that adds only the
//! fences the reduction kept, and `wmfix apply`, which writes that change on request.

use crate::app::builder;
use crate::app::config::App;
use crate::digest::Fnv;
use crate::exit_code::{self, fail};
use crate::fences::id::Ids;
use crate::fences::scope::FenceScope;
use crate::rewrite::insert;
use crate::rewrite::render;
use crate::rewrite::source::Encoding;
use crate::rewrite::write_back;
use anyhow::Result;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub struct Hardened {
    pub rel: PathBuf,
    pub original: String,
    pub hardened: String,
    /// The file's encoding: `bytes` writes `hardened` back in it.
    pub encoding: Encoding,
}

impl Hardened {
    /// The hardened file as bytes, in the original's encoding.
    pub fn bytes(&self) -> Vec<u8> {
        self.encoding.encode(&self.hardened)
    }
}

/// Digests of the instrumented sources, by path: fence ids mean something only for these texts.
pub type SourceDigests = BTreeMap<PathBuf, String>;

/// What adding only some fences to the application's sources gives.
pub struct Hardening {
    /// The files that change.
    pub files: Vec<Hardened>,
    /// The digests of all the sources that fence ids refer to.
    pub sources: SourceDigests,
    /// Preprocessed mode: fences in library headers, not added; findings for that library
    /// (`cub/agent/x.cuh:NNN (fence N)`).
    pub library: Vec<String>,
    /// Preprocessed mode: fences of the user's files that are not added, as the build did not
    /// add them (inside a macro's expansion, or a header's later inclusion).
    pub unplaced: Vec<String>,
}

/// The application's files that change when only `kept` fences are added.
pub fn harden(app: &App, out: &Path, kept: &Ids, scope: FenceScope) -> Result<Hardening> {
    harden_placed(app, out, kept, &Ids::new(), scope)
}

/// As `harden`; fences of `after_loop` at a loop condition get only their after-the-loop
/// placement. In preprocessed mode fence ids number the sites of the preprocessed translation
/// units: each kept fence is written back into the user's file its line came from, as the
/// build writes it back (`write_back::harden`), and those of library headers are findings.
pub fn harden_placed(
    app: &App,
    out: &Path,
    kept: &Ids,
    after_loop: &Ids,
    scope: FenceScope,
) -> Result<Hardening> {
    let mut tree = insert::plan_tree(&builder::insert_options(app, out, scope))?;
    let sources = tree
        .planned
        .iter()
        .map(|p| (p.file.rel.clone(), Fnv::of(p.file.text.as_bytes())))
        .collect();
    let internal = |e: crate::rewrite::edits::Overlap| fail(exit_code::INTERNAL, e.to_string());
    if app.config.preprocess.is_some() {
        let done = write_back::harden(&tree.input.root, &mut tree.planned, kept, after_loop, scope)
            .map_err(internal)?;
        let files = done
            .files
            .into_iter()
            .map(|(rel, origin, hardened)| Hardened {
                rel,
                original: origin.text,
                hardened,
                encoding: origin.encoding,
            })
            .collect();
        return Ok(Hardening {
            files,
            sources,
            library: done.library,
            unplaced: done.unplaced,
        });
    }
    let texts = render::render_hardened_placed(&mut tree.planned, kept, after_loop, scope)
        .map_err(internal)?;
    let files = tree
        .planned
        .into_iter()
        .zip(texts)
        .filter_map(|(p, t)| {
            t.map(|hardened| Hardened {
                rel: p.file.rel,
                original: p.file.text,
                hardened,
                encoding: p.file.encoding,
            })
        })
        .collect();
    Ok(Hardening {
        files,
        sources,
        library: Vec::new(),
        unplaced: Vec::new(),
    })
}

/// `wmfix cost` in preprocessed mode would build its variants without the library headers'
/// fences (they are findings, not edits of the user's files): refused before any work.
pub fn refuse_preprocessed(app: &App) -> Result<()> {
    if app.config.preprocess.is_some() {
        return Err(fail(
            exit_code::USAGE,
            "wmfix.toml sets preprocess: `wmfix cost` does not measure preprocessed mode yet (its variants would lack the library headers' fences)".to_string(),
        ));
    }
    Ok(())
}

/// A diff that `git apply` and `patch -p1` take, run in the application's folder; each file's
/// lines in that file's own encoding, so that a Latin-1 file's context matches its bytes.
pub fn unified_diff(files: &[Hardened]) -> Vec<u8> {
    let mut out = Vec::new();
    for f in files {
        let path = f.rel.to_string_lossy();
        let diff = similar::TextDiff::from_lines(&f.original, &f.hardened);
        let text = diff
            .unified_diff()
            .context_radius(3)
            .header(&format!("a/{path}"), &format!("b/{path}"))
            .to_string();
        out.extend(f.encoding.encode(&text));
    }
    out
}

/// Writes the hardened files into the application's folder, after checking that the sources
/// are still those the reduction numbered its fences in (`recorded`).
pub fn apply(
    app: &App,
    files: &[Hardened],
    now: &SourceDigests,
    recorded: &SourceDigests,
) -> Result<usize> {
    if now != recorded {
        // Each file once, whether it changed, appeared or went.
        let changed: std::collections::BTreeSet<String> = recorded
            .keys()
            .chain(now.keys())
            .filter(|k| now.get(*k) != recorded.get(*k))
            .map(|k| k.display().to_string())
            .collect();
        return Err(fail(
            exit_code::BAD_INPUT,
            format!(
                "sources changed since the reduction ({}); not applied",
                changed.into_iter().collect::<Vec<_>>().join(", ")
            ),
        ));
    }
    for f in files {
        std::fs::write(app.root.join(&f.rel), f.bytes())?;
    }
    Ok(files.len())
}

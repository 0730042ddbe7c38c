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

/// The application's files that change when only `kept` fences are added, and the digests of
/// all the sources that fence ids refer to.
pub fn harden(
    app: &App,
    out: &Path,
    kept: &Ids,
    scope: FenceScope,
) -> Result<(Vec<Hardened>, SourceDigests)> {
    harden_placed(app, out, kept, &Ids::new(), scope)
}

/// As `harden`; fences of `after_loop` at a loop condition get only their after-the-loop
/// placement.
pub fn harden_placed(
    app: &App,
    out: &Path,
    kept: &Ids,
    after_loop: &Ids,
    scope: FenceScope,
) -> Result<(Vec<Hardened>, SourceDigests)> {
    refuse_preprocessed(app)?;
    let mut tree = insert::plan_tree(&builder::insert_options(app, out, scope))?;
    let texts = render::render_hardened_placed(&mut tree.planned, kept, after_loop, scope)
        .map_err(|e| fail(exit_code::INTERNAL, e.to_string()))?;
    let digests = tree
        .planned
        .iter()
        .map(|p| (p.file.rel.clone(), Fnv::of(p.file.text.as_bytes())))
        .collect();
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
    Ok((files, digests))
}

/// Fence ids in preprocessed mode number sites of the preprocessed translation units, not of
/// the files the user owns: a patch would be against text the user never wrote. Refused before
/// any work (`reduce` asks first), until edits map back into the user's files.
pub fn refuse_preprocessed(app: &App) -> Result<()> {
    if app.config.preprocess.is_some() {
        return Err(fail(
            exit_code::USAGE,
            "wmfix.toml sets preprocess: fences.patch and apply are not made in preprocessed mode yet (use wmfix test, or reduce without it)".to_string(),
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

//! Finding the files of the tree to instrument.

use crate::exit_code::{self, fail};
use crate::out_dir;
use anyhow::Result;
use std::path::{Path, PathBuf};

pub struct InputTree {
    /// The directory the mirror reproduces.
    pub root: PathBuf,
    /// Files, relative to `root`, sorted.
    pub files: Vec<PathBuf>,
}

/// All files under `paths` except those under `skip` (the output directory), `.git`, and
/// wmfix's output folders (`out_dir::is_output`: a marked folder, or one an older wmfix made),
/// which are never sources. One directory is mirrored as it is; several paths by their common
/// parent. A path inside an output folder is refused.
pub fn collect(paths: &[PathBuf], skip: &Path) -> Result<InputTree> {
    let mut abs = Vec::new();
    for p in paths {
        let a = p
            .canonicalize()
            .map_err(|e| fail(exit_code::NO_INPUT, format!("{}: {e}", p.display())))?;
        if let Some(out) = a.ancestors().find(|d| out_dir::is_output(d)) {
            return Err(fail(
                exit_code::BAD_INPUT,
                format!(
                    "{} is inside wmfix's output folder {}: wmfix's output is never taken as a source",
                    p.display(),
                    out.display()
                ),
            ));
        }
        abs.push(a);
    }
    let root = match abs.as_slice() {
        [one] if one.is_dir() => one.clone(),
        _ => common_parent(&abs),
    };
    let skip = skip.canonicalize().unwrap_or_else(|_| skip.to_path_buf());
    let mut files = Vec::new();
    for a in &abs {
        let walker = walkdir::WalkDir::new(a).sort_by_file_name().into_iter();
        let source = |e: &walkdir::DirEntry| {
            e.path() != skip
                && e.file_name() != ".git"
                && !(e.file_type().is_dir() && out_dir::is_output(e.path()))
        };
        for entry in walker.filter_entry(source) {
            let entry = entry?;
            if entry.file_type().is_file() {
                files.push(
                    entry
                        .path()
                        .strip_prefix(&root)
                        .expect("under root")
                        .to_path_buf(),
                );
            }
        }
    }
    files.sort();
    files.dedup();
    Ok(InputTree { root, files })
}

fn common_parent(paths: &[PathBuf]) -> PathBuf {
    let mut root = paths[0].parent().unwrap_or(Path::new("/")).to_path_buf();
    while !paths.iter().all(|p| p.starts_with(&root)) {
        root = root.parent().unwrap_or(Path::new("/")).to_path_buf();
    }
    root
}

/// Files the rewriter parses: CUDA sources always, C/C++ headers when they hold device code.
pub fn is_cuda_candidate(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("cu" | "cuh" | "h" | "hpp" | "hh" | "hxx" | "inl")
    )
}

pub fn is_cuda_source(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("cu" | "cuh")
    )
}

/// Copies the files of `input` to `dest`, keeping permission bits.
pub fn copy_files(input: &InputTree, dest: &Path) -> std::io::Result<()> {
    for rel in &input.files {
        let to = dest.join(rel);
        std::fs::create_dir_all(to.parent().expect("a file has a parent"))?;
        std::fs::copy(input.root.join(rel), &to)?;
    }
    Ok(())
}

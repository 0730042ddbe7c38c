//! Finding the files of the tree to instrument.

use crate::exit_code::{self, fail};
use crate::out_dir;
use anyhow::Result;
use std::path::{Path, PathBuf};

pub struct InputTree {
    /// The directory the mirror reproduces.
    pub root: PathBuf,
    /// Files, relative to `root`, sorted; links to CUDA files outside `root` among them.
    pub files: Vec<PathBuf>,
    /// Symbolic links (to files or folders), relative to `root`, and the target each mirror
    /// gets: for a link into `root`, however spelt (absolute, or up through `root`'s own
    /// name), the relative path to what it reaches, so the mirror's link points at the
    /// mirrored (perhaps instrumented) file; else the absolute target it reaches now.
    pub links: Vec<(PathBuf, PathBuf)>,
    /// Links that reach outside `root` and what they reach: the CUDA files read through (in
    /// `files`) and the links mirrored as links to the original (in `links`).
    pub outside: Vec<(PathBuf, PathBuf)>,
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
    let mut links = Vec::new();
    let mut outside = Vec::new();
    for a in &abs {
        let walker = walkdir::WalkDir::new(a).sort_by_file_name().into_iter();
        let source = |e: &walkdir::DirEntry| {
            e.path() != skip
                && e.file_name() != ".git"
                && !(e.file_type().is_dir() && out_dir::is_output(e.path()))
        };
        for entry in walker.filter_entry(source) {
            let entry = entry?;
            let rel = entry.path().strip_prefix(&root).expect("under root");
            if entry.file_type().is_file() {
                files.push(rel.to_path_buf());
                continue;
            }
            if !entry.path_is_symlink() || entry.depth() == 0 {
                continue;
            }
            let target = mirrored_target(&root, entry.path())?;
            if target.is_absolute() {
                outside.push((rel.to_path_buf(), target.clone()));
            }
            if outside_source(&root, entry.path(), rel) {
                files.push(rel.to_path_buf());
            } else {
                links.push((rel.to_path_buf(), target));
            }
        }
    }
    files.sort();
    files.dedup();
    for list in [&mut links, &mut outside] {
        list.sort();
        list.dedup();
    }
    Ok(InputTree {
        root,
        files,
        links,
        outside,
    })
}

/// Whether `path` is a link to a CUDA source or header outside `root`: mirrored as a link, it
/// would reach the original, uninstrumented; so it is read through and mirrored as a file.
fn outside_source(root: &Path, path: &Path, rel: &Path) -> bool {
    path.is_symlink()
        && is_cuda_candidate(rel)
        && path
            .canonicalize()
            .is_ok_and(|t| t.is_file() && !t.starts_with(root))
}

/// What a mirrored link at `link`'s place should point to (see `InputTree::links`): where it
/// leads (through other links; where it would lead, if it dangles), relative when that is
/// inside `root`: spelt as it is, an absolute link or one up through `root`'s own name would
/// reach the original, unfenced file from the mirror, or nothing.
fn mirrored_target(root: &Path, link: &Path) -> std::io::Result<PathBuf> {
    let target = std::fs::read_link(link)?;
    let parent = link.parent().expect("a link has a parent");
    let reached = link
        .canonicalize()
        .unwrap_or_else(|_| normalized(&parent.join(&target)));
    Ok(match reached.strip_prefix(root) {
        Ok(inside) => relative(parent.strip_prefix(root).expect("under root"), inside),
        Err(_) => reached,
    })
}

/// The path from folder `from` to `to`, both relative to the same folder and without `..`.
fn relative(from: &Path, to: &Path) -> PathBuf {
    let from: Vec<_> = from.components().collect();
    let to: Vec<_> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let up = std::iter::repeat_n(std::path::Component::ParentDir, from.len() - common);
    let path: PathBuf = up.chain(to[common..].iter().copied()).collect();
    if path.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        path
    }
}

/// `a/b/../c` as `a/c`, without asking the file system.
fn normalized(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// Makes the links of `input` under `dest` (after the files are there).
pub fn make_links(input: &InputTree, dest: &Path) -> std::io::Result<()> {
    for (rel, target) in &input.links {
        let at = dest.join(rel);
        std::fs::create_dir_all(at.parent().expect("a link has a parent"))?;
        std::os::unix::fs::symlink(target, &at)?;
    }
    Ok(())
}

/// Warnings for the links that reach outside the input: a CUDA file read through and
/// instrumented (`instrumented(rel)`), whose original other builds may still reach; a folder,
/// whose CUDA files the mirror reaches unfenced. `shown` is how a path is named.
pub fn outside_warnings(
    input: &InputTree,
    instrumented: impl Fn(&Path) -> bool,
    shown: impl Fn(&Path) -> PathBuf,
) -> Vec<String> {
    let mut out = Vec::new();
    for (rel, target) in &input.outside {
        let (link, to) = (shown(rel).display().to_string(), target.display());
        if input.files.binary_search(rel).is_ok() {
            if instrumented(rel) {
                out.push(format!(
                    "{link} is a link to {to}, outside the input: the mirror has an instrumented copy, the file itself has no fences (a build that reaches it by its own path compiles it unfenced)"
                ));
            }
        } else if target.is_dir() {
            out.push(format!(
                "{link} is a link to the folder {to}, outside the input: the mirror links to it as it is, so its CUDA files are not instrumented (give it to wmfix as an input to instrument them)"
            ));
        }
    }
    out
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

/// Copies the files of `input` to `dest`, keeping permission bits, and mirrors its links.
pub fn copy_files(input: &InputTree, dest: &Path) -> std::io::Result<()> {
    for rel in &input.files {
        let to = dest.join(rel);
        std::fs::create_dir_all(to.parent().expect("a file has a parent"))?;
        std::fs::copy(input.root.join(rel), &to)?;
    }
    make_links(input, dest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_climb_to_the_common_folder() {
        let rel = |from: &str, to: &str| relative(Path::new(from), Path::new(to));
        assert_eq!(rel("", "real/k.cuh"), Path::new("real/k.cuh"));
        assert_eq!(rel("sub", "real/k.cuh"), Path::new("../real/k.cuh"));
        assert_eq!(rel("a/b", "a/c/k.cuh"), Path::new("../c/k.cuh"));
        assert_eq!(rel("a/b", "a/b/k.cuh"), Path::new("k.cuh"));
        assert_eq!(rel("a", ""), Path::new(".."));
        assert_eq!(rel("", ""), Path::new("."));
    }
}

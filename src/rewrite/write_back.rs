//! Preprocessed mode's build: the preprocessed translation units only FIND the sites; each
//! edit is written back, through the line markers, into a copy of the file its line came from
//! (`nvcc -E`'s text is not a TU nvcc compiles again: its host and device passes preprocess
//! differently). An edit is placed by matching the tokens of its preprocessed line with those
//! of the original line: it must have the same tokens before it (or after it), so edits inside
//! a macro's expansion are not placed. A fence's edits are placed together or not at all, and a
//! line written from one inclusion of a header is not written again from another.

use crate::fences::id::{FenceId, Ids};
use crate::fences::record::FenceRecord;
use crate::fences::scope::FenceScope;
use crate::rewrite::edits::Edit;
use crate::rewrite::preprocess::{self, LineMap};
use crate::rewrite::render::{self, Group, Planned};
use crate::rewrite::source::{Encoding, SourceFile};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// A file a translation unit came from, as read from disk.
pub struct Origin {
    pub text: String,
    pub encoding: Encoding,
    starts: Vec<usize>,
}

impl Origin {
    fn read(path: &Path) -> Option<Origin> {
        let (text, encoding) = Encoding::decode(std::fs::read(path).ok()?);
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Some(Origin {
            text,
            encoding,
            starts,
        })
    }

    /// The 1-based line `n` without its line break, and where it starts.
    fn line(&self, n: usize) -> Option<(usize, &str)> {
        let start = *self.starts.get(n.checked_sub(1)?)?;
        let end = self.starts.get(n).map_or(self.text.len(), |&e| e - 1);
        Some((start, &self.text[start..end]))
    }
}

/// Every translation unit's edits, placed in the files they came from.
#[derive(Default)]
pub struct WrittenBack {
    /// Absolute path of each original file that gets edits, its text and the edits.
    pub files: BTreeMap<PathBuf, (Origin, Vec<Edit>)>,
    /// Fences whose edits could not be placed (inside a macro's expansion, or a line already
    /// written from another inclusion), with the file:line they came from: listed in
    /// fences.json, absent from the build.
    pub unplaced: Vec<(FenceId, String)>,
    /// Other edits (thread ids, launches) not placed.
    pub unplaced_fixed: usize,
}

/// Places the edit groups of each preprocessed TU (`file`, run in `dir`) in its original files.
pub fn write_back(dir: &Path, tus: Vec<(&SourceFile, Vec<Group>)>) -> WrittenBack {
    let mut out = WrittenBack::default();
    let mut origins: HashMap<PathBuf, Option<Origin>> = HashMap::new();
    let mut claims: HashMap<(PathBuf, usize), (usize, usize)> = HashMap::new();
    let mut edits: BTreeMap<PathBuf, Vec<Edit>> = BTreeMap::new();
    for (tu, (file, groups)) in tus.into_iter().enumerate() {
        let map = LineMap::new(&file.text);
        for group in groups {
            let placed = place_group(dir, file, &map, &group, &mut origins);
            let free = placed.as_ref().is_some_and(|placed| {
                placed.iter().all(|(abs, line, seg, _)| {
                    claims
                        .get(&(abs.clone(), *line))
                        .is_none_or(|&c| c == (tu, *seg))
                })
            });
            match placed {
                Some(placed) if free => {
                    for (abs, line, seg, edit) in placed {
                        claims.insert((abs.clone(), line), (tu, seg));
                        edits.entry(abs).or_default().push(edit);
                    }
                }
                _ => match group.fence {
                    Some(id) => {
                        let (line, _) = file.line_col(group.edits[0].start);
                        let at = map.origin(line).map_or_else(
                            || format!("{}:{line}", file.shown.display()),
                            |(f, l)| format!("{}:{l}", f.display()),
                        );
                        out.unplaced.push((id, at));
                    }
                    None => out.unplaced_fixed += 1,
                },
            }
        }
    }
    for (abs, e) in edits {
        if let Some(origin) = origins.remove(&abs).flatten() {
            out.files.insert(abs, (origin, e));
        }
    }
    out
}

/// Where a written-back file goes: a file of the input tree goes to its place in `tree/`; a
/// library header to `library/<n>/<path from its include folder>`, one `n` per include folder
/// (deepest first, so CCCL's `include/cccl` comes before `include`).
pub struct Outputs {
    /// Path inside `tree/` and bytes.
    pub files: Vec<(PathBuf, Vec<u8>)>,
    /// Each include folder overlaid: the original folder and its number.
    pub roots: Vec<(PathBuf, usize)>,
}

/// The written-back files with their edits applied; `prologue` gives each one's first lines
/// from its path inside `tree/`.
pub fn outputs(
    root: &Path,
    library: &Path,
    written: WrittenBack,
    prologue: impl Fn(&Path) -> String,
) -> Result<Outputs, crate::rewrite::edits::Overlap> {
    let mut placed = Vec::new();
    let mut roots: Vec<PathBuf> = Vec::new();
    for (abs, (origin, edits)) in written.files {
        let (shown, own) = preprocess::shown(root, root, &abs);
        if !own {
            let base: PathBuf = abs
                .components()
                .take(abs.components().count() - shown.components().count())
                .collect();
            if !roots.contains(&base) {
                roots.push(base.clone());
            }
            placed.push((Some(base), shown, origin, edits));
        } else {
            placed.push((None, shown, origin, edits));
        }
    }
    roots.sort_by_key(|r| std::cmp::Reverse(r.components().count()));
    let mut files = Vec::new();
    for (base, shown, origin, mut edits) in placed {
        let rel = match base {
            Some(b) => {
                let n = roots.iter().position(|r| *r == b).unwrap_or(0);
                library.join(n.to_string()).join(shown)
            }
            None => shown,
        };
        edits.push(Edit::insert(
            0,
            crate::rewrite::edits::Slot::open(0, false),
            prologue(&rel),
        ));
        let text = crate::rewrite::edits::apply(&origin.text, edits)?;
        files.push((rel, origin.encoding.encode(&text)));
    }
    let roots = roots.into_iter().enumerate().map(|(n, r)| (r, n)).collect();
    Ok(Outputs { files, roots })
}

/// Each fence record's file and line as where its code came from (through the line markers of
/// its translation unit); the fences in files outside `root` (library headers) are returned.
pub fn map_back(root: &Path, planned: &[Planned], fences: &mut [FenceRecord]) -> Ids {
    let maps: HashMap<&Path, LineMap> = planned
        .iter()
        .map(|p| (p.file.rel.as_path(), LineMap::new(&p.file.text)))
        .collect();
    let mut library = Ids::new();
    for f in fences {
        let Some(map) = maps.get(f.file.as_path()) else {
            continue;
        };
        let Some((file, line)) = map.origin(f.line) else {
            continue;
        };
        let (shown, own) = preprocess::shown(root, root, file);
        for p in &mut f.placements {
            p.line = map.origin(p.line).map_or(p.line, |(_, l)| l);
        }
        f.file = shown;
        f.line = line;
        if !own {
            library.insert(f.id);
        }
    }
    library
}

/// A library fence as a finding for that library: `path:line (fence N)`.
pub fn finding(f: &FenceRecord) -> String {
    format!("{}:{} (fence {})", f.file.display(), f.line, f.id)
}

/// Preprocessed mode's hardened sources: the `kept` fences as plain CUDA fences, written back
/// into the files under `root` exactly where the build writes their `WMFIX_FENCE`s back.
pub struct Hardened {
    /// Each file under `root` that gets fences: its path there, the original and the new text.
    pub files: Vec<(PathBuf, Origin, String)>,
    /// Kept fences in library headers (outside `root`), as findings for that library.
    pub library: Vec<String>,
    /// Kept fences of files under `root` that the build did not write back either (inside a
    /// macro's expansion, or a header's later inclusion): `fence N (file:line)`.
    pub unplaced: Vec<String>,
}

/// The kept fences of the preprocessed translation units `planned` written back into the
/// user's files under `root`; those of library headers are findings, not edits.
pub fn harden(
    root: &Path,
    planned: &mut [Planned],
    kept: &Ids,
    after_loop: &Ids,
    scope: FenceScope,
) -> Result<Hardened, crate::rewrite::edits::Overlap> {
    // The build's own write-back: a fence it did not place was never switched on in a run, so
    // it is not placed here either, and no other inclusion's fence takes its line.
    let (groups, mut records) = render::edit_groups(planned);
    let built = write_back(root, with_files(planned, groups));
    let in_library = map_back(root, planned, &mut records);
    let absent: Ids = built.unplaced.iter().map(|(id, _)| *id).collect();
    let patched = |g: &Group| {
        g.fence
            .is_some_and(|id| !absent.contains(&id) && !in_library.contains(&id))
    };
    let groups = render::hardened_groups(planned, kept, after_loop, scope)
        .into_iter()
        .map(|g| Some(g.into_iter().filter(patched).collect()))
        .collect();
    let written = write_back(root, with_files(planned, groups));
    let mut files = Vec::new();
    for (abs, (origin, edits)) in written.files {
        let (rel, own) = preprocess::shown(root, root, &abs);
        if own {
            let text = crate::rewrite::edits::apply(&origin.text, edits)?;
            files.push((rel, origin, text));
        }
    }
    let library = records
        .iter()
        .filter(|r| kept.contains(&r.id) && in_library.contains(&r.id))
        .map(finding)
        .collect();
    let unplaced = built
        .unplaced
        .iter()
        .filter(|(id, _)| kept.contains(id) && !in_library.contains(id))
        .map(|(id, at)| format!("fence {id} ({at})"))
        .collect();
    Ok(Hardened {
        files,
        library,
        unplaced,
    })
}

/// Each translation unit with its groups, where it has any.
pub fn with_files(
    planned: &[Planned],
    groups: Vec<Option<Vec<Group>>>,
) -> Vec<(&crate::rewrite::source::SourceFile, Vec<Group>)> {
    planned
        .iter()
        .zip(groups)
        .filter_map(|(p, g)| g.map(|g| (&p.file, g)))
        .collect()
}

/// Makes `dest` a copy of include folder `src` in which only the files on the way to the
/// written-back ones are real folders; every other entry is a link to the original, so a header
/// reached through `dest` includes its neighbours through `dest` too (and the rewritten copy).
pub fn overlay(src: &Path, dest: &Path, written: &[PathBuf]) -> std::io::Result<()> {
    std::fs::create_dir_all(dest)?;
    for entry in std::fs::read_dir(src)? {
        let entry = entry?;
        let name = PathBuf::from(entry.file_name());
        let to = dest.join(&name);
        let inner: Vec<PathBuf> = written
            .iter()
            .filter_map(|w| w.strip_prefix(&name).ok())
            .filter(|w| !w.as_os_str().is_empty())
            .map(Path::to_path_buf)
            .collect();
        if written.contains(&name) || to.exists() {
            continue;
        }
        if inner.is_empty() {
            std::os::unix::fs::symlink(entry.path(), &to)?;
        } else {
            overlay(&entry.path(), &to, &inner)?;
        }
    }
    Ok(())
}

type Placed = (PathBuf, usize, usize, Edit);

/// Each edit of a group as (original file, its line, marker segment, the edit there), or `None`
/// when any one cannot be placed.
fn place_group(
    dir: &Path,
    file: &SourceFile,
    map: &LineMap,
    group: &Group,
    origins: &mut HashMap<PathBuf, Option<Origin>>,
) -> Option<Vec<Placed>> {
    let mut placed = Vec::with_capacity(group.edits.len());
    for e in &group.edits {
        let (abs, line, seg, start) = place(dir, file, map, e.start, false, origins)?;
        let end = if e.end == e.start {
            start
        } else {
            let (abs_end, _, _, end) = place(dir, file, map, e.end, true, origins)?;
            let origin = origins.get(&abs)?.as_ref()?;
            let same = |a: &str, b: &str| a.split_whitespace().eq(b.split_whitespace());
            if abs_end != abs
                || end < start
                || !same(&file.text[e.start..e.end], &origin.text[start..end])
            {
                return None;
            }
            end
        };
        placed.push((
            abs,
            line,
            seg,
            Edit {
                start,
                end,
                ..e.clone()
            },
        ));
    }
    // A group's edits stay in one file (a fence and its braces).
    placed
        .windows(2)
        .all(|w| w[0].0 == w[1].0)
        .then_some(placed)
}

/// Where byte `at` of the preprocessed text is in its original file: (absolute path, line,
/// marker segment, byte). `end`: `at` ends a replaced range.
fn place(
    dir: &Path,
    file: &SourceFile,
    map: &LineMap,
    at: usize,
    end: bool,
    origins: &mut HashMap<PathBuf, Option<Origin>>,
) -> Option<(PathBuf, usize, usize, usize)> {
    let (line, col) = file.line_col(at);
    let (seg, from, oline) = map.segment(line)?;
    let abs = dir.join(from);
    let abs = abs.canonicalize().unwrap_or(abs);
    let origin = origins
        .entry(abs.clone())
        .or_insert_with(|| Origin::read(&abs))
        .as_ref()?;
    let (ostart, otext) = origin.line(oline)?;
    let pstart = at + 1 - col;
    let pend = file.text[pstart..]
        .find('\n')
        .map_or(file.text.len(), |i| pstart + i);
    let col = map_column(&file.text[pstart..pend], otext, col - 1, end)?;
    Some((abs, oline, seg, ostart + col))
}

/// Byte `col` of preprocessed line `p` as a byte of original line `o`, when the tokens before
/// it (or, failing that, after it) are the same on both lines. `end`: `col` ends a token.
pub fn map_column(p: &str, o: &str, col: usize, end: bool) -> Option<usize> {
    let tp = tokens(p, false);
    let to = tokens(o, true);
    if tp.iter().any(|t| t.0 < col && col < t.1) {
        return None;
    }
    let same = |a: (usize, usize), b: (usize, usize)| p[a.0..a.1] == o[b.0..b.1];
    let prefix = tp
        .iter()
        .zip(&to)
        .take_while(|(a, b)| same(**a, **b))
        .count();
    let suffix = tp
        .iter()
        .rev()
        .zip(to.iter().rev())
        .take_while(|(a, b)| same(**a, **b))
        .count();
    let before = tp.iter().take_while(|t| t.1 <= col).count();
    let after = tp.len() - before;
    if end {
        // The token ending at `col` and all before it match, or it and all after it.
        return if before >= 1 && before <= prefix {
            Some(to[before - 1].1)
        } else if before >= 1 && after < suffix {
            Some(to[to.len() - after - 1].1)
        } else {
            None
        };
    }
    if before == 0 {
        // Nothing on this line precedes it: the original line's first token, or its start.
        return Some(to.first().map_or(0, |t| t.0));
    }
    if before < prefix && col > tp[before - 1].1 {
        // After a space (`return *p`): before the next token, which matches too.
        Some(to[before].0)
    } else if before <= prefix {
        // After a space in both (`return MACRO(...)`): after the original's space too.
        let end = to[before - 1].1;
        let space = o[end..].len() - o[end..].trim_start().len();
        Some(if col > tp[before - 1].1 {
            end + space
        } else {
            end
        })
    } else if after == 0 && suffix > 0 {
        // After everything on a line that ends as the original does.
        Some(to[to.len() - 1].1)
    } else if after > 0 && after <= suffix {
        Some(to[to.len() - after].0)
    } else {
        None
    }
}

/// Tokens of one line as byte ranges: identifiers and numbers, string and character literals,
/// single punctuation characters; whitespace and (in original text) comments skipped.
fn tokens(line: &str, comments: bool) -> Vec<(usize, usize)> {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if comments && b[i..].starts_with(b"//") {
            break;
        } else if comments && b[i..].starts_with(b"/*") {
            i = line[i + 2..].find("*/").map_or(b.len(), |k| i + 2 + k + 2);
        } else if c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80 {
            let s = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] >= 0x80) {
                i += 1;
            }
            out.push((s, i));
        } else if c == b'"' || c == b'\'' {
            let s = i;
            i += 1;
            while i < b.len() && b[i] != c {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i = (i + 1).min(b.len());
            out.push((s, i));
        } else {
            // One byte: all punctuation is ASCII, and a non-ASCII byte starts an identifier.
            out.push((i, i + 1));
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_map_across_layout_and_comments() {
        // gcc -E drops comments and may change spacing; the tokens are the same.
        let o = "  x[i] =  v;   // store";
        let p = "  x[i] = v;";
        assert_eq!(
            map_column(p, o, p.len(), false),
            Some(o.find(';').unwrap() + 1)
        );
        assert_eq!(map_column(p, o, 2, false), Some(2));
        // A replaced token: start and end.
        assert_eq!(map_column(p, o, 2, false), Some(2));
        assert_eq!(map_column(p, o, 3, true), Some(3));
    }

    #[test]
    fn edits_inside_a_macro_expansion_are_not_placed() {
        let o = "STORE(x, i); y = 1;";
        let p = "x[i] = 0; y = 1;";
        // After `x[i]`: inside the expansion of STORE.
        assert_eq!(map_column(p, o, 4, false), None);
        // After `x[i] = 0;`: after the whole statement STORE made, where the same tokens follow.
        assert_eq!(map_column(p, o, 9, false), Some(13));
        // After a space: before the next token.
        assert_eq!(map_column("return *p;", "return  *p;", 7, false), Some(8));
        // After a space, before a macro: after the original's space.
        assert_eq!(
            map_column("return ::ns::f();", "return NS::f();", 7, false),
            Some(7)
        );
        // After `y = 1;`: the tokens after match, so it maps.
        assert_eq!(map_column(p, o, p.len(), false), Some(o.len()));
        // Before `y`: the tokens after it match.
        assert_eq!(map_column(p, o, 10, false), Some(o.find('y').unwrap()));
        // A line the macro call continues on the next line: its end does not match.
        assert_eq!(map_column("f(a, b);", "f(a,", 8, false), None);
    }

    /// A user's `.cu` including the user's `q.h` twice (no guard) and a library header from an
    /// `include/` folder outside the application's, as `nvcc -E` writes the TU.
    fn harden_fixture(kept: &[usize]) -> Hardened {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("app");
        let lib = tmp.path().join("lib/include");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&lib).unwrap();
        let q = "__device__ void p(int *d) {\n  d[0] = 1;\n}\n";
        std::fs::write(root.join("q.h"), q).unwrap();
        let l = "__device__ void put(int *c) {\n  c[0] = 2;\n}\n";
        std::fs::write(lib.join("l.cuh"), l).unwrap();
        let k = "#include \"q.h\"\n#include \"q.h\"\n#include <l.cuh>\n__global__ void k(int *a) {\n  a[0] = 3;\n}\n";
        std::fs::write(root.join("k.cu"), k).unwrap();
        let lib = lib.join("l.cuh");
        let tu = format!(
            "# 1 \"k.cu\"\n# 1 \"q.h\" 1\n{q}# 2 \"k.cu\" 2\n# 1 \"q.h\" 1\n{q}# 3 \"k.cu\" 2\n# 1 \"{}\" 1\n{l}# 4 \"k.cu\" 2\n__global__ void k(int *a) {{\n  a[0] = 3;\n}}\n",
            lib.display()
        );
        let file = SourceFile::new("k.cu".into(), "k.cu".into(), tu);
        let mut planned = render::plan_files(vec![file], Default::default());
        let kept = kept.iter().copied().map(FenceId).collect();
        harden(&root, &mut planned, &kept, &Ids::new(), FenceScope::Device).unwrap()
    }

    #[test]
    fn kept_fences_go_back_into_the_users_files_and_library_ones_are_findings() {
        // Fences in TU order: q.h's store twice (one per inclusion), the library's, k.cu's.
        let all = harden_fixture(&[0, 1, 2, 3]);
        let files: Vec<(String, &str)> = all
            .files
            .iter()
            .map(|(rel, _, text)| (rel.display().to_string(), text.as_str()))
            .collect();
        assert_eq!(
            files,
            [
                (
                    "k.cu".to_string(),
                    "#include \"q.h\"\n#include \"q.h\"\n#include <l.cuh>\n__global__ void k(int *a) {\n  a[0] = 3; __threadfence(); /* wmfix fence 3: after store `a[0] = 3;` */\n}\n"
                ),
                (
                    "q.h".to_string(),
                    "__device__ void p(int *d) {\n  d[0] = 1; __threadfence(); /* wmfix fence 0: after store `d[0] = 1;` */\n}\n"
                ),
            ]
        );
        assert_eq!(all.library, ["l.cuh:2 (fence 2)"]);
        // The second inclusion's fence was not in the build either: listed, not placed.
        assert_eq!(all.unplaced, ["fence 1 (q.h:2)"]);
        // Kept alone, it still takes no line: the build never switched it on there.
        let second = harden_fixture(&[1]);
        assert!(second.files.is_empty());
        assert_eq!(second.unplaced, ["fence 1 (q.h:2)"]);
        // Only the library's: no file changes.
        let library = harden_fixture(&[2]);
        assert!(library.files.is_empty() && library.unplaced.is_empty());
        assert_eq!(library.library, ["l.cuh:2 (fence 2)"]);
    }
}

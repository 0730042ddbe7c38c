//! Source lines around a kept fence, read from the application's files as they are now. The
//! reduction recorded a digest of each source (`reduce.json`'s `sources`, as `digest::Fnv` of
//! the decoded text); a file whose digest differs has changed since, and the access is looked
//! for near its recorded line, so that the lines shown are the fence's or say that they may not
//! be.

use crate::digest::Fnv;
use crate::reduce::patch::SourceDigests;
use std::path::{Path, PathBuf};

/// Lines shown before and after the fence's.
const CONTEXT: usize = 3;
/// How far from its recorded line a changed file's access is looked for.
const SEARCH: usize = 60;

/// The application's sources, where they are now.
pub struct Sources<'a> {
    pub root: Option<PathBuf>,
    pub recorded: &'a SourceDigests,
}

/// Some lines of a file, with the fence's line and a note when they may not be its.
#[derive(Debug, PartialEq)]
pub struct Excerpt {
    /// (line number from 1, text), in order.
    pub lines: Vec<(usize, String)>,
    /// The line the fence follows, as shown.
    pub at: usize,
    /// Lines where the fence goes, as shown (`fences.patch`'s placements).
    pub placed: Vec<usize>,
    pub note: Option<String>,
}

/// `file:line:column` split into the file and the line.
pub fn file_and_line(location: &str) -> Option<(&str, usize)> {
    let mut parts = location.rsplitn(3, ':');
    let (_column, line, file) = (parts.next()?, parts.next()?, parts.next()?);
    Some((file, line.parse().ok()?))
}

/// The text of a file as wmfix reads sources: UTF-8, else Latin-1.
fn decode(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| e.into_bytes().iter().map(|&b| b as char).collect())
}

impl Sources<'_> {
    /// The lines around `line` of `file` (relative to the application's folder), where the
    /// fence after `access` was placed at the lines `placed`; None with a reason when the
    /// file cannot be read.
    pub fn excerpt(
        &self,
        file: &str,
        line: usize,
        access: &str,
        placed: &[usize],
    ) -> Result<Excerpt, String> {
        let root = self.root.as_deref().ok_or_else(|| {
            "the application's sources were not found: give its folder (`wmfix report DIR`)"
                .to_string()
        })?;
        let path = root.join(file);
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let text = decode(bytes);
        let lines: Vec<&str> = text.lines().collect();
        let (shift, note) = self.shift(Path::new(file), &text, &lines, line, access);
        let at = line.saturating_add_signed(shift);
        let placed: Vec<usize> = placed
            .iter()
            .map(|p| p.saturating_add_signed(shift))
            .collect();
        let first = placed.iter().copied().chain([at]).min().unwrap_or(at);
        let last = placed.iter().copied().chain([at]).max().unwrap_or(at);
        let from = first.saturating_sub(CONTEXT).max(1);
        let to = (last + CONTEXT).min(lines.len());
        if at == 0 || at > lines.len() {
            return Err(format!("{file} has {} lines, not line {at}", lines.len()));
        }
        Ok(Excerpt {
            lines: (from..=to).map(|n| (n, lines[n - 1].to_string())).collect(),
            at,
            placed,
            note,
        })
    }

    /// How far the access moved, and a note, when the file changed since the reduction.
    fn shift(
        &self,
        file: &Path,
        text: &str,
        lines: &[&str],
        line: usize,
        access: &str,
    ) -> (isize, Option<String>) {
        let Some(recorded) = self.recorded.get(file) else {
            return (0, None);
        };
        if *recorded == Fnv::of(text.as_bytes()) {
            return (0, None);
        }
        let changed = format!("{} changed since the reduction", file.display());
        let first = access.lines().next().unwrap_or("").trim();
        match nearest(lines, line, first) {
            Some(n) if n == line => (
                0,
                Some(format!("{changed}; the access is still at line {line}")),
            ),
            Some(n) => (
                n as isize - line as isize,
                Some(format!(
                    "{changed}; the access is now at line {n} (recorded at {line})"
                )),
            ),
            None => (
                0,
                Some(format!(
                    "{changed} and the access is no longer near line {line}: these are the file's lines now, which may not be the fence's"
                )),
            ),
        }
    }
}

/// The line nearest `line` (1-based) that holds `needle`, within `SEARCH` lines.
fn nearest(lines: &[&str], line: usize, needle: &str) -> Option<usize> {
    if needle.is_empty() {
        return None;
    }
    let holds = |n: usize| n >= 1 && n <= lines.len() && lines[n - 1].contains(needle);
    (0..=SEARCH).find_map(|d| {
        [line.checked_sub(d), line.checked_add(d)]
            .into_iter()
            .flatten()
            .find(|&n| holds(n))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) {
        std::fs::write(dir.join(name), text).unwrap();
    }

    fn numbered(n: usize) -> String {
        (1..=n).map(|i| format!("line {i};\n")).collect()
    }

    #[test]
    fn locations_split_from_the_right() {
        assert_eq!(file_and_line("bh.cu:96:33"), Some(("bh.cu", 96)));
        assert_eq!(file_and_line("a:b/x.cu:7:1"), Some(("a:b/x.cu", 7)));
        assert_eq!(file_and_line("x.cu"), None);
    }

    #[test]
    fn an_unchanged_file_shows_the_recorded_line_with_context() {
        let tmp = tempfile::tempdir().unwrap();
        let text = numbered(20);
        write(tmp.path(), "k.cu", &text);
        let recorded = [(PathBuf::from("k.cu"), Fnv::of(text.as_bytes()))].into();
        let s = Sources {
            root: Some(tmp.path().to_path_buf()),
            recorded: &recorded,
        };
        let e = s.excerpt("k.cu", 10, "line 10;", &[10]).unwrap();
        assert_eq!(e.at, 10);
        assert_eq!(e.note, None);
        assert_eq!(e.lines.first().unwrap().0, 7);
        assert_eq!(e.lines.last(), Some(&(13, "line 13;".to_string())));
        // Near the end of the file the context stops there.
        let e = s.excerpt("k.cu", 19, "line 19;", &[20]).unwrap();
        assert_eq!(e.lines.last().unwrap().0, 20);
    }

    #[test]
    fn a_changed_file_shows_where_the_access_moved_or_says_it_is_gone() {
        let tmp = tempfile::tempdir().unwrap();
        write(
            tmp.path(),
            "k.cu",
            &format!("// a new first line\n{}", numbered(20)),
        );
        let recorded = [(PathBuf::from("k.cu"), "0000000000000000".to_string())].into();
        let s = Sources {
            root: Some(tmp.path().to_path_buf()),
            recorded: &recorded,
        };
        let e = s.excerpt("k.cu", 10, "line 10;", &[10]).unwrap();
        assert_eq!((e.at, e.placed.clone()), (11, vec![11]));
        assert!(e.note.unwrap().contains("now at line 11 (recorded at 10)"));
        let e = s.excerpt("k.cu", 10, "gone();", &[10]).unwrap();
        assert_eq!(e.at, 10);
        assert!(e.note.unwrap().contains("may not be the fence's"));
    }

    #[test]
    fn missing_sources_say_why() {
        let recorded = SourceDigests::new();
        let none = Sources {
            root: None,
            recorded: &recorded,
        };
        assert!(
            none.excerpt("k.cu", 1, "x", &[])
                .unwrap_err()
                .contains("wmfix report DIR")
        );
        let tmp = tempfile::tempdir().unwrap();
        let s = Sources {
            root: Some(tmp.path().to_path_buf()),
            recorded: &recorded,
        };
        assert!(s.excerpt("k.cu", 1, "x", &[]).unwrap_err().contains("k.cu"));
        write(tmp.path(), "k.cu", "one line\n");
        assert!(
            s.excerpt("k.cu", 5, "x", &[])
                .unwrap_err()
                .contains("has 1 lines")
        );
    }
}

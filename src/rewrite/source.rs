//! One source file: its text, its path relative to the tree being instrumented, and line/column
//! look-ups for messages.

use std::path::PathBuf;

pub struct SourceFile {
    /// Path relative to the root of the tree being instrumented.
    pub rel: PathBuf,
    /// Path as the user gave it, for messages.
    pub shown: PathBuf,
    pub text: String,
    line_starts: Vec<usize>,
}

impl SourceFile {
    pub fn new(rel: PathBuf, shown: PathBuf, text: String) -> SourceFile {
        let line_starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        SourceFile {
            rel,
            shown,
            text,
            line_starts,
        }
    }

    /// 1-based line and column (in bytes) of a byte offset.
    pub fn line_col(&self, byte: usize) -> (usize, usize) {
        let line = self.line_starts.partition_point(|&s| s <= byte);
        (line, byte - self.line_starts[line - 1] + 1)
    }

    /// `path:line:col`, the form editors and compilers use.
    pub fn location(&self, byte: usize) -> String {
        let (l, c) = self.line_col(byte);
        format!("{}:{l}:{c}", self.shown.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_are_one_based() {
        let f = SourceFile::new("a.cu".into(), "x/a.cu".into(), "ab\ncd\n\nef".into());
        assert_eq!(f.line_col(0), (1, 1));
        assert_eq!(f.line_col(1), (1, 2));
        assert_eq!(f.line_col(3), (2, 1));
        assert_eq!(f.line_col(7), (4, 1));
        assert_eq!(f.location(4), "x/a.cu:2:2");
    }
}

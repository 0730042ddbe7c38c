//! Preprocessed mode: each `.cu` translation unit run through the program's own compiler front
//! end (`nvcc -E` with the build's flags), so that device code behind macros and in library
//! headers (CUB, thrust) is instrumented where it is compiled. The line markers of the
//! preprocessed text (`# 12 "cub/agent/x.cuh"`) map every fence back to the file:line it came
//! from.

use crate::exit_code::{self, fail};
use anyhow::Result;
use std::path::{Path, PathBuf};

/// How to preprocess one translation unit: `command` then the file's path; stdout is the text.
#[derive(Clone, Debug, Default)]
pub struct Preprocessor {
    /// Program and arguments, for example `nvcc -E -x cu -arch=sm_90 -I include`.
    pub command: Vec<String>,
    /// Extra environment (nvcc on PATH).
    pub env: Vec<(String, String)>,
}

impl Preprocessor {
    /// The preprocessed text of `file`, run in `dir` (the tree's root, where the build runs).
    pub fn run(&self, dir: &Path, file: &Path) -> Result<Vec<u8>> {
        let (program, args) = self
            .command
            .split_first()
            .ok_or_else(|| fail(exit_code::USAGE, "--preprocess needs a command".to_string()))?;
        let out = std::process::Command::new(program)
            .args(args)
            .arg(file)
            .current_dir(dir)
            .envs(self.env.iter().cloned())
            .output()
            .map_err(|e| fail(exit_code::NO_INPUT, format!("{program}: {e}")))?;
        if !out.status.success() {
            return Err(fail(
                exit_code::BAD_INPUT,
                format!(
                    "{}: preprocessing failed ({}):\n{}",
                    file.display(),
                    self.command.join(" "),
                    String::from_utf8_lossy(&out.stderr).trim_end()
                ),
            ));
        }
        Ok(out.stdout)
    }
}

/// The part of a preprocessed translation unit that the TU itself makes: from the marker that
/// starts `file`'s line 1 on. What comes before (`stdc-predef.h`, the `cuda_runtime.h` nvcc
/// includes by itself) is included again when the instrumented TU is compiled; kept, it would
/// be defined twice.
pub fn own_text(text: Vec<u8>, file: &Path) -> Vec<u8> {
    let want = format!("# 1 \"{}\"", file.display());
    let mut at = 0;
    for line in text.split_inclusive(|&b| b == b'\n') {
        if line.starts_with(want.as_bytes()) {
            return text[at..].to_vec();
        }
        at += line.len();
    }
    text
}

/// The line markers of a preprocessed text: from each marker's next line on, lines come from
/// `file` starting at `line`.
pub struct LineMap {
    /// (0-based line of the preprocessed text after the marker, file, its line there).
    marks: Vec<(usize, PathBuf, usize)>,
}

impl LineMap {
    pub fn new(text: &str) -> LineMap {
        let mut marks = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if let Some((n, file)) = marker(line) {
                marks.push((i + 1, file, n));
            }
        }
        LineMap { marks }
    }

    /// The file and 1-based line that 1-based line `line` of the preprocessed text came from.
    pub fn origin(&self, line: usize) -> Option<(&Path, usize)> {
        self.segment(line).map(|(_, file, n)| (file, n))
    }

    /// As `origin`, with the index of the marker it follows: lines of one inclusion of a
    /// header are under that inclusion's markers only.
    pub fn segment(&self, line: usize) -> Option<(usize, &Path, usize)> {
        let row = line.checked_sub(1)?;
        let at = self.marks.partition_point(|m| m.0 <= row).checked_sub(1)?;
        let (start, file, n) = &self.marks[at];
        Some((at, file.as_path(), n + (row - start)))
    }
}

/// `# 12 "file" 2` or `#line 12 "file"`: the line number and file.
fn marker(line: &str) -> Option<(usize, PathBuf)> {
    let rest = line.strip_prefix('#')?.trim_start();
    let rest = rest.strip_prefix("line").unwrap_or(rest).trim_start();
    let digits = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let n: usize = rest[..digits].parse().ok()?;
    let quoted = rest[digits..].trim_start().strip_prefix('"')?;
    let file = &quoted[..quoted.find('"')?];
    Some((n, PathBuf::from(file)))
}

/// How a file a marker names is shown: relative to the tree's root when it is inside it, else
/// from its first `include/` folder on, past CCCL's own `cccl/` folder
/// (`cub/agent/single_pass_scan_operators.cuh`), else as is.
pub fn shown(root: &Path, dir: &Path, file: &Path) -> (PathBuf, bool) {
    let abs = dir.join(file);
    let abs = abs.canonicalize().unwrap_or(abs);
    if let Ok(rel) = abs.strip_prefix(root) {
        return (rel.to_path_buf(), true);
    }
    let parts: Vec<_> = abs.components().collect();
    match parts.iter().position(|c| c.as_os_str() == "include") {
        Some(i) => {
            let skip = usize::from(parts.get(i + 1).is_some_and(|c| c.as_os_str() == "cccl"));
            (parts[i + 1 + skip..].iter().collect(), false)
        }
        None => (abs, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_map_back_through_markers() {
        let text =
            "# 1 \"k.cu\"\nint a;\n# 1 \"inc/q.h\" 1\nint b;\nint c;\n# 3 \"k.cu\" 2\nint d;\n";
        let map = LineMap::new(text);
        assert_eq!(map.origin(2), Some((Path::new("k.cu"), 1)));
        assert_eq!(map.origin(4), Some((Path::new("inc/q.h"), 1)));
        assert_eq!(map.origin(5), Some((Path::new("inc/q.h"), 2)));
        assert_eq!(map.origin(7), Some((Path::new("k.cu"), 3)));
        assert_eq!(
            marker("#line 7 \"x.cuh\""),
            Some((7, PathBuf::from("x.cuh")))
        );
        assert_eq!(marker("#pragma once"), None);
    }

    #[test]
    fn library_files_are_shown_from_their_include_folder() {
        let (p, own) = shown(
            Path::new("/app"),
            Path::new("/app"),
            Path::new("/venv/lib/cu13/include/cub/agent/scan.cuh"),
        );
        assert_eq!((p, own), (PathBuf::from("cub/agent/scan.cuh"), false));
        let (p, _) = shown(
            Path::new("/app"),
            Path::new("/app"),
            Path::new("/cu13/include/cccl/cub/agent/single_pass_scan_operators.cuh"),
        );
        assert_eq!(p, PathBuf::from("cub/agent/single_pass_scan_operators.cuh"));
    }
}

//! Macros the build defines outside the application's folder, learnt as wmfix.toml's `macros`
//! are (`rewrite/macros.rs`): `-DNAME=value` on the build command, and the object-like
//! `#define`s of the headers in its include folders (`-I`, `-isystem`) that lie outside the
//! folder (a library's `#define LIB_DEVICE __device__ __forceinline__`). Without them the
//! functions a library's qualifier macro declares in the application are not instrumented.
//! A build through `make` or a script names no flags here: wmfix.toml's `macros` then.

use crate::app::config::App;
use std::path::{Path, PathBuf};

/// Headers read at most, and the largest read, per include folder.
const MAX_HEADERS: usize = 20_000;
const MAX_HEADER_BYTES: u64 = 4 << 20;
const HEADER_EXTENSIONS: [&str; 6] = ["h", "hpp", "hxx", "cuh", "inl", "hh"];

/// What the build command of `app` defines outside its folder: name and expansion, those of
/// the command line last (they win over a header's).
pub fn learnt(app: &App) -> Vec<(String, String)> {
    let (defined, folders) = flags(&app.config.build);
    let mut out = Vec::new();
    for folder in folders {
        let dir = app.root.join(&folder);
        let inside = dir.canonicalize().is_ok_and(|d| d.starts_with(&app.root));
        if !inside {
            out.extend(header_macros(&dir));
        }
    }
    out.extend(defined);
    out
}

/// `-D` definitions (name, value; `-DX` alone is `1`) and include folders of a command line.
fn flags(command: &str) -> (Vec<(String, String)>, Vec<PathBuf>) {
    let mut defined = Vec::new();
    let mut folders = Vec::new();
    let mut words = command.split_whitespace();
    while let Some(w) = words.next() {
        let (define, include) = (
            value_of(w, &["-D", "--define-macro"], &mut words),
            value_of(w, &["-I", "-isystem", "--include-path"], &mut words),
        );
        if let Some(d) = define {
            let (name, value) = d.split_once('=').unwrap_or((d.as_str(), "1"));
            let value = value.trim_matches(['"', '\'']);
            defined.push((name.to_string(), value.to_string()));
        } else if let Some(i) = include {
            folders.push(PathBuf::from(i.trim_matches(['"', '\''])));
        }
    }
    (defined, folders)
}

/// The value of flag `w` if it is one of `names`: joined (`-Ifoo`, `--include-path=foo`) or
/// the next word (`-I foo`).
fn value_of<'a>(
    w: &str,
    names: &[&str],
    next: &mut impl Iterator<Item = &'a str>,
) -> Option<String> {
    for name in names {
        if w == *name {
            return next.next().map(str::to_string);
        }
        let Some(joined) = w.strip_prefix(name) else {
            continue;
        };
        let joined = joined.strip_prefix('=').unwrap_or(joined);
        if !joined.is_empty() && (name.len() == 2 || w.as_bytes()[name.len()] == b'=') {
            return Some(joined.to_string());
        }
    }
    None
}

/// The object-like `#define`s of the headers under `dir` whose expansion names something:
/// qualifiers, and macros standing for other macros (a chain to a qualifier).
fn header_macros(dir: &Path) -> Vec<(String, String)> {
    let headers = walkdir::WalkDir::new(dir)
        .follow_links(true)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .filter(|e| {
            let ext = e.path().extension().and_then(|x| x.to_str());
            ext.is_some_and(|x| HEADER_EXTENSIONS.contains(&x))
        })
        .filter(|e| e.metadata().is_ok_and(|m| m.len() <= MAX_HEADER_BYTES))
        .take(MAX_HEADERS);
    let mut out = Vec::new();
    for entry in headers {
        let Ok(bytes) = std::fs::read(entry.path()) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        let named = crate::rewrite::macros::object_defines(&text);
        out.extend(named.into_iter().filter(|(_, body)| names_something(body)));
    }
    out
}

/// An expansion of words only (`__device__ __forceinline__`, `LIB_HOST_DEVICE`), not a value.
fn names_something(body: &str) -> bool {
    let words = body.split_whitespace();
    let word = |w: &str| w.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
    !body.trim().is_empty() && words.clone().all(word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defines_and_include_folders_are_read_from_the_command_line() {
        let (d, i) = flags(
            "nvcc -O3 -DGPU=__device__ -D LIB -I../lib/include -isystem /opt/x --include-path=inc -Ihere -o k k.cu",
        );
        let d: Vec<(&str, &str)> = d.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        assert_eq!(d, [("GPU", "__device__"), ("LIB", "1")]);
        let i: Vec<&str> = i.iter().map(|p| p.to_str().unwrap()).collect();
        assert_eq!(i, ["../lib/include", "/opt/x", "inc", "here"]);
    }

    #[test]
    fn only_macros_outside_the_folder_that_name_something_are_learnt() {
        let tmp = tempfile::tempdir().unwrap();
        let lib = tmp.path().join("lib/include");
        std::fs::create_dir_all(&lib).unwrap();
        std::fs::write(
            lib.join("lib.cuh"),
            "#define LIB_DEVICE __device__ __forceinline__\n#define LIB_SIZE 32\n#define LIB_ALIAS LIB_DEVICE\n",
        )
        .unwrap();
        let app = tmp.path().join("app");
        std::fs::create_dir_all(app.join("inc")).unwrap();
        std::fs::write(app.join("inc/own.cuh"), "#define OWN __device__\n").unwrap();
        let found = header_macros(&lib);
        let names: Vec<&str> = found.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["LIB_DEVICE", "LIB_ALIAS"]);
        let config = crate::app::config::parse(
            "build = \"nvcc -I../lib/include -Iinc -DX=__host__ -c k.cu\"\nrun = \"true\"\n",
        )
        .unwrap();
        let app = App {
            root: app.canonicalize().unwrap(),
            config,
        };
        let learnt: Vec<String> = learnt(&app).into_iter().map(|(n, _)| n).collect();
        assert_eq!(learnt, ["LIB_DEVICE", "LIB_ALIAS", "X"]);
    }
}

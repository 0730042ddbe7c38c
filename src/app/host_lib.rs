//! The runtime's host library (`runtime-cu/wmfix_host.cpp`: environment, profiles, launch plans,
//! coverage and race traces), which every instrumented program loads at its first launch
//! (`runtime-cu/wmfix_glue.cuh`). It is plain C++ with a C interface and no CUDA header, so it
//! is compiled once per host compiler and library source, not per application: into wmfix's
//! cache (`WMFIX_CACHE_DIR`, else `$XDG_CACHE_HOME/wmfix`, else `~/.cache/wmfix`), under a
//! folder named by the digest of its sources, the compiler and its `--version`. A build finds
//! it there, bakes its path into the instrumented tree's `runtime/wmfix_site.h`, and every run
//! wmfix starts gets it as `WMFIX_HOST_LIB` (a program that cannot load it then exits 3).

use crate::digest::Fnv;
use crate::exit_code::{self, fail};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The variable every run gets: where the library is.
pub const VAR: &str = "WMFIX_HOST_LIB";

/// The runtime files the library is built from (the rest is device code and glue).
const SOURCES: [&str; 5] = [
    "wmfix_host.cpp",
    "wmfix_plan.h",
    "wmfix_profile.h",
    "wmfix_common.cuh",
    "wmfix_abi.h",
];

const FLAGS: [&str; 8] = [
    "-std=c++17",
    "-O2",
    "-shared",
    "-fPIC",
    "-fvisibility=hidden",
    "-fvisibility-inlines-hidden",
    "-o",
    "libwmfix_host.so",
];
/// After the source: dlsym (a warm process's server, `run::warm`) is in libdl before glibc 2.34.
const LIBS: [&str; 1] = ["-ldl"];

static CURRENT: OnceLock<PathBuf> = OnceLock::new();

/// The library this process built or found (`ensure`), for the runs' environment.
pub fn current() -> Option<&'static Path> {
    CURRENT.get().map(PathBuf::as_path)
}

/// `(VAR, path)` for a run's environment, once `ensure` has run.
pub fn run_env() -> Option<(String, String)> {
    current().map(|p| (VAR.to_string(), p.display().to_string()))
}

/// The library's path, compiled first when the cache has none for these sources and this
/// compiler. A compiler that fails is a build failure, with its output.
pub fn ensure() -> Result<PathBuf> {
    if let Some(p) = current() {
        return Ok(p.to_path_buf());
    }
    let compiler = compiler()?;
    let version = Command::new(&compiler)
        .arg("--version")
        .output()
        .with_context(|| format!("running {} --version", compiler.display()))?;
    let dir = cache_dir().join(key(&compiler, &version.stdout));
    let lib = dir.join("libwmfix_host.so");
    if !lib.is_file() {
        build(&compiler, &dir, &lib)?;
    }
    Ok(CURRENT.get_or_init(|| lib).clone())
}

/// `CXX`, else `g++` (what nvcc compiles host code with), else `c++`, from PATH.
fn compiler() -> Result<PathBuf> {
    let given = std::env::var_os("CXX").filter(|c| !c.is_empty());
    let names: Vec<std::ffi::OsString> = given
        .into_iter()
        .chain(["g++".into(), "c++".into()])
        .collect();
    let path = std::env::var_os("PATH").unwrap_or_default();
    for name in &names {
        let p = Path::new(name);
        if p.is_absolute() && p.is_file() {
            return Ok(p.to_path_buf());
        }
        if let Some(found) = std::env::split_paths(&path)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
        {
            return Ok(found);
        }
    }
    Err(fail(
        exit_code::BUILD_FAILED,
        "no C++ compiler for wmfix's host library: none of CXX, g++ or c++ is on PATH".to_string(),
    ))
}

/// Where the libraries are kept: `WMFIX_CACHE_DIR`, else `$XDG_CACHE_HOME/wmfix`, else
/// `~/.cache/wmfix`, then `host/`; a temporary folder's when that cannot be made (a read-only
/// home).
fn cache_dir() -> PathBuf {
    let var = |name| {
        std::env::var_os(name)
            .filter(|v: &std::ffi::OsString| !v.is_empty())
            .map(PathBuf::from)
    };
    let base = var("WMFIX_CACHE_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("wmfix")))
        .or_else(|| var("HOME").map(|h| h.join(".cache/wmfix")));
    let fallback = std::env::temp_dir().join(format!("wmfix-cache-{}", uid()));
    base.map(|b| b.join("host"))
        .filter(|d| std::fs::create_dir_all(d).is_ok())
        .unwrap_or_else(|| fallback.join("host"))
}

/// The user's id, for a temporary cache of one's own.
fn uid() -> u32 {
    std::fs::metadata("/proc/self").map_or(0, |m| std::os::unix::fs::MetadataExt::uid(&m))
}

/// The cache folder's name: what the library is made of and by.
fn key(compiler: &Path, version: &[u8]) -> String {
    let mut h = Fnv::default();
    for name in SOURCES {
        h.add(name.as_bytes());
        h.add(source(name).as_bytes());
    }
    h.add(compiler.as_os_str().as_encoded_bytes());
    h.add(version);
    h.add(FLAGS.join(" ").as_bytes());
    h.add(LIBS.join(" ").as_bytes());
    h.hex()
}

fn source(name: &str) -> &'static str {
    crate::rewrite::runtime_headers::RUNTIME_FILES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, text)| *text)
        .expect("the host library's sources are embedded")
}

/// Compiles the library in a folder of its own beside `dir`, then renames the result into
/// place: wmfix processes building at once each make their own, and one rename wins.
fn build(compiler: &Path, dir: &Path, lib: &Path) -> Result<()> {
    let parent = dir.parent().expect("a folder in the cache");
    std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let work = parent.join(format!(".building-{}-{stamp}", std::process::id()));
    let built = compile(compiler, &work).and_then(|()| {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        std::fs::rename(work.join("libwmfix_host.so"), lib)
            .with_context(|| format!("moving the host library to {}", lib.display()))
    });
    let _ = std::fs::remove_dir_all(&work);
    built
}

/// The library's sources written into `work` (a new folder) and compiled there.
fn compile(compiler: &Path, work: &Path) -> Result<()> {
    std::fs::create_dir(work).with_context(|| format!("creating {}", work.display()))?;
    for name in SOURCES {
        std::fs::write(work.join(name), source(name))?;
    }
    let o = Command::new(compiler)
        .current_dir(work)
        .args(FLAGS)
        .arg("wmfix_host.cpp")
        .args(LIBS)
        .output()
        .with_context(|| format!("running {}", compiler.display()))?;
    if !o.status.success() {
        return Err(fail(
            exit_code::BUILD_FAILED,
            format!(
                "compiling wmfix's host library with {} failed:\n{}{}",
                compiler.display(),
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_names_sources_compiler_and_version() {
        let a = key(Path::new("/usr/bin/g++"), b"g++ 12");
        assert_eq!(a, key(Path::new("/usr/bin/g++"), b"g++ 12"));
        assert_ne!(a, key(Path::new("/usr/bin/g++"), b"g++ 13"));
        assert_ne!(a, key(Path::new("/usr/bin/clang++"), b"g++ 12"));
    }
}

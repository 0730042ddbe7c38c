//! The output folder: the one place wmfix writes, deletes and renames.
//!
//! wmfix marks every output folder it makes with a marker file (`.wmfix-output`, as cargo-mutants
//! marks its `mutants.out`) and deletes or renames paths only inside a folder that carries it. An
//! existing folder that is not empty and carries no marker is refused (exit 73) before anything
//! is written; so is an output folder that contains the input (exit 65). Marked folders are never
//! taken as sources (`rewrite::walk`). `OutDir` also holds the lock that keeps one wmfix per folder
//! (`run::claim` builds on it) and knows every path inside:
//!
//! ```text
//! .wmfix-output  .wmfix-lock  build.stamp  fences.json  original/  tree/  runtime/
//! .wmfix-new/{tree/, runtime/, fences.json}  .wmfix-incomplete
//! build-original.log  build-instrumented.log  baseline.log
//! test/{runs.jsonl, summary.json, logs/, replay-ID.log}  test.old/
//! reduce/{journal.jsonl, reduce.json, fences.patch, baseline.log, logs/}
//! cost/{runs.jsonl, cost.json, logs/, build-NAME.log, NAME/}
//! report.html
//! ```
//!
//! A folder made by a wmfix older than the marker is recognised by its layout (see
//! `made_by_old_wmfix`) and marked on first use.
//!
//! This is a leaf module: `insert` (the first stage) writes here too.

use crate::exit_code::{self, fail};
use anyhow::Result;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

pub const MARKER: &str = ".wmfix-output";
const MARKER_TEXT: &str = "wmfix output folder (format 1)\n\
wmfix made this folder: it rewrites and deletes what is inside it. Delete the folder to start afresh.\n";
const LOCK: &str = ".wmfix-lock";
const STAMP: &str = "build.stamp";
const FENCES: &str = "fences.json";
/// `insert`'s new output, written beside the old one and switched in whole.
const STAGING: &str = ".wmfix-new";
/// Present while `insert` switches its new output in: what is there may be a mix of two runs.
const INCOMPLETE: &str = ".wmfix-incomplete";
const INCOMPLETE_TEXT: &str = "wmfix insert stopped while it put its new output in place: tree/, runtime/ and fences.json \
may be a mix of two runs. Do not build tree/: run wmfix insert again (wmfix build, test and reduce instrument again).\n";

/// Every name a wmfix output folder holds at its top level, before and since the marker.
const OWN_NAMES: &[&str] = &[
    MARKER,
    LOCK,
    STAMP,
    FENCES,
    STAGING,
    INCOMPLETE,
    "original",
    "tree",
    "runtime",
    "build-original.log",
    "build-instrumented.log",
    "baseline.log",
    "differential.log",
    "test",
    "test.old",
    "reduce",
    "cost",
    "cache",
    "tune",
    "report.html",
];

/// An output folder this process has marked and locked.
pub struct OutDir {
    root: PathBuf,
    /// Holds the lock until dropped (the kernel drops it too, however the process dies).
    _lock: std::fs::File,
    locked: bool,
}

/// Inside `tree/` in preprocessed mode: library headers with fences written back, one folder per
/// include folder, each an overlay of links to the original's other entries. The instrumented
/// build finds them first through `CPATH` (`app::builder`).
pub const LIBRARY_HEADERS: &str = ".wmfix-include";

impl OutDir {
    /// Takes `path` as this command's output folder, creating and marking it when it is new.
    /// Refused before anything is written: a folder that contains one of `inputs` (65), a path
    /// that is not a folder, or a folder that is not empty and was not made by wmfix (73), a
    /// folder another wmfix is using (75).
    pub fn open(path: &Path, inputs: &[PathBuf]) -> Result<OutDir> {
        let root = resolve(path)?;
        check_inputs(&root, inputs)?;
        if root.exists() {
            check_adoptable(&root)?;
        }
        std::fs::create_dir_all(&root).map_err(|e| cant_write(&root, e))?;
        Self::mark_and_lock(root)
    }

    /// An output folder that must already exist (`--resume`, `--replay`, `apply`, `cost` of a
    /// reduction): missing is exit 66, and nothing is created.
    pub fn existing(path: &Path, inputs: &[PathBuf]) -> Result<OutDir> {
        let root = resolve(path)?;
        if !root.is_dir() {
            return Err(fail(
                exit_code::NO_INPUT,
                format!("{}: no such output folder", path.display()),
            ));
        }
        check_inputs(&root, inputs)?;
        check_adoptable(&root)?;
        Self::mark_and_lock(root)
    }

    fn mark_and_lock(root: PathBuf) -> Result<OutDir> {
        let marker = root.join(MARKER);
        if !marker.is_file() {
            std::fs::write(&marker, MARKER_TEXT).map_err(|e| cant_write(&marker, e))?;
        }
        let (lock, locked) = lock(&root)?;
        Ok(OutDir {
            root,
            _lock: lock,
            locked,
        })
    }

    /// The folder, absolute and canonical.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether the lock is held (false on a file system without locks).
    pub fn locked(&self) -> bool {
        self.locked
    }

    fn at(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    /// The original sources, built for the baseline.
    pub fn original(&self) -> PathBuf {
        self.at("original")
    }
    /// The instrumented mirror of the sources.
    pub fn tree(&self) -> PathBuf {
        self.at("tree")
    }
    /// The pipe and log folders of wmfix's MPS server (`--mps`).
    pub fn mps(&self) -> PathBuf {
        self.at("mps")
    }
    /// The warm processes' library and logs (`--warm`).
    pub fn warm(&self) -> PathBuf {
        self.at("warm")
    }
    /// The logs of the erring runs of the check of warm runs against cold ones.
    pub fn warm_check(&self) -> PathBuf {
        self.at("warm/check")
    }
    /// The runtime headers the instrumented files include.
    pub fn runtime(&self) -> PathBuf {
        self.at("runtime")
    }
    pub fn fences_json(&self) -> PathBuf {
        self.at(FENCES)
    }
    /// What the last build was made from; it names the build in test and reduce records.
    pub fn build_stamp(&self) -> PathBuf {
        self.at(STAMP)
    }
    /// `build-original.log` or `build-instrumented.log`.
    pub fn build_log(&self, which: &str) -> PathBuf {
        self.at(&format!("build-{which}.log"))
    }
    /// The baseline runs of `wmfix test`.
    pub fn baseline_log(&self) -> PathBuf {
        self.at("baseline.log")
    }
    /// The run that asks the runtime which launches it planned (`run::probe`).
    pub fn probe_log(&self) -> PathBuf {
        self.at("probe.log")
    }
    /// The runs of `wmfix build`'s check: the original and the instrumented program, natively.
    pub fn differential_log(&self) -> PathBuf {
        self.at("differential.log")
    }
    pub fn test(&self) -> TestFiles {
        TestFiles(self.at("test"))
    }
    /// Where the previous test's records go when a new test starts.
    pub fn test_old(&self) -> PathBuf {
        self.at("test.old")
    }
    pub fn reduce(&self) -> ReduceFiles {
        ReduceFiles(self.at("reduce"))
    }
    pub fn cost(&self) -> CostFiles {
        CostFiles(self.at("cost"))
    }
    pub fn race(&self) -> RaceFiles {
        RaceFiles(self.at("race"))
    }
    /// The page `wmfix report` writes.
    pub fn report_page(&self) -> PathBuf {
        self.at("report.html")
    }

    /// An empty folder for `insert`'s new output (one a killed insert left is emptied).
    pub fn staging(&self) -> Result<Staged> {
        let dir = self.at(STAGING);
        self.remove(&dir)?;
        std::fs::create_dir(&dir).map_err(|e| cant_write(&dir, e))?;
        Ok(Staged(dir))
    }

    /// Puts the staged `tree/`, `runtime/` and `fences.json` in place of the old ones. The
    /// marker written first and removed last tells a switch that did not finish; the build
    /// stamp goes too, since the build it names was in the old tree.
    pub fn switch_in(&self, staged: Staged) -> Result<()> {
        let marker = self.at(INCOMPLETE);
        std::fs::write(&marker, INCOMPLETE_TEXT).map_err(|e| cant_write(&marker, e))?;
        self.remove(&self.build_stamp())?;
        let moves = [
            (staged.tree(), self.tree()),
            (staged.runtime(), self.runtime()),
            (staged.fences_json(), self.fences_json()),
        ];
        for (new, old) in moves {
            self.remove(&old)?;
            self.rename(&new, &old)?;
        }
        self.remove(&staged.0)?;
        self.remove(&marker)
    }

    /// Whether an insert stopped while switching its output in (see `switch_in`).
    pub fn incomplete(&self) -> Option<PathBuf> {
        let marker = self.at(INCOMPLETE);
        marker.exists().then_some(marker)
    }

    /// Deletes `path` (a file or a folder) if it exists. Only paths inside this marked folder
    /// can be deleted; anything else is a bug, refused.
    pub fn remove(&self, path: &Path) -> Result<()> {
        self.inside(path)?;
        let r = match std::fs::symlink_metadata(path) {
            Err(_) => return Ok(()),
            Ok(m) if m.is_dir() => std::fs::remove_dir_all(path),
            Ok(_) => std::fs::remove_file(path),
        };
        r.map_err(|e| cant_write(path, e))
    }

    /// Renames `from` to `to`, both inside this folder.
    pub fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.inside(from)?;
        self.inside(to)?;
        std::fs::rename(from, to).map_err(|e| cant_write(from, e))
    }

    fn inside(&self, path: &Path) -> Result<()> {
        let ok = path.starts_with(&self.root)
            && path != self.root
            && !path
                .components()
                .any(|c| c == std::path::Component::ParentDir);
        if ok {
            Ok(())
        } else {
            Err(fail(
                exit_code::INTERNAL,
                format!(
                    "refusing to delete or rename {}: it is not inside the output folder {}",
                    path.display(),
                    self.root.display()
                ),
            ))
        }
    }
}

/// `.wmfix-new/`: where `insert` writes before `OutDir::switch_in`.
pub struct Staged(PathBuf);

impl Staged {
    pub fn tree(&self) -> PathBuf {
        self.0.join("tree")
    }
    pub fn runtime(&self) -> PathBuf {
        self.0.join("runtime")
    }
    pub fn fences_json(&self) -> PathBuf {
        self.0.join(FENCES)
    }
}

/// `out/test/`: what `wmfix test` records.
pub struct TestFiles(PathBuf);

impl TestFiles {
    pub fn dir(&self) -> &Path {
        &self.0
    }
    pub fn runs(&self) -> PathBuf {
        self.0.join("runs.jsonl")
    }
    pub fn summary(&self) -> PathBuf {
        self.0.join("summary.json")
    }
    /// The logs of erring runs, named in the records relative to `dir`.
    pub fn logs(&self) -> PathBuf {
        self.0.join("logs")
    }
    pub fn replay_log(&self, id: usize) -> PathBuf {
        self.0.join(format!("replay-{id}.log"))
    }
}

/// `out/reduce/`: the reduction's journal, result and patch.
pub struct ReduceFiles(PathBuf);

impl ReduceFiles {
    pub fn dir(&self) -> &Path {
        &self.0
    }
    pub fn journal(&self) -> PathBuf {
        self.0.join("journal.jsonl")
    }
    pub fn report(&self) -> PathBuf {
        self.0.join("reduce.json")
    }
    pub fn patch(&self) -> PathBuf {
        self.0.join("fences.patch")
    }
    /// The fences the PTX memory model requires beside the kept ones, on top of `fences.patch`.
    pub fn model_patch(&self) -> PathBuf {
        self.0.join("fences-model.patch")
    }
    pub fn logs(&self) -> PathBuf {
        self.0.join("logs")
    }
    pub fn baseline_log(&self) -> PathBuf {
        self.0.join("baseline.log")
    }
    /// `--oracle race`: what the detection traces decided, reused by a resume.
    pub fn race_start(&self) -> PathBuf {
        self.0.join("race-start.json")
    }
}

/// `out/cost/`: the variants' builds, the runs and the report.
pub struct CostFiles(PathBuf);

impl CostFiles {
    pub fn dir(&self) -> &Path {
        &self.0
    }
    pub fn runs(&self) -> PathBuf {
        self.0.join("runs.jsonl")
    }
    pub fn report(&self) -> PathBuf {
        self.0.join("cost.json")
    }
    pub fn logs(&self) -> PathBuf {
        self.0.join("logs")
    }
    /// The sources of one variant, with its fences, built.
    pub fn variant(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
    /// What a variant's build was made from.
    pub fn variant_stamp(&self, name: &str) -> PathBuf {
        self.variant(name).join(".wmfix-cost-stamp")
    }
    pub fn build_log(&self, name: &str) -> PathBuf {
        self.0.join(format!("build-{name}.log"))
    }
}

/// `out/race/`: the detection build (a copy of `tree/` and `runtime/` with the detection
/// runtime switched on), its runs' traces and logs, and the report.
pub struct RaceFiles(PathBuf);

impl RaceFiles {
    pub fn dir(&self) -> &Path {
        &self.0
    }
    pub fn tree(&self) -> PathBuf {
        self.0.join("tree")
    }
    pub fn runtime(&self) -> PathBuf {
        self.0.join("runtime")
    }
    /// What the detection build was made from (the instrumented build's stamp).
    pub fn stamp(&self) -> PathBuf {
        self.0.join("build.stamp")
    }
    pub fn build_log(&self) -> PathBuf {
        self.0.join("build.log")
    }
    pub fn trace(&self, run: usize) -> PathBuf {
        self.0.join(format!("trace-{run}.bin"))
    }
    pub fn log(&self, run: usize) -> PathBuf {
        self.0.join(format!("run-{run}.log"))
    }
    pub fn native_log(&self) -> PathBuf {
        self.0.join("native.log")
    }
    pub fn report(&self) -> PathBuf {
        self.0.join("race.json")
    }
}

/// Whether `dir` is a wmfix output folder, of this version (marked) or an older one. The walk of
/// the sources skips these.
pub fn is_output(dir: &Path) -> bool {
    if dir.join(MARKER).is_file() {
        return true;
    }
    // Cheap first: an old output folder holds one of these files.
    [LOCK, STAMP, FENCES, LITMUS_SOURCE, RAW, ANALYSIS]
        .iter()
        .any(|f| dir.join(f).is_file())
        && made_by_old_wmfix(dir)
}

/// A folder of a wmfix older than the marker: every entry has a name that wmfix writes there,
/// and at least one bears wmfix's own signature. Three kinds: an application's output (its
/// empty lock file, a build stamp of 16 hex digits, a `fences.json` of wmfix's shape, a
/// marked or old `tune/` or `cache/`), `litmus`'s kernel cache (`litmus-<digest>-sm_<arch>.cubin`,
/// or its `litmus.cu`), and `tune`'s output (its `raw.json` or `analysis.json`). A user's folder
/// that merely shares names (`original/`, `tree/`, `test/`) is not one.
pub fn made_by_old_wmfix(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    let mut names = Vec::new();
    for e in entries {
        let Ok(e) = e else { return false };
        match e.file_name().into_string() {
            Ok(n) => names.push(n),
            Err(_) => return false,
        }
    }
    [Kind::App, Kind::Cache, Kind::Tune]
        .into_iter()
        .any(|k| names.iter().all(|n| k.owns(n)) && names.iter().any(|n| k.signed(&dir.join(n), n)))
}

const LITMUS_SOURCE: &str = "litmus.cu";
const RAW: &str = "raw.json";
const ANALYSIS: &str = "analysis.json";

/// The kinds of folder an older wmfix made.
#[derive(Clone, Copy)]
enum Kind {
    /// `--out` of build, test, reduce, cost, insert.
    App,
    /// `litmus --cache`.
    Cache,
    /// `tune --out`.
    Tune,
}

impl Kind {
    /// Whether wmfix writes an entry of this name in a folder of this kind.
    fn owns(self, name: &str) -> bool {
        match self {
            Kind::App => OWN_NAMES.contains(&name),
            Kind::Cache => name == LITMUS_SOURCE || cubin_name(name).is_some(),
            Kind::Tune => {
                [RAW, ANALYSIS, "patches.svg", "spread.svg", "cache"].contains(&name)
                    || name.ends_with(".toml")
            }
        }
    }

    /// Whether this entry shows that wmfix wrote it.
    fn signed(self, path: &Path, name: &str) -> bool {
        match (self, name) {
            (Kind::App, LOCK) => std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() == 0),
            (Kind::App, STAMP) => std::fs::read_to_string(path).is_ok_and(|s| {
                let s = s.strip_suffix('\n').unwrap_or(&s);
                s.len() == 16 && s.bytes().all(|b| b.is_ascii_hexdigit())
            }),
            (Kind::App, FENCES) => has_keys(path, &["version", "fence_scope", "total", "fences"]),
            (Kind::App, "cache" | "tune") | (Kind::Tune, "cache") => {
                path.join(MARKER).is_file() || made_by_old_wmfix(path)
            }
            (Kind::Cache, n) => {
                cubin_name(n).is_some_and(|tmp| !tmp)
                    || std::fs::read_to_string(path)
                        .is_ok_and(|t| t.starts_with("// wmfix litmus engine"))
            }
            (Kind::Tune, RAW) => has_keys(path, &["format", "params"]),
            (Kind::Tune, ANALYSIS) => has_keys(path, &["gpu", "patch", "sequence"]),
            _ => false,
        }
    }
}

/// `litmus-<16 hex>-sm_<digits>.cubin` (Some(false)) or `.tmp` (Some(true)), as the litmus
/// engine names its builds.
fn cubin_name(name: &str) -> Option<bool> {
    let rest = name.strip_prefix("litmus-")?;
    let (digest, rest) = rest.split_at_checked(16)?;
    let (arch, tmp) = match rest.strip_suffix(".cubin") {
        Some(a) => (a, false),
        None => (rest.strip_suffix(".tmp")?, true),
    };
    let arch = arch.strip_prefix("-sm_")?;
    let ok = digest.bytes().all(|b| b.is_ascii_hexdigit())
        && !arch.is_empty()
        && arch.bytes().all(|b| b.is_ascii_digit());
    ok.then_some(tmp)
}

/// A JSON object with these keys.
fn has_keys(path: &Path, keys: &[&str]) -> bool {
    std::fs::read(path).is_ok_and(|b| {
        serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(&b)
            .is_ok_and(|m| keys.iter().all(|k| m.contains_key(*k)))
    })
}

/// The absolute path, canonical where it exists (so `..` and links cannot hide an input).
fn resolve(path: &Path) -> Result<PathBuf> {
    let abs = std::path::absolute(path).map_err(|e| cant_write(path, e))?;
    // The longest existing prefix is canonicalised; the rest is applied as written.
    let mut parts = abs.components();
    let mut root = PathBuf::new();
    for c in parts.by_ref() {
        root.push(c);
        if !root.exists() {
            root.pop();
            let rest: PathBuf = std::iter::once(c).chain(parts.by_ref()).collect();
            return finish(path, root, &rest);
        }
    }
    finish(path, root, Path::new(""))
}

fn finish(path: &Path, existing: PathBuf, rest: &Path) -> Result<PathBuf> {
    let mut root = existing.canonicalize().map_err(|e| cant_write(path, e))?;
    for c in rest.components() {
        match c {
            std::path::Component::ParentDir => {
                root.pop();
            }
            std::path::Component::CurDir => {}
            c => root.push(c),
        }
    }
    if root.exists() && !root.is_dir() {
        return Err(fail(
            exit_code::CANT_WRITE,
            format!(
                "{}: not a folder; --out names the folder wmfix writes into",
                path.display()
            ),
        ));
    }
    Ok(root)
}

/// The output folder is rewritten on every run: it must not be an input or hold one. Inputs
/// must exist, and must not lie in an output folder (wmfix's output is never a source).
fn check_inputs(root: &Path, inputs: &[PathBuf]) -> Result<()> {
    for given in inputs {
        let input = given
            .canonicalize()
            .map_err(|e| fail(exit_code::NO_INPUT, format!("{}: {e}", given.display())))?;
        if let Some(out) = input.ancestors().find(|d| is_output(d)) {
            return Err(fail(
                exit_code::BAD_INPUT,
                format!(
                    "{} is inside wmfix's output folder {}: wmfix's output is never taken as a source",
                    given.display(),
                    out.display()
                ),
            ));
        }
        if input.starts_with(root) {
            return Err(fail(
                exit_code::BAD_INPUT,
                format!(
                    "output folder {} contains the input {}; choose another --out (nothing was written)",
                    root.display(),
                    input.display()
                ),
            ));
        }
    }
    Ok(())
}

/// An existing folder is wmfix's (marked, or made by an older wmfix) or empty; anything else is
/// the user's and is refused.
fn check_adoptable(root: &Path) -> Result<()> {
    if root.join(MARKER).is_file() {
        return Ok(());
    }
    let empty = std::fs::read_dir(root)
        .map_err(|e| cant_write(root, e))?
        .next()
        .is_none();
    if empty {
        return Ok(());
    }
    if made_by_old_wmfix(root) {
        eprintln!(
            "wmfix: {} was made by an earlier wmfix; marking it as wmfix's output folder",
            root.display()
        );
        return Ok(());
    }
    Err(fail(
        exit_code::CANT_WRITE,
        format!(
            "{} is not empty and was not made by wmfix (it has no {MARKER} file); wmfix deletes and rewrites what is inside its output folder, so it will not use this one: give --out a new or empty folder (nothing was written)",
            root.display()
        ),
    ))
}

/// The lock file, and whether the lock is held.
fn lock(root: &Path) -> Result<(std::fs::File, bool)> {
    let path = root.join(LOCK);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| cant_write(&path, e))?;
    // SAFETY: flock(2) on a descriptor we own; no memory is involved.
    let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if r != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
            return Err(fail(
                exit_code::BUSY,
                format!(
                    "{}: another wmfix is using this output directory (give each its own --out)",
                    root.display()
                ),
            ));
        }
        // A file system without locks: go on unguarded rather than refuse to work.
        eprintln!(
            "{}",
            crate::exit_code::warning(format_args!(
                "cannot lock {}: {e}; runs a killed wmfix left will not be cleaned up",
                path.display()
            ))
        );
        return Ok((file, false));
    }
    Ok((file, true))
}

fn cant_write(path: &Path, e: std::io::Error) -> anyhow::Error {
    fail(
        exit_code::CANT_WRITE,
        format!("{}: cannot write: {e}", path.display()),
    )
}

#[cfg(test)]
#[path = "out_dir_tests.rs"]
mod tests;

//! `wmfix build`: the original program (for the baseline) and the instrumented one, each built
//! with the config's command in its own copy. Nothing is rebuilt when the inputs are unchanged.

use crate::app::child;
use crate::app::config::App;
use crate::app::toolchain;
use crate::digest::Fnv;
use crate::exit_code::{self, fail};
use crate::fences::scope::FenceScope;
use crate::out_dir::OutDir;
use crate::rewrite::insert::{self, OnParseError};
use crate::rewrite::walk;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub struct Built {
    /// The original program, built in `out/original`.
    pub original: PathBuf,
    /// The instrumented program, built in `out/tree`.
    pub instrumented: PathBuf,
    pub fences: usize,
    /// False when the previous build was still up to date.
    pub rebuilt: bool,
}

const BUILD_TIMEOUT: Duration = Duration::from_secs(1800);

/// Builds into `out` (opened by the caller, after every check that can refuse).
pub fn build(app: &App, out: &OutDir, scope: FenceScope) -> Result<Built> {
    crate::app::claim::claim(out);
    let input = walk::collect(std::slice::from_ref(&app.root), out.root())?;
    // Every run of the build loads the runtime's host library (`host_lib`): made once per
    // compiler, and named in the instrumented tree, so a new one is a new build.
    let host_library = crate::app::host_lib::ensure()?;
    let stamp = fingerprint(app, &input, scope, &host_library)?;
    let stamp_path = out.build_stamp();
    let original = out.original();
    let instrumented = out.tree();
    let fences_json = out.fences_json();
    let incomplete = out.incomplete();
    if let Some(marker) = &incomplete {
        eprintln!(
            "wmfix: an insert stopped part way left {} ({}): instrumenting and building again",
            out.root().display(),
            marker.display()
        );
    }
    let up_to_date = incomplete.is_none()
        && std::fs::read_to_string(&stamp_path).is_ok_and(|s| s == stamp)
        && original.is_dir()
        && instrumented.is_dir()
        && fences_json.is_file();
    if up_to_date {
        let fences = crate::fences::record::FenceList::load(&fences_json)?.total;
        return Ok(Built {
            original,
            instrumented,
            fences,
            rebuilt: false,
        });
    }
    out.remove(&stamp_path)?;
    out.remove(&original)?;
    walk::copy_files(&input, &original).context("copying the original tree")?;
    let step = spinner("building the original program");
    run_build(app, &original, &out.build_log("original"))?;
    step.set_message("instrumenting the sources");
    let mut opts = insert_options(app, out.root(), scope);
    opts.host_library = Some(host_library);
    let summary = insert::run(&opts, out)?;
    step.suspend(|| {
        for w in &summary.warnings {
            eprintln!("{}", crate::exit_code::warning(w));
        }
    });
    step.set_message(format!(
        "building the instrumented program ({} fences)",
        summary.fences
    ));
    run_build(app, &instrumented, &out.build_log("instrumented"))?;
    step.finish_and_clear();
    std::fs::write(&stamp_path, stamp)?;
    Ok(Built {
        original,
        instrumented,
        fences: summary.fences,
        rebuilt: true,
    })
}

/// A spinner naming the build step, with the time it has taken (builds take tens of seconds);
/// drawn only on a terminal.
pub fn spinner(step: &str) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new_spinner();
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
            .expect("valid template"),
    );
    bar.set_message(step.to_string());
    bar.enable_steady_tick(Duration::from_millis(100));
    bar
}

/// The macros `insert` is given: those the build defines outside the application's folder
/// (`build_macros.rs`), then wmfix.toml's.
fn macros(app: &App) -> Vec<(String, String)> {
    let mut all = crate::app::build_macros::learnt(app);
    all.extend(
        app.config
            .macros
            .iter()
            .map(|(k, v)| (k.clone(), v.clone())),
    );
    all
}

/// How `build` and `reduce` instrument an application: its `sources` only, into `out`.
pub fn insert_options(app: &App, out: &Path, scope: FenceScope) -> insert::Options {
    insert::Options {
        paths: vec![app.root.clone()],
        out: out.to_path_buf(),
        fence: scope,
        on_parse_error: OnParseError::Warn,
        only: Some(
            app.config
                .sources
                .iter()
                .map(|s| app.root.join(s))
                .collect(),
        ),
        macros: macros(app),
        host_library: None,
        preprocess: app
            .config
            .preprocess
            .as_ref()
            .map(|c| insert::Preprocessor {
                command: c.split_whitespace().map(str::to_string).collect(),
                env: crate::app::toolchain::build_env(Some(&app.root)),
            }),
    }
}

/// Runs the config's build command in `dir`; a failure is BUILD_FAILED with the log's tail.
pub fn run_build(app: &App, dir: &Path, log: &Path) -> Result<()> {
    let mut env = toolchain::build_env(Some(&app.root));
    env.extend(library_headers(dir));
    let spec = child::Spec {
        command: &app.config.build,
        dir,
        env: &env,
        timeout: BUILD_TIMEOUT,
        log,
    };
    let f = child::run(&spec)?;
    if f.exit == child::Exit::Interrupted {
        return Err(crate::interrupt::stopped("during the build"));
    }
    if f.exit != child::Exit::Code(0) {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(30).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        let hint = toolchain::missing_nvcc(&text).then_some(toolchain::NO_NVCC);
        return Err(fail(
            exit_code::BUILD_FAILED,
            format!(
                "build failed in {} ({}); log {}:\n{}{}",
                dir.display(),
                f.exit,
                log.display(),
                tail.join("\n"),
                hint.map(|h| format!("\nwmfix: {h}")).unwrap_or_default()
            ),
        ));
    }
    Ok(())
}

/// Preprocessed mode: the overlaid include folders of `dir` (`out_dir::LIBRARY_HEADERS`) first
/// on `CPATH`, which gcc (nvcc's preprocessor) searches after the command line's `-I` folders
/// and before `-isystem` ones such as the toolkit's `include/cccl`: `#include <cub/...>` then
/// finds the copy with fences.
fn library_headers(dir: &Path) -> Option<(String, String)> {
    let base = dir.join(crate::out_dir::LIBRARY_HEADERS);
    let mut dirs: Vec<(usize, PathBuf)> = std::fs::read_dir(&base)
        .ok()?
        .filter_map(|e| {
            let e = e.ok()?;
            Some((e.file_name().to_str()?.parse().ok()?, e.path()))
        })
        .collect();
    dirs.sort();
    let old = std::env::var_os("CPATH").map(std::path::PathBuf::from);
    let all = dirs.into_iter().map(|(_, d)| d).chain(old);
    let joined = std::env::join_paths(all).ok()?;
    Some(("CPATH".to_string(), joined.to_string_lossy().into_owned()))
}

/// A digest of everything a build depends on: wmfix's version, the options, the config, the
/// host library it names and every input file.
fn fingerprint(
    app: &App,
    input: &walk::InputTree,
    scope: FenceScope,
    host_library: &Path,
) -> Result<String> {
    let mut h = Fnv::default();
    h.add(env!("CARGO_PKG_VERSION").as_bytes());
    h.add(host_library.as_os_str().as_encoded_bytes());
    h.add(format!("{scope:?}{:?}{:?}", app.config, macros(app)).as_bytes());
    for (name, text) in crate::rewrite::runtime_headers::RUNTIME_FILES {
        h.add(name.as_bytes());
        h.add(text.as_bytes());
    }
    // Docs and wmfix.toml's text (its values are hashed above) do not change what is built or
    // run: editing them keeps the build and the journals of reductions made with it.
    let inert = |rel: &Path| {
        rel == Path::new(crate::app::config::FILE_NAME)
            || rel.extension().is_some_and(|e| e == "md")
    };
    for rel in input.files.iter().filter(|r| !inert(r)) {
        h.add(rel.to_string_lossy().as_bytes());
        h.add(&std::fs::read(input.root.join(rel))?);
    }
    for (rel, target) in &input.links {
        h.add(rel.as_os_str().as_encoded_bytes());
        h.add(target.as_os_str().as_encoded_bytes());
    }
    Ok(format!("{}\n", h.hex()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(dir: &Path) -> String {
        let app = App::load(dir).unwrap();
        let input = walk::collect(std::slice::from_ref(&app.root), &dir.join("out")).unwrap();
        fingerprint(&app, &input, FenceScope::Device, Path::new("/lib.so")).unwrap()
    }

    #[test]
    fn docs_and_config_comments_keep_the_build_stamp_sources_and_values_change_it() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let config = "sources = [\"k.cu\"]\nbuild = \"true\"\nrun = \"./app\"\ngpu = false\n";
        std::fs::write(dir.join("wmfix.toml"), config).unwrap();
        std::fs::write(
            dir.join("k.cu"),
            "__global__ void k(int *a) { a[0] = 1; }\n",
        )
        .unwrap();
        std::fs::write(dir.join("README.md"), "# k\n").unwrap();
        let first = stamp(dir);
        std::fs::write(dir.join("README.md"), "# k, measured\n").unwrap();
        std::fs::write(dir.join("wmfix.toml"), format!("# a comment\n{config}")).unwrap();
        assert_eq!(stamp(dir), first);
        std::fs::write(dir.join("wmfix.toml"), config.replace("./app", "./app 2")).unwrap();
        let other_run = stamp(dir);
        assert_ne!(other_run, first);
        std::fs::write(
            dir.join("k.cu"),
            "__global__ void k(int *a) { a[0] = 2; }\n",
        )
        .unwrap();
        assert_ne!(stamp(dir), other_run);
    }
}

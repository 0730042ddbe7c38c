//! `wmfix insert`: writes an instrumented mirror of the user's tree, the runtime headers and
//! `fences.json` into the output directory. The user's files are only ever read.

use crate::exit_code::{self, fail};
use crate::fences::record::FenceRecord;
use crate::fences::record::{FenceList, VERSION};
use crate::fences::scope::FenceScope;
use crate::out_dir;
use crate::out_dir::OutDir;
use crate::rewrite::device_code::Precision;
use crate::rewrite::macros::Macros;
use crate::rewrite::preprocess;
pub use crate::rewrite::preprocess::Preprocessor;
use crate::rewrite::render::{self, Planned};
use crate::rewrite::source::SourceFile;
use crate::rewrite::walk;
use crate::rewrite::write_back;
use anyhow::Result;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OnParseError {
    /// Stop with an error naming file:line:col.
    Fail,
    /// Report it, instrument what parses, and never edit inside the unparsed part.
    Warn,
    /// Report it and copy the file unchanged.
    Skip,
}

pub struct Options {
    pub paths: Vec<PathBuf>,
    /// The output folder, skipped when walking the input (`run` writes to the `OutDir` it is
    /// given, opened on this path).
    pub out: PathBuf,
    pub fence: FenceScope,
    pub on_parse_error: OnParseError,
    /// Instrument only files under these paths (the config's `sources`); copy the rest.
    pub only: Option<Vec<PathBuf>>,
    /// Preprocessed mode: each `.cu` file is run through this first and the preprocessed
    /// translation unit instrumented (headers are then part of it, not instrumented alone).
    pub preprocess: Option<Preprocessor>,
    /// Macros given besides those learnt from the tree (wmfix.toml's `macros`): name, expansion.
    pub macros: Vec<(String, String)>,
    /// The runtime's host library that `runtime/wmfix_site.h` names (`wmfix build`'s), if any.
    pub host_library: Option<PathBuf>,
}

pub struct Summary {
    pub files: usize,
    /// Files the rewriter may parse (`walk::is_cuda_candidate`: sources and headers).
    pub cuda_files: usize,
    pub instrumented: usize,
    pub fences: usize,
    /// Fences in functions no launched kernel reaches (`rewrite/reach.rs`).
    pub unreachable: usize,
    pub warnings: Vec<String>,
    /// Summed over the instrumented files: what the rewriter saw beyond one file's top level.
    pub precision: Precision,
    /// Preprocessed mode: fences in files outside the tree (library headers), as
    /// `path:line` findings for that library.
    pub library_fences: Vec<String>,
    /// Bytes of CUDA source parsed and instrumented, and the wall-clock time that took on all
    /// cores (no file I/O).
    pub cuda_bytes: usize,
    pub cuda_time: Duration,
    /// Compiling the queries, once per process.
    pub query_time: Duration,
    /// The instrumented mirror and the fence list written.
    pub tree: PathBuf,
    pub fences_json: PathBuf,
}

/// The input tree, parsed and planned, before fences are numbered.
pub struct PlannedTree {
    pub input: walk::InputTree,
    /// Files that will be instrumented.
    pub planned: Vec<Planned>,
    /// Files copied as they are.
    pub copies: Vec<PathBuf>,
    pub warnings: Vec<String>,
    pub cuda_bytes: usize,
    pub cuda_time: Duration,
    /// Compiling the queries, once per process.
    pub query_time: Duration,
}

/// Instruments `opts.paths` into `out` (`tree/`, `runtime/`, `fences.json`).
pub fn run(opts: &Options, out: &OutDir) -> Result<Summary> {
    let PlannedTree {
        input,
        mut planned,
        copies,
        warnings,
        cuda_bytes,
        mut cuda_time,
        query_time,
    } = plan_tree(opts)?;
    let t0 = Instant::now();
    let internal = |e: crate::rewrite::edits::Overlap| fail(exit_code::INTERNAL, e.to_string());
    let mut warnings = warnings;
    let (texts, mut fences, overlays) = if opts.preprocess.is_some() {
        let (groups, fences) = render::edit_groups(&mut planned);
        let tus = write_back::with_files(&planned, groups);
        let written = write_back::write_back(&input.root, tus);
        warnings.extend(unplaced_warning(&written, fences.len()));
        let total = fences.len();
        let library = Path::new(out_dir::LIBRARY_HEADERS);
        let outs = write_back::outputs(&input.root, library, written, |rel| {
            render::prologue(total, opts.fence, &include_path(rel))
        })
        .map_err(internal)?;
        // The `.cu` files are built as they are, with the edits written back into them.
        let mut texts: Vec<(PathBuf, Vec<u8>)> = Vec::new();
        for p in &planned {
            let abs = input.root.join(&p.file.rel);
            let bytes = std::fs::read(&abs)
                .map_err(|e| fail(exit_code::NO_INPUT, format!("{}: {e}", abs.display())))?;
            texts.push((p.file.rel.clone(), bytes));
        }
        texts.extend(outs.files);
        (texts, fences, outs.roots)
    } else {
        let done =
            render::render(&mut planned, opts.fence, |f| include_path(&f.rel)).map_err(internal)?;
        let texts = planned.iter().zip(done.texts);
        let texts = texts.map(|(p, t)| {
            let encoding = p.file.encoding;
            let bytes = t.map_or_else(|| encoding.encode(&p.file.text), |t| encoding.into_bytes(t));
            (p.file.rel.clone(), bytes)
        });
        (texts.collect(), done.fences, Vec::new())
    };
    let library_fences = if opts.preprocess.is_some() {
        let library = write_back::map_back(&input.root, &planned, &mut fences);
        for f in &mut fences {
            f.library = library.contains(&f.id);
        }
        let library = fences.iter().filter(|f| f.library);
        library.map(write_back::finding).collect()
    } else {
        Vec::new()
    };
    cuda_time += t0.elapsed();
    let instrumented = texts.len();
    let mut done = Written {
        texts,
        overlays,
        fences,
    };
    write_output(
        out,
        &input,
        &copies,
        &mut done,
        (opts.fence, opts.host_library.as_deref()),
    )?;
    let done = Instrumented {
        fences: done.fences,
    };
    let summary = Summary {
        files: input.files.len(),
        cuda_files: (input.files.iter())
            .filter(|f| walk::is_cuda_candidate(f))
            .count(),
        instrumented,
        fences: done.fences.len(),
        unreachable: done.fences.iter().filter(|f| f.unreachable).count(),
        precision: planned.iter().fold(Precision::default(), |a, p| Precision {
            hidden_globals: a.hidden_globals + p.plan.precision.hidden_globals,
            local_params: a.local_params + p.plan.precision.local_params,
            macro_functions: a.macro_functions + p.plan.precision.macro_functions,
            macro_functions_fenced: a.macro_functions_fenced
                + p.plan.precision.macro_functions_fenced,
            if_branches: a.if_branches + p.plan.precision.if_branches,
        }),
        warnings,
        library_fences,
        cuda_bytes,
        cuda_time,
        query_time,
        tree: out.tree(),
        fences_json: out.fences_json(),
    };
    crate::rewrite::parallel::drop_later((planned, done, input));
    Ok(summary)
}

/// Walks, parses and plans the input; `insert` renders the result, `reduce` its hardened form.
pub fn plan_tree(opts: &Options) -> Result<PlannedTree> {
    // Compiled once per process, and every capture the rewriter reads found in it (an internal
    // error otherwise), before any file is planned; timed on its own for --stats.
    let t0 = Instant::now();
    crate::rewrite::queries::check()
        .map_err(|e| crate::exit_code::fail(crate::exit_code::INTERNAL, e))?;
    let query_time = t0.elapsed();
    let out_dir = absolute(&opts.out)?;
    let input = walk::collect(&opts.paths, &out_dir)?;
    let (sources, mut copies, macros) = read_candidates(opts, &input)?;
    let cuda_bytes = sources.iter().map(|f| f.text.len()).sum();
    let t0 = Instant::now();
    let parsed = render::plan_files(sources, macros);
    let cuda_time = t0.elapsed();
    let mut warnings = Vec::new();
    let mut planned = Vec::new();
    // In input order, so that the first syntax error reported is the first in the tree.
    for p in parsed {
        if let Some(err) = &p.syntax_error {
            let msg = format!("{}: {}", p.file.location(err.at), err.what);
            match opts.on_parse_error {
                // Nothing of a file too deep for the queries is planned: `warn` copies it too.
                OnParseError::Fail if err.too_deep => {
                    return Err(fail(
                        exit_code::BAD_INPUT,
                        format!(
                            "{msg} (--on-parse-error warn or skip copies this file unchanged and instruments the others)"
                        ),
                    ));
                }
                OnParseError::Fail => {
                    return Err(fail(
                        exit_code::BAD_INPUT,
                        format!(
                            "{msg} (--on-parse-error warn instruments the rest of the file, skip copies it unchanged)"
                        ),
                    ));
                }
                OnParseError::Warn | OnParseError::Skip if err.too_deep => {
                    warnings.push(format!("{msg}: file copied unchanged"));
                    copies.push(p.file.rel);
                    continue;
                }
                OnParseError::Warn => warnings.push(format!(
                    "{msg}: nothing inside the unparsed part is instrumented"
                )),
                OnParseError::Skip => {
                    warnings.push(format!("{msg}: file copied unchanged"));
                    copies.push(p.file.rel);
                    continue;
                }
            }
        }
        if !walk::is_cuda_source(&p.file.rel) && !p.plan.has_device_code {
            copies.push(p.file.rel);
            continue;
        }
        warnings.extend(p.plan.warnings.iter().cloned());
        planned.push(p);
    }
    crate::rewrite::reach::mark(&mut planned, &input.root, &copies);
    warnings.extend(walk::outside_warnings(
        &input,
        |rel| planned.iter().any(|p| p.file.rel == rel),
        |rel| display_path(&opts.paths, &input.root, rel),
    ));
    Ok(PlannedTree {
        input,
        planned,
        copies,
        warnings,
        cuda_bytes,
        cuda_time,
        query_time,
    })
}

/// The files to instrument, read, the files to copy as they are, and the macros learnt from
/// every candidate's `#define`s. Any bytes are read (`Encoding::decode`: not UTF-8 is Latin-1,
/// written back byte for byte). A header (not `.cu`/`.cuh`) that names no CUDA qualifier, nor
/// a device qualifier macro, holds no device code: it is copied without being parsed, so
/// host-only headers cause no parse-error noise.
fn read_candidates(
    opts: &Options,
    input: &walk::InputTree,
) -> Result<(Vec<SourceFile>, Vec<PathBuf>, Macros)> {
    let mut sources = Vec::new();
    let mut copies = Vec::new();
    let mut read: Vec<(PathBuf, PathBuf, Vec<u8>)> = Vec::new();
    for rel in &input.files {
        let abs = input.root.join(rel);
        let selected = opts
            .only
            .as_ref()
            .is_none_or(|only| only.iter().any(|o| abs.starts_with(o)));
        if !selected || !walk::is_cuda_candidate(rel) {
            copies.push(rel.clone());
            continue;
        }
        if let Some(pre) = &opts.preprocess {
            if rel.extension().is_some_and(|e| e == "cu") {
                let text = pre.run(&input.root, rel)?;
                let text = preprocess::own_text(text, rel);
                let shown = PathBuf::from(format!("{} (preprocessed)", rel.display()));
                sources.push(SourceFile::from_bytes(rel.clone(), shown, text));
            } else {
                copies.push(rel.clone());
            }
            continue;
        }
        let bytes = std::fs::read(&abs)
            .map_err(|e| fail(exit_code::NO_INPUT, format!("{}: {e}", abs.display())))?;
        read.push((rel.clone(), abs, bytes));
    }
    let texts: Vec<std::borrow::Cow<str>> = read
        .iter()
        .map(|(_, _, b)| String::from_utf8_lossy(b))
        .collect();
    let macros = Macros::learn(texts.iter().map(|t| t.as_ref()), &opts.macros);
    let device: Vec<bool> = read
        .iter()
        .zip(&texts)
        .map(|((rel, _, bytes), text)| {
            walk::is_cuda_source(rel) || names_cuda_qualifier(bytes) || macros.named_in(text)
        })
        .collect();
    drop(texts);
    for ((rel, abs, bytes), device) in read.into_iter().zip(device) {
        if !device {
            copies.push(rel);
            continue;
        }
        let shown = opts
            .paths
            .iter()
            .find(|p| p.is_file() && abs.ends_with(p))
            .cloned()
            .unwrap_or_else(|| display_path(&opts.paths, &input.root, &rel));
        sources.push(SourceFile::from_bytes(rel, shown, bytes));
    }
    Ok((sources, copies, macros))
}

/// Whether a header's bytes name a qualifier only device code has.
fn names_cuda_qualifier(bytes: &[u8]) -> bool {
    bytes
        .windows(b"__device__".len())
        .any(|w| w == b"__device__" || w == b"__global__")
}

fn display_path(paths: &[PathBuf], root: &Path, rel: &Path) -> PathBuf {
    // Show paths as the user would type them: relative to the current directory if possible.
    let abs = root.join(rel);
    std::env::current_dir()
        .ok()
        .and_then(|cwd| abs.strip_prefix(cwd).ok().map(Path::to_path_buf))
        .unwrap_or_else(|| {
            if paths.len() == 1 {
                abs.clone()
            } else {
                rel.to_path_buf()
            }
        })
}

fn absolute(p: &Path) -> Result<PathBuf> {
    Ok(if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()?.join(p)
    })
}

/// `#include` path from a file mirrored at `tree/<rel>` to `runtime/wmfix.cuh`.
fn include_path(rel: &Path) -> String {
    format!(
        "{}runtime/wmfix.cuh",
        "../".repeat(rel.components().count())
    )
}

/// What `write_output` writes besides the copies: each instrumented file's bytes (by path inside
/// `tree/`), the include folders overlaid (preprocessed mode) and the fence records.
struct Written {
    texts: Vec<(PathBuf, Vec<u8>)>,
    overlays: Vec<(PathBuf, usize)>,
    fences: Vec<FenceRecord>,
}

struct Instrumented {
    fences: Vec<FenceRecord>,
}

/// Preprocessed mode: the fences whose edits could not be written back, said once.
fn unplaced_warning(w: &write_back::WrittenBack, total: usize) -> Option<String> {
    if w.unplaced.is_empty() && w.unplaced_fixed == 0 {
        return None;
    }
    let shown: Vec<String> = w
        .unplaced
        .iter()
        .take(5)
        .map(|(id, at)| format!("fence {id} ({at})"))
        .collect();
    Some(format!(
        "{} of {total} fences (and {} other edits) are inside macro expansions or headers included more than once and are not in the build, only in fences.json: {}{}",
        w.unplaced.len(),
        w.unplaced_fixed,
        shown.join(", "),
        if w.unplaced.len() > 5 { ", ..." } else { "" }
    ))
}

/// Writes the new output beside the old (`OutDir::staging`) and switches it in whole, so that
/// an insert stopped part way leaves the old output, or a folder marked incomplete.
/// `how`: the fence scope and the host library `runtime/wmfix_site.h` names.
fn write_output(
    out: &OutDir,
    input: &walk::InputTree,
    copies: &[PathBuf],
    done: &mut Written,
    how: (FenceScope, Option<&Path>),
) -> Result<()> {
    let staged = out.staging()?;
    write_staged(&staged, input, copies, done, how)?;
    out.switch_in(staged)
}

fn write_staged(
    out: &out_dir::Staged,
    input: &walk::InputTree,
    copies: &[PathBuf],
    done: &mut Written,
    (scope, host_library): (FenceScope, Option<&Path>),
) -> Result<()> {
    let cant =
        |p: &Path, e: std::io::Error| fail(exit_code::CANT_WRITE, format!("{}: {e}", p.display()));
    std::fs::create_dir_all(out.tree()).map_err(|e| cant(&out.tree(), e))?;
    for rel in copies {
        // fs::copy keeps the permission bits: build scripts stay executable.
        let dest = out.tree().join(rel);
        std::fs::create_dir_all(dest.parent().unwrap()).map_err(|e| cant(&dest, e))?;
        std::fs::copy(input.root.join(rel), &dest).map_err(|e| cant(&dest, e))?;
    }
    let library = out.tree().join(out_dir::LIBRARY_HEADERS);
    for (src, n) in &done.overlays {
        let prefix = Path::new(out_dir::LIBRARY_HEADERS).join(n.to_string());
        let written: Vec<PathBuf> = done
            .texts
            .iter()
            .filter_map(|(rel, _)| rel.strip_prefix(&prefix).ok().map(Path::to_path_buf))
            .collect();
        let dest = library.join(n.to_string());
        write_back::overlay(src, &dest, &written).map_err(|e| cant(&dest, e))?;
    }
    for (rel, bytes) in &done.texts {
        let dest = out.tree().join(rel);
        std::fs::create_dir_all(dest.parent().unwrap()).map_err(|e| cant(&dest, e))?;
        std::fs::write(&dest, bytes).map_err(|e| cant(&dest, e))?;
    }
    walk::make_links(input, &out.tree()).map_err(|e| cant(&out.tree(), e))?;
    crate::rewrite::runtime_headers::write_to(&out.runtime(), host_library)
        .map_err(|e| cant(&out.runtime(), e))?;
    // The records are moved in and back out: a list of a big file's fences is hundreds of MB.
    let json = FenceList {
        version: VERSION,
        fence_scope: scope,
        root: input.root.clone(),
        total: done.fences.len(),
        fences: std::mem::take(&mut done.fences),
    };
    let path = out.fences_json();
    let written = std::fs::File::create(&path).and_then(|f| {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        write_fence_list(&mut w, &json)?;
        w.flush()
    });
    done.fences = json.fences;
    written.map_err(|e| cant(&path, e))
}

/// Records serialised by one thread at a time.
const RECORDS_PER_CHUNK: usize = 4096;

/// Records as `FenceList` holds them, for serialising a chunk of them two levels in.
#[derive(serde::Serialize)]
struct Records<'a> {
    fences: &'a [FenceRecord],
}

/// `list` as pretty JSON and a newline, as `serde_json::to_string_pretty` writes it, written as
/// it is made: its records in chunks on all cores (a big file's list is 100 MB).
fn write_fence_list(w: &mut impl Write, list: &FenceList) -> std::io::Result<()> {
    let head = FenceList {
        fences: Vec::new(),
        root: list.root.clone(),
        ..*list
    };
    let head = serde_json::to_string_pretty(&head)?;
    // The records are the last field: they go between its brackets.
    let Some(head) = head
        .strip_suffix("[]\n}")
        .filter(|_| !list.fences.is_empty())
    else {
        serde_json::to_writer_pretty(&mut *w, list)?;
        return w.write_all(b"\n");
    };
    w.write_all(head.as_bytes())?;
    w.write_all(b"[\n")?;
    let chunks: Vec<&[FenceRecord]> = list.fences.chunks(RECORDS_PER_CHUNK).collect();
    // A batch of chunks at a time, so that the text is never all in memory.
    for (i, batch) in chunks.chunks(crate::rewrite::parallel::cores()).enumerate() {
        let texts = crate::rewrite::parallel::map(batch.to_vec(), |fences| {
            // Serialised where the file has them, two levels in, and cut out.
            // About 450 bytes a record: the buffer seldom grows.
            let mut text = Vec::with_capacity(512 * fences.len());
            serde_json::to_writer_pretty(&mut text, &Records { fences })
                .expect("records serialise");
            let start = b"{\n  \"fences\": [\n".len();
            let end = text.len() - b"\n  ]\n}".len();
            (text, start..end)
        });
        for (j, (text, records)) in texts.iter().enumerate() {
            if i + j > 0 {
                w.write_all(b",\n")?;
            }
            w.write_all(&text[records.clone()])?;
        }
    }
    w.write_all(b"\n  ]\n}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fence_list_is_written_as_serde_json_writes_it() {
        let one = crate::fences::record::FenceRecord {
            id: crate::fences::id::FenceId(0),
            file: "k.cu".into(),
            line: 3,
            column: 5,
            function: "k".into(),
            access: "x[i] = \"\\n\";".into(),
            kind: crate::fences::record::AccessKind::Store,
            aimed: None,
            accesses: vec!["store: x[i]".into()],
            placements: Vec::new(),
            unreachable: true,
            library: false,
        };
        for n in [0, 1, 2, RECORDS_PER_CHUNK * 3 + 1] {
            let fences: Vec<FenceRecord> = (0..n)
                .map(|i| FenceRecord {
                    id: crate::fences::id::FenceId(i),
                    ..one.clone()
                })
                .collect();
            let list = FenceList {
                version: VERSION,
                fence_scope: FenceScope::Device,
                root: "/app".into(),
                total: n,
                fences,
            };
            let mut written = Vec::new();
            write_fence_list(&mut written, &list).unwrap();
            let expected = serde_json::to_string_pretty(&list).unwrap() + "\n";
            assert!(written == expected.as_bytes(), "{n} records");
        }
    }

    #[test]
    fn include_path_climbs_out_of_the_mirror() {
        assert_eq!(include_path(Path::new("dot.cu")), "../runtime/wmfix.cuh");
        assert_eq!(
            include_path(Path::new("a/b/k.cuh")),
            "../../../runtime/wmfix.cuh"
        );
    }
}

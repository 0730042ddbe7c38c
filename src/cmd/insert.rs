//! `wmfix insert`: an instrumented copy of CUDA sources.

use crate::exit_code;
use crate::fences::scope::FenceScope;
use crate::rewrite::insert::{self, OnParseError};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Files and folders to instrument (`.cu`, `.cuh`, and headers holding device code).
    #[arg(required_unless_present = "dump_tree")]
    paths: Vec<PathBuf>,
    /// Output directory: `tree/` (the instrumented mirror), `runtime/`, `fences.json`.
    #[arg(long, short, default_value = "wmfix-out")]
    out: PathBuf,
    /// Scope of the inserted fences.
    #[arg(long, value_enum, default_value_t = FenceScope::Device)]
    fence: FenceScope,
    /// What to do with a file that does not parse cleanly.
    #[arg(long, value_enum, default_value_t = OnParseError::Warn)]
    on_parse_error: OnParseError,
    /// Print the parse tree of FILE and exit (for debugging queries).
    #[arg(long, value_name = "FILE", conflicts_with = "paths")]
    dump_tree: Option<PathBuf>,
    /// Print how many bytes of CUDA source were instrumented, and how fast.
    #[arg(long)]
    stats: bool,
    /// Print one JSON document on stdout (counts, warnings, where the output is); the summary
    /// and warnings go to stderr.
    #[arg(long, conflicts_with = "dump_tree")]
    json: bool,
    /// Instrument each `.cu` file as this preprocessor command gives it (the build's front end,
    /// for example "nvcc -E -x cu -arch=sm_90 -I include"; the file's path is appended): the
    /// translation unit, headers and library code included; fences map back to the file:line
    /// they came from, those in library headers are listed as findings
    #[arg(long, value_name = "COMMAND")]
    preprocess: Option<String>,
    /// A qualifier or namespace macro defined outside the tree (a header elsewhere, the build's
    /// -D): `--macro MY_DEVICE=__device__`; repeatable. Those the tree defines are learnt.
    #[arg(long = "macro", value_name = "NAME=EXPANSION")]
    macros: Vec<super::values::MacroDef>,
}

/// What `wmfix insert --json` prints.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct InsertJson {
    /// Files in the input tree.
    pub files: usize,
    /// Of those, CUDA sources and C/C++ headers (which the rewriter reads).
    #[serde(default)]
    pub cuda_files: usize,
    /// Files instrumented (the others are copied as they are).
    pub instrumented: usize,
    pub fences: usize,
    /// Of those, the fences in functions no launched kernel reaches (never executed).
    #[serde(default)]
    pub unreachable: usize,
    /// Parse errors and macros reported, each with its file:line:col.
    pub warnings: Vec<String>,
    pub tree: PathBuf,
    pub fences_json: PathBuf,
    /// Bytes of CUDA source instrumented and the seconds it took (parse, plan, render).
    pub cuda_bytes: usize,
    pub seconds: f64,
    /// Uses of `__device__` variables declared in include guards, namespaces or headers.
    #[serde(default)]
    pub hidden_globals: usize,
    /// Pointer parameters that every call passes shared or per-thread memory (no fence).
    #[serde(default)]
    pub local_params: usize,
    /// Device functions declared through a qualifier macro (or extended lambdas), and those of
    /// them with a fence.
    #[serde(default)]
    pub macro_functions: usize,
    #[serde(default)]
    pub macro_functions_fenced: usize,
    /// `#elif`/`#else` branches holding a fence that only the first branch of each `#if` group
    /// would have left uninstrumented (a group splitting a statement: every configuration of
    /// the file's groups planned).
    #[serde(default)]
    pub if_branches: usize,
    /// Preprocessed mode: fences inside library headers, `path:line (fence N)`.
    #[serde(default)]
    pub library_fences: Vec<String>,
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    if let Some(file) = args.dump_tree {
        let text = std::fs::read_to_string(&file).map_err(|e| {
            exit_code::fail(exit_code::NO_INPUT, format!("{}: {e}", file.display()))
        })?;
        // A reader that stops early (`| head`) is no error.
        let tree = crate::rewrite::dump::dump_tree(&text);
        return match std::io::Write::write_all(&mut std::io::stdout().lock(), tree.as_bytes()) {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
            _ => Ok(exit_code::OK),
        };
    }
    let out = crate::out_dir::OutDir::open(&args.out, &args.paths)?;
    let near = args.paths.first().cloned();
    let opts = insert::Options {
        paths: args.paths,
        out: out.root().to_path_buf(),
        fence: args.fence,
        on_parse_error: args.on_parse_error,
        only: None,
        macros: args.macros.into_iter().map(|m| (m.0, m.1)).collect(),
        host_library: None,
        preprocess: args.preprocess.map(|c| insert::Preprocessor {
            command: c.split_whitespace().map(str::to_string).collect(),
            env: crate::app::toolchain::build_env(near.as_deref()),
        }),
    };
    let s = insert::run(&opts, &out)?;
    for w in &s.warnings {
        eprintln!("{}", exit_code::warning(w));
    }
    let mut human = format!(
        "wmfix: {} fences in {} of {} CUDA files; instrumented tree in {}, fence list in {}\n",
        s.fences,
        s.instrumented,
        s.cuda_files,
        s.tree.display(),
        s.fences_json.display()
    );
    if s.unreachable > 0 {
        human += &format!(
            "wmfix: {} of them in functions no launched kernel reaches: never executed, `unreachable` in the fence list (reduce drops them without a run)\n",
            s.unreachable
        );
    }
    if !s.library_fences.is_empty() {
        human += &format!(
            "wmfix: {} fences inside library headers (findings for the library, not the program's own code):\n",
            s.library_fences.len()
        );
        for f in &s.library_fences {
            human += &format!("  {f}\n");
        }
    }
    let secs = s.cuda_time.as_secs_f64();
    if args.stats {
        human += &format!(
            "wmfix: instrumented {} bytes of CUDA source in {:.3} ms: {:.1} MB/s (and {:.0} ms to compile the queries, once per process)\n",
            s.cuda_bytes,
            secs * 1e3,
            s.cuda_bytes as f64 / 1e6 / secs.max(1e-9),
            s.query_time.as_secs_f64() * 1e3
        );
        human += &format!(
            "wmfix: {} uses of __device__ variables declared in include guards, namespaces or headers; {} pointer parameters passed only shared or per-thread memory (no fence); {} device functions declared through qualifier macros or extended lambdas, {} of them with fences\n",
            s.precision.hidden_globals,
            s.precision.local_params,
            s.precision.macro_functions,
            s.precision.macro_functions_fenced
        );
    }
    let doc = InsertJson {
        files: s.files,
        cuda_files: s.cuda_files,
        instrumented: s.instrumented,
        fences: s.fences,
        unreachable: s.unreachable,
        warnings: s.warnings,
        tree: s.tree,
        fences_json: s.fences_json,
        cuda_bytes: s.cuda_bytes,
        seconds: secs,
        library_fences: s.library_fences.clone(),
        hidden_globals: s.precision.hidden_globals,
        local_params: s.precision.local_params,
        macro_functions: s.precision.macro_functions,
        macro_functions_fenced: s.precision.macro_functions_fenced,
        if_branches: s.precision.if_branches,
    };
    super::report(args.json, &doc, &human);
    Ok(exit_code::OK)
}

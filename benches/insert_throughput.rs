//! Throughput of the rewriter: MB/s of CUDA source parsed, planned (on all cores, as `insert`
//! does) and rendered, and how time and memory grow with file size and nesting depth; then the
//! same input through the command line (`wmfix insert`: reading, writing the tree and
//! `fences.json`), with the peak memory of that process.
//! Targets (issues 2, 15 and 26): at least 10 MB/s on many files; one 16 MB file through the
//! command line in <= 4 s and <= 400 MB; 20,000 nested `if`s in <= 2 s and <= 1 GB.
//! Kernel-dense code (issue 47): 8 MB of small kernels with `__device__` variables in <= 3.2 s,
//! <= 1.3x the same kernels without them.
//! Run: `cargo bench --bench insert_throughput` (every scenario, each in its own process so
//! that its peak memory is its own), or `... -- big 16` / `deep 20000` / `tree 2000` /
//! `dense 8` / `dense-vars 8` / `folder PATH` (a folder of real code, through the command line
//! only) for one. `WMFIX_BENCH_RUNS=N` runs each command-line case N times (default 1);
//! `WMFIX_BENCH_RAW=FILE` appends each case's runs to FILE, one JSON line each (its times, the
//! commit, the machine's cores and load, the date, the command): the raw file the docs' speed
//! figures come from (`scripts/results.py benches/results insert-speed`).

use std::path::PathBuf;
use std::time::Instant;
use wmfix::fences::scope::FenceScope;
use wmfix::rewrite::render;
use wmfix::rewrite::source::SourceFile;

/// A large program: the fixture sources repeated, each copy in its own file.
fn corpus(copies: usize) -> Vec<(PathBuf, String)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/constructs");
    let mut files = Vec::new();
    for name in ["control.cu", "memory.cu", "templates.cu"] {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        for i in 0..copies {
            files.push((PathBuf::from(format!("{i:04}_{name}")), text.clone()));
        }
    }
    files
}

/// One file of small kernels, `mb` MB long.
fn big_file(mb: usize) -> Vec<(PathBuf, String)> {
    let kernel = |i: usize| {
        format!(
            "__global__ void k{i}(int *a, int *b, int n) {{\n  int i = threadIdx.x + blockIdx.x * blockDim.x;\n  if (i < n) {{ a[i] = b[i] + 1; atomicAdd(&b[0], a[i]); }}\n}}\n"
        )
    };
    let mut text = String::new();
    let mut i = 0;
    while text.len() < mb * 1_000_000 {
        text += &kernel(i);
        i += 1;
    }
    vec![(PathBuf::from("big.cu"), text)]
}

/// Kernel-dense code, `mb` MB in one file, as generated or instantiated code looks: many small
/// kernels, each with a few global loads, a store and an atomic, and (`vars`) a `__device__`
/// variable of its own that it writes (issue 47: time a MB must not depend on the shape, and the
/// variables may cost at most 1.3x).
fn dense_file(mb: usize, vars: bool) -> Vec<(PathBuf, String)> {
    let kernel = |i: usize| {
        let (var, use_) = if vars {
            (format!("__device__ int g{i};\n"), format!("g{i} = x;"))
        } else {
            (String::new(), "c[i] = x;".to_string())
        };
        format!(
            "{var}__global__ void k{i}(int *a, const int *b, int *c, int m) {{\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < m) {{\n    int x = b[i];\n    a[i] = x + 1;\n    {use_}\n    atomicAdd(c, x);\n  }}\n}}\n"
        )
    };
    let mut text = String::new();
    let mut i = 0;
    while text.len() < mb * 1_000_000 {
        text += &kernel(i);
        i += 1;
    }
    vec![(PathBuf::from("dense.cu"), text)]
}

/// One kernel with `depth` nested `if`s, each condition an access.
fn deep_file(depth: usize) -> Vec<(PathBuf, String)> {
    let mut text = String::from("__global__ void k(int *a) {\n");
    for i in 0..depth {
        text += &format!("if (a[{}]) {{\n", i % 7);
    }
    text += "a[0] = 1;\n";
    text += &"}\n".repeat(depth);
    text += "}\n";
    vec![(PathBuf::from("deep.cu"), text)]
}

/// Parses, plans and renders `files` `runs` times; each run's time and the fence count.
fn instrument(files: &[(PathBuf, String)], runs: usize) -> (Vec<f64>, usize) {
    let mut times = Vec::new();
    let mut fences = 0;
    for _ in 0..runs {
        let t0 = Instant::now();
        let sources = files
            .iter()
            .map(|(rel, text)| SourceFile::new(rel.clone(), rel.clone(), text.clone()))
            .collect();
        let mut planned = render::plan_files(sources, Default::default());
        // As `insert` does; nothing is copied here.
        wmfix::rewrite::reach::mark(&mut planned, std::path::Path::new("."), &[]);
        let done =
            render::render(&mut planned, FenceScope::Device, |_| "wmfix.cuh".into()).unwrap();
        times.push(t0.elapsed().as_secs_f64());
        fences = done.fences.len();
    }
    (times, fences)
}

/// `wmfix insert --json` of `files` written to a folder: its wall-clock seconds, the fences it
/// made, and its peak resident memory in MB.
fn through_cli(files: &[(PathBuf, String)]) -> (f64, usize, f64) {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    for (rel, text) in files {
        let path = src.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    cli_on(&src, dir.path())
}

/// `wmfix insert --json SRC --out WORK/out`: seconds, fences, and the peak resident memory in MB
/// of the children so far (each scenario runs in a process of its own).
fn cli_on(src: &std::path::Path, work: &std::path::Path) -> (f64, usize, f64) {
    let out_dir = work.join("out");
    let _ = std::fs::remove_dir_all(&out_dir);
    let t0 = Instant::now();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_wmfix"))
        .arg("insert")
        .arg(src)
        .arg("--out")
        .arg(&out_dir)
        .arg("--json")
        .output()
        .unwrap();
    let secs = t0.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let fences = doc["fences"].as_u64().unwrap() as usize;
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    (secs, fences, usage.ru_maxrss as f64 / 1024.0)
}

/// The process's peak resident memory in MB (VmHWM).
fn peak_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// How many times each command-line case runs (`WMFIX_BENCH_RUNS`, default 1).
fn cli_runs() -> usize {
    std::env::var("WMFIX_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(1)
}

/// One case's record for `WMFIX_BENCH_RAW`.
struct Record<'a> {
    scenario: &'a str,
    arg: &'a str,
    mode: &'a str,
    mb: f64,
    files: usize,
    fences: usize,
    seconds: Vec<f64>,
    peak_mb: f64,
    target: &'a str,
}

fn output_of(program: &str, args: &[&str]) -> String {
    std::process::Command::new(program)
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

/// Appends `r` to the raw file, when `WMFIX_BENCH_RAW` names one.
fn record(r: &Record) {
    let Ok(path) = std::env::var("WMFIX_BENCH_RAW") else {
        return;
    };
    let dirty = !output_of("git", &["status", "--porcelain", "--untracked-files=no"]).is_empty();
    let commit = output_of("git", &["rev-parse", "--short", "HEAD"]) + if dirty { "+" } else { "" };
    let load: Vec<f64> = std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .filter_map(|v| v.parse().ok())
        .collect();
    let runs = cli_runs();
    let line = serde_json::json!({
        "bench": "insert_throughput",
        "scenario": r.scenario,
        "arg": r.arg,
        "mode": r.mode,
        "mb": r.mb,
        "files": r.files,
        "fences": r.fences,
        "seconds": r.seconds,
        "peak_mb": r.peak_mb,
        "target": r.target,
        "commit": commit,
        "nproc": std::thread::available_parallelism().map_or(1, |n| n.get()),
        "cpu": std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default().lines()
            .find_map(|l| l.strip_prefix("model name").and_then(|v| v.split_once(':')).map(|v| v.1.trim().to_string())),
        "load": load,
        "date": output_of("date", &["-u", "+%Y-%m-%dT%H:%M:%SZ"]),
        "command": format!("WMFIX_BENCH_RUNS={runs} cargo bench --bench insert_throughput -- {} {}", r.scenario, r.arg),
    });
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    writeln!(f, "{line}").unwrap();
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// A folder of real code (cccl's, say) through the command line only, `WMFIX_BENCH_RUNS` times.
fn folder(path: &str) {
    let src = std::path::Path::new(path);
    let (mut files, mut bytes) = (0usize, 0u64);
    for e in walkdir::WalkDir::new(src)
        .into_iter()
        .filter_map(Result::ok)
    {
        if e.file_type().is_file() {
            files += 1;
            bytes += e.metadata().map_or(0, |m| m.len());
        }
    }
    let mb = bytes as f64 / 1e6;
    let work = tempfile::tempdir().unwrap();
    let (mut seconds, mut fences, mut peak) = (Vec::new(), 0, 0.0f64);
    for _ in 0..cli_runs() {
        let (s, f, p) = cli_on(src, work.path());
        seconds.push(s);
        fences = f;
        peak = peak.max(p);
    }
    println!(
        "folder {path}: {mb:.1} MB in {files} files, {fences} fences: median of {} {:.3} s = {:.2} MB/s, peak {peak:.0} MB",
        seconds.len(),
        median(&seconds),
        mb / median(&seconds)
    );
    record(&Record {
        scenario: "folder",
        arg: path,
        mode: "cli",
        mb,
        files,
        fences,
        seconds,
        peak_mb: peak,
        target: "-",
    });
}

fn scenario(name: &str, size: usize) {
    // Compiling the queries happens once per process: not part of any scenario's time.
    wmfix::rewrite::queries::check().unwrap();
    let (files, runs, target) = match name {
        "tree" => (corpus(size), 3, ">= 10 MB/s"),
        "big" => (
            big_file(size),
            1,
            "16 MB through the CLI in <= 4 s and <= 400 MB",
        ),
        "deep" => (deep_file(size), 1, "20,000 in <= 2 s and <= 1 GB"),
        "dense" => (
            dense_file(size, false),
            1,
            "8 MB with variables in <= 3.2 s",
        ),
        "dense-vars" => (
            dense_file(size, true),
            1,
            "8 MB in <= 3.2 s, <= 1.3x without variables",
        ),
        _ => panic!("scenarios: tree N, big MB, deep N, dense MB, dense-vars MB, folder PATH"),
    };
    let bytes: usize = files.iter().map(|f| f.1.len()).sum();
    let mb = bytes as f64 / 1e6;
    // First, while this process is small: a child's peak counts its parent's from before `exec`.
    let mut cli = Vec::new();
    for _ in 0..cli_runs() {
        cli.push(through_cli(&files));
    }
    let (times, fences) = instrument(&files, runs);
    let best = times.iter().copied().fold(f64::INFINITY, f64::min);
    let peak = peak_mb();
    println!(
        "{name} {size}: {mb:.1} MB in {} files, {fences} fences: {} {best:.3} s = {:.2} MB/s, peak {peak:.0} MB (target {target})",
        files.len(),
        if runs > 1 { "best of 3" } else { "one run" },
        mb / best,
    );
    let arg = size.to_string();
    let base = |mode, seconds, fences, peak_mb| Record {
        scenario: name,
        arg: &arg,
        mode,
        mb,
        files: files.len(),
        fences,
        seconds,
        peak_mb,
        target,
    };
    record(&base("library", times, fences, peak));
    let seconds: Vec<f64> = cli.iter().map(|c| c.0).collect();
    let cli_peak = cli.iter().map(|c| c.2).fold(0.0, f64::max);
    let cli_fences = cli.last().map_or(0, |c| c.1);
    println!(
        "{name} {size} through the CLI: {cli_fences} fences: median of {} {:.3} s = {:.2} MB/s, peak {cli_peak:.0} MB (target {target})",
        seconds.len(),
        median(&seconds),
        mb / median(&seconds),
    );
    record(&base("cli", seconds, cli_fences, cli_peak));
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    if let [name, arg] = args.as_slice() {
        if name == "folder" {
            return folder(arg);
        }
        return scenario(name, arg.parse().expect("a size"));
    }
    println!(
        "insert_throughput on {} cores",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    let all = [
        ("tree", 2000),
        ("big", 1),
        ("big", 5),
        ("big", 20),
        ("deep", 2000),
        ("deep", 20000),
        ("dense", 8),
        ("dense-vars", 8),
    ];
    for (name, size) in all {
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args([name, &size.to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "{name} {size} failed");
    }
}

//! Throughput of the rewriter: MB/s of CUDA source parsed, planned (on all cores, as `insert`
//! does) and rendered.
//! Target (issue 2): at least 5 MB/s. Run: `cargo bench --bench insert_throughput`.

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

fn main() {
    let files = corpus(2000);
    if std::env::var("PARSE_ONLY").is_ok() {
        let t0 = Instant::now();
        for (_, text) in &files {
            std::hint::black_box(wmfix::rewrite::parse::parse(text));
        }
        println!("parse only: {:.3} s", t0.elapsed().as_secs_f64());
    }
    let bytes: usize = files.iter().map(|f| f.1.len()).sum();
    let mut best = f64::INFINITY;
    let mut fences = 0;
    for _ in 0..3 {
        let t0 = Instant::now();
        let sources = files
            .iter()
            .map(|(rel, text)| SourceFile::new(rel.clone(), rel.clone(), text.clone()))
            .collect();
        let mut planned = render::plan_files(sources);
        let done =
            render::render(&mut planned, FenceScope::Device, |_| "wmfix.cuh".into()).unwrap();
        best = best.min(t0.elapsed().as_secs_f64());
        fences = done.fences.len();
    }
    println!(
        "insert_throughput: {:.1} MB in {} files, {fences} fences: best of 3 {:.3} s = {:.1} MB/s (target >= 5 MB/s)",
        bytes as f64 / 1e6,
        files.len(),
        best,
        bytes as f64 / 1e6 / best
    );
}

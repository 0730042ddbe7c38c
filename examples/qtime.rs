use std::time::Instant;
use tree_sitter::{Query, QueryCursor, StreamingIterator};
fn main() {
    let dir = std::path::PathBuf::from("tests/fixtures/constructs");
    let mut texts = vec![];
    for n in ["control.cu", "memory.cu", "templates.cu"] { texts.push(std::fs::read_to_string(dir.join(n)).unwrap()); }
    let trees: Vec<_> = (0..2000).flat_map(|_| texts.iter().map(|t| (t, wmfix::parse::parse(t)))).collect();
    for f in std::fs::read_dir("queries").unwrap() {
        let p = f.unwrap().path();
        let q = Query::new(&wmfix::queries::language(), &std::fs::read_to_string(&p).unwrap()).unwrap();
        let t0 = Instant::now();
        let mut n = 0;
        for (t, tree) in &trees {
            let mut c = QueryCursor::new();
            let mut it = c.matches(&q, tree.root_node(), t.as_bytes());
            while let Some(m) = it.next() { n += m.captures().len(); }
        }
        println!("{:?}: {:.3}s {n}", p.file_name().unwrap(), t0.elapsed().as_secs_f64());
    }
    let t0 = Instant::now();
    for (t, tree) in &trees { let c = wmfix::queries::Captures::run(wmfix::queries::all(), tree.root_node(), t.as_bytes()); std::hint::black_box(c); }
    println!("all: {:.3}s", t0.elapsed().as_secs_f64());
    let t0 = Instant::now();
    let mut n = 0usize;
    for (_t, tree) in &trees {
        let mut c = tree.walk();
        'outer: loop {
            n += c.node().kind_id() as usize;
            if c.goto_first_child() { continue; }
            while !c.goto_next_sibling() { if !c.goto_parent() { break 'outer; } }
        }
    }
    println!("walk: {:.3}s {n}", t0.elapsed().as_secs_f64());
    let big: String = (0..200).map(|_| texts.concat()).collect();
    let t0 = Instant::now();
    let tree = wmfix::parse::parse(&big);
    println!("parse big {} MB: {:.3}s", big.len() as f64/1e6, t0.elapsed().as_secs_f64());
    let t0 = Instant::now();
    let c = wmfix::queries::Captures::run(wmfix::queries::all(), tree.root_node(), big.as_bytes());
    std::hint::black_box(c);
    println!("query big: {:.3}s", t0.elapsed().as_secs_f64());
}
#[allow(dead_code)]
fn _x() {}

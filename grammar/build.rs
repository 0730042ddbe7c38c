fn main() {
    let src = std::path::Path::new("src");
    let mut c = cc::Build::new();
    c.std("c11").include(src).warnings(false);
    for file in ["parser.c", "scanner.c"] {
        let path = src.join(file);
        println!("cargo:rerun-if-changed={}", path.display());
        c.file(path);
    }
    c.compile("tree-sitter-cuda-wmfix");
}

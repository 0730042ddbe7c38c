// Embeds every header of runtime-cu/ and the host library's source (top level only) and the chip
// profiles, so the binary is self-contained.
use std::{env, fs, path::Path};

fn main() {
    embed(
        "runtime-cu",
        &["cuh", "h", "cpp"],
        |p| p.file_name(),
        "RUNTIME_FILES",
        "runtime_files.rs",
    );
    // The chip profiles, which wmfix picks by the GPU's name (the file's stem).
    embed(
        "runtime-cu/profiles",
        &["toml"],
        |p| p.file_stem(),
        "PROFILE_FILES",
        "profile_files.rs",
    );
    flat_walk();
}

// The walk of `src/rewrite/flat.c`, built with tree-sitter's own headers: the public ones its
// crate exports (`links = "tree-sitter"`), the internal ones beside them.
fn flat_walk() {
    let include =
        env::var("DEP_TREE_SITTER_INCLUDE").expect("tree-sitter exports its include path");
    let internal = Path::new(&include).with_file_name("src");
    println!("cargo:rerun-if-changed=src/rewrite/flat.c");
    cc::Build::new()
        .std("c11")
        .include(&include)
        .include(&internal)
        .file("src/rewrite/flat.c")
        .compile("wmfix_flat");
}

// Writes `OUT_DIR/<file>`: `pub const <constant>: &[(&str, &str)]`, the `key` and the text of
// each file of `dir` (top level only) whose extension is one of `extensions`, by path.
fn embed(
    dir: &str,
    extensions: &[&str],
    key: fn(&Path) -> Option<&std::ffi::OsStr>,
    constant: &str,
    file: &str,
) {
    println!("cargo:rerun-if-changed={dir}");
    let mut entries: Vec<_> = fs::read_dir(dir)
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    entries.retain(|p| {
        p.extension()
            .is_some_and(|e| extensions.iter().any(|x| e == *x))
    });
    entries.sort();
    let mut code = format!("pub const {constant}: &[(&str, &str)] = &[\n");
    for p in entries {
        println!("cargo:rerun-if-changed={}", p.display());
        let abs = fs::canonicalize(&p).unwrap();
        let name = key(&p).unwrap().to_str().unwrap();
        code.push_str(&format!(
            "    ({name:?}, include_str!({:?})),\n",
            abs.display().to_string()
        ));
    }
    code.push_str("];\n");
    fs::write(Path::new(&env::var("OUT_DIR").unwrap()).join(file), code).unwrap();
}

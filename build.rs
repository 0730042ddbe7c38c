// Embeds every header of runtime-cu/ (top level only) so the binary is self-contained.
use std::{env, fs, path::Path};

fn main() {
    let dir = Path::new("runtime-cu");
    println!("cargo:rerun-if-changed=runtime-cu");
    let mut entries: Vec<_> = fs::read_dir(dir)
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    entries.retain(|p| p.extension().is_some_and(|e| e == "cuh" || e == "h"));
    entries.sort();
    let mut code = String::from("pub const RUNTIME_FILES: &[(&str, &str)] = &[\n");
    for p in entries {
        println!("cargo:rerun-if-changed={}", p.display());
        let abs = fs::canonicalize(&p).unwrap();
        let name = p.file_name().unwrap().to_str().unwrap();
        code.push_str(&format!(
            "    ({name:?}, include_str!({:?})),\n",
            abs.display().to_string()
        ));
    }
    code.push_str("];\n");
    fs::write(
        Path::new(&env::var("OUT_DIR").unwrap()).join("runtime_files.rs"),
        code,
    )
    .unwrap();
}

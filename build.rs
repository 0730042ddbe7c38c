// Embeds every header of runtime-cu/ (top level only) and the chip profiles, so the binary is
// self-contained.
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
    embed_profiles();
}

// Embeds the chip profiles of runtime-cu/profiles/, which wmfix picks by the GPU's name.
fn embed_profiles() {
    let dir = Path::new("runtime-cu/profiles");
    println!("cargo:rerun-if-changed=runtime-cu/profiles");
    let mut entries: Vec<_> = fs::read_dir(dir)
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    entries.retain(|p| p.extension().is_some_and(|e| e == "toml"));
    entries.sort();
    let mut code = String::from("pub const PROFILE_FILES: &[(&str, &str)] = &[\n");
    for p in entries {
        println!("cargo:rerun-if-changed={}", p.display());
        let abs = fs::canonicalize(&p).unwrap();
        let stem = p.file_stem().unwrap().to_str().unwrap();
        code.push_str(&format!(
            "    ({stem:?}, include_str!({:?})),\n",
            abs.display().to_string()
        ));
    }
    code.push_str("];\n");
    fs::write(
        Path::new(&env::var("OUT_DIR").unwrap()).join("profile_files.rs"),
        code,
    )
    .unwrap();
}

//! Finding nvcc for the program's build command: PATH, then `CUDA_HOME`, then the PyPI install
//! that `scripts/nvcc-env.sh` makes (`.venv-nvcc/` in the current folder or in wmfix's source).

use std::path::{Path, PathBuf};

/// Environment variables that put nvcc on the build command's PATH (none if it already is).
pub fn build_env() -> Vec<(String, String)> {
    let path = std::env::var("PATH").unwrap_or_default();
    if std::env::split_paths(&path).any(|d| d.join("nvcc").is_file()) {
        return vec![];
    }
    let Some(bin) = nvcc_bin_dir() else {
        return vec![];
    };
    let mut env = vec![("PATH".to_string(), format!("{}:{path}", bin.display()))];
    // The PyPI wheel keeps its libraries in lib/, where nvcc does not look when linking.
    let lib = bin.parent().map(|p| p.join("lib"));
    if let Some(lib) = lib.filter(|l| l.join("libcudart_static.a").exists()) {
        let lp = std::env::var("LIBRARY_PATH").unwrap_or_default();
        env.push((
            "LIBRARY_PATH".to_string(),
            format!("{}:{lp}", lib.display()),
        ));
    }
    env
}

fn nvcc_bin_dir() -> Option<PathBuf> {
    if let Ok(home) = std::env::var("CUDA_HOME") {
        let bin = Path::new(&home).join("bin");
        if bin.join("nvcc").is_file() {
            return Some(bin);
        }
    }
    let roots = [
        std::env::current_dir().ok(),
        Some(PathBuf::from(env!("CARGO_MANIFEST_DIR"))),
    ];
    roots
        .into_iter()
        .flatten()
        .find_map(|r| venv_bin(&r.join(".venv-nvcc")))
}

fn venv_bin(venv: &Path) -> Option<PathBuf> {
    let lib = std::fs::read_dir(venv.join("lib")).ok()?;
    lib.filter_map(Result::ok)
        .map(|py| py.path().join("site-packages/nvidia/cu13/bin"))
        .find(|bin| bin.join("nvcc").is_file())
}

//! Finding nvcc for the program's build command, at run time: PATH, then `CUDA_HOME`, then
//! `/usr/local/cuda`, then the PyPI install that `scripts/nvcc-env.sh` makes (`.venv-nvcc/` in
//! the application's folder or one above it, else in the current folder or one above it).

use std::path::{Path, PathBuf};

/// What to do when a build's shell finds no nvcc.
pub const NO_NVCC: &str = "nvcc is not on PATH, in $CUDA_HOME/bin, /usr/local/cuda/bin or a .venv-nvcc in or above the application's folder or this one: put it on PATH, set CUDA_HOME, or run `source scripts/nvcc-env.sh` in a wmfix checkout (it installs nvcc 13.0 from PyPI into .venv-nvcc)";

/// Whether a build log says the shell found no nvcc (`sh: 1: nvcc: not found`, bash's
/// `nvcc: command not found`).
pub fn missing_nvcc(log: &str) -> bool {
    log.lines()
        .any(|l| l.contains("nvcc: not found") || l.contains("nvcc: command not found"))
}

/// Environment variables that put nvcc on the build command's PATH (none if it already is).
/// `app`: the application's folder.
pub fn build_env(app: Option<&Path>) -> Vec<(String, String)> {
    let path = std::env::var("PATH").unwrap_or_default();
    if std::env::split_paths(&path).any(|d| d.join("nvcc").is_file()) {
        return vec![];
    }
    let cwd = std::env::current_dir().ok();
    let starts: Vec<&Path> = app.into_iter().chain(cwd.as_deref()).collect();
    let cuda_home = std::env::var_os("CUDA_HOME").map(PathBuf::from);
    let Some(bin) = nvcc_bin_dir(cuda_home, Path::new("/usr/local/cuda"), &starts) else {
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

fn nvcc_bin_dir(cuda_home: Option<PathBuf>, system: &Path, starts: &[&Path]) -> Option<PathBuf> {
    let installed = cuda_home
        .iter()
        .map(|h| h.join("bin"))
        .chain([system.join("bin")])
        .find(|bin| bin.join("nvcc").is_file());
    installed.or_else(|| {
        starts
            .iter()
            .flat_map(|s| s.ancestors())
            .find_map(|d| venv_bin(&d.join(".venv-nvcc")))
    })
}

fn venv_bin(venv: &Path) -> Option<PathBuf> {
    let lib = std::fs::read_dir(venv.join("lib")).ok()?;
    lib.filter_map(Result::ok)
        .map(|py| py.path().join("site-packages/nvidia/cu13/bin"))
        .find(|bin| bin.join("nvcc").is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_nvcc(bin: &Path) {
        std::fs::create_dir_all(bin).unwrap();
        std::fs::write(bin.join("nvcc"), "").unwrap();
    }

    #[test]
    fn nvcc_is_found_from_cuda_home_the_system_or_a_venv_above_the_app_never_a_built_in_path() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let app = root.join("project/apps/dot");
        std::fs::create_dir_all(&app).unwrap();
        let none = root.join("no-cuda");
        assert_eq!(nvcc_bin_dir(None, &none, &[&app]), None);
        // A venv two folders above the application.
        let venv_bin = root.join("project/.venv-nvcc/lib/python3.12/site-packages/nvidia/cu13/bin");
        fake_nvcc(&venv_bin);
        assert_eq!(nvcc_bin_dir(None, &none, &[&app]), Some(venv_bin.clone()));
        // An installed toolkit comes first: /usr/local/cuda, then CUDA_HOME before it.
        let system = root.join("usr-local-cuda");
        fake_nvcc(&system.join("bin"));
        assert_eq!(
            nvcc_bin_dir(None, &system, &[&app]),
            Some(system.join("bin"))
        );
        let home = root.join("cuda-home");
        fake_nvcc(&home.join("bin"));
        assert_eq!(
            nvcc_bin_dir(Some(home.clone()), &system, &[&app]),
            Some(home.join("bin"))
        );
    }
}

//! Which chip profile (runtime-cu/README.md, "Chip profiles") the runs of `test` and `reduce`
//! get: the file in `WMFIX_PROFILE` when the user set one; else the profile wmfix ships for the
//! GPU it sees (`runtime-cu/profiles/<gpu>.toml`, built into the binary, written into the output
//! folder); else none, and the runtime uses its built-in default (`hopper-default`). The runs
//! get it as an absolute `WMFIX_PROFILE`, since they run in the build's folder, and `summary.json`
//! records which one it was.

use crate::exit_code::{self, fail};
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// How the profile was chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// `WMFIX_PROFILE` was set in wmfix's environment.
    Environment,
    /// The profile wmfix ships for the GPU it saw.
    Shipped,
    /// No profile: the runtime's built-in default (no GPU seen, or none ships for it).
    BuiltIn,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileUsed {
    /// The profile's name: its file's stem, or `hopper-default` for the built-in one.
    pub name: String,
    pub source: Source,
    /// The file the runs read, absent for the built-in profile.
    pub path: Option<PathBuf>,
    /// The GPU wmfix saw (device 0 of those the runs use), if any.
    pub gpu: Option<String>,
}

impl ProfileUsed {
    /// The variables each run gets.
    pub fn env(&self) -> Vec<(String, String)> {
        self.path
            .iter()
            .map(|p| ("WMFIX_PROFILE".to_string(), p.display().to_string()))
            .collect()
    }

    /// One line for the user.
    pub fn describe(&self) -> String {
        let why = match (self.source, &self.gpu) {
            (Source::Environment, _) => "from WMFIX_PROFILE".to_string(),
            (Source::Shipped, Some(g)) => format!("shipped for {g}"),
            (Source::Shipped, None) => "shipped".to_string(),
            (Source::BuiltIn, Some(g)) => format!("the runtime's built-in; none ships for {g}"),
            (Source::BuiltIn, None) => "the runtime's built-in; no GPU seen".to_string(),
        };
        format!("chip profile {} ({why})", self.name)
    }
}

/// The profile for runs that write into `out`, on the GPU named `gpu`, with `WMFIX_PROFILE`
/// set to `from_env` or not. A shipped profile is written to `out/profiles/<name>.toml`.
pub fn choose(out: &Path, gpu: Option<&str>, from_env: Option<PathBuf>) -> Result<ProfileUsed> {
    let gpu = gpu.map(str::to_string);
    if let Some(path) = from_env.filter(|p| !p.as_os_str().is_empty()) {
        let path = std::path::absolute(&path)?;
        if !path.is_file() {
            return Err(fail(
                exit_code::NO_INPUT,
                format!(
                    "WMFIX_PROFILE={}: no such file (every run would fail to read it)",
                    path.display()
                ),
            ));
        }
        let name = path
            .file_stem()
            .map_or("profile".into(), |s| s.to_string_lossy().into_owned());
        return Ok(ProfileUsed {
            name,
            source: Source::Environment,
            path: Some(path),
            gpu,
        });
    }
    let Some((name, text)) = gpu.as_deref().and_then(crate::chip::shipped_for) else {
        return Ok(ProfileUsed {
            name: "hopper-default".into(),
            source: Source::BuiltIn,
            path: None,
            gpu,
        });
    };
    let dir = std::path::absolute(out.join("profiles"))?;
    let path = dir.join(format!("{name}.toml"));
    std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(&path, text))
        .map_err(|e| fail(exit_code::CANT_WRITE, format!("{}: {e}", path.display())))?;
    Ok(ProfileUsed {
        name: name.into(),
        source: Source::Shipped,
        path: Some(path),
        gpu,
    })
}

/// The profile for runs on `gpus` (the first of them, or device 0) that write into `out`.
pub fn for_runs(out: &Path, gpus: &[String]) -> Result<ProfileUsed> {
    let from_env = std::env::var_os("WMFIX_PROFILE").map(PathBuf::from);
    choose(out, gpu_name(gpus).as_deref(), from_env)
}

/// The name of the GPU the runs use first; none without a CUDA driver or device.
fn gpu_name(gpus: &[String]) -> Option<String> {
    if !crate::run::hold::driver_present() {
        return None;
    }
    let ordinal = gpus.first().map_or(Some(0), |g| g.parse().ok())?;
    cudarc::driver::CudaContext::new(ordinal).ok()?.name().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gpus_shipped_profile_is_written_and_passed_to_the_runs() {
        let tmp = tempfile::tempdir().unwrap();
        let p = choose(tmp.path(), Some("NVIDIA H200"), None).unwrap();
        assert_eq!(
            (p.name.as_str(), p.source),
            ("nvidia-h200", Source::Shipped)
        );
        let path = p.path.clone().unwrap();
        assert!(path.is_absolute());
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            crate::chip::shipped_for("NVIDIA H200").unwrap().1
        );
        assert_eq!(
            p.env(),
            [("WMFIX_PROFILE".into(), path.display().to_string())]
        );
        assert_eq!(
            p.describe(),
            "chip profile nvidia-h200 (shipped for NVIDIA H200)"
        );
    }

    #[test]
    fn without_a_shipped_profile_or_a_gpu_the_runtime_keeps_its_default() {
        let tmp = tempfile::tempdir().unwrap();
        for gpu in [None, Some("NVIDIA A100-SXM4-80GB")] {
            let p = choose(tmp.path(), gpu, None).unwrap();
            assert_eq!(p.source, Source::BuiltIn);
            assert_eq!(p.name, "hopper-default");
            assert!(p.env().is_empty(), "no WMFIX_PROFILE");
        }
        assert!(!tmp.path().join("profiles").exists());
    }

    #[test]
    fn wmfix_profile_overrides_and_a_missing_file_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let mine = tmp.path().join("mine.toml");
        std::fs::write(&mine, "spread = 3\n").unwrap();
        let p = choose(tmp.path(), Some("NVIDIA H200"), Some(mine.clone())).unwrap();
        assert_eq!((p.name.as_str(), p.source), ("mine", Source::Environment));
        assert_eq!(p.path, Some(mine));
        let e = choose(tmp.path(), None, Some(tmp.path().join("gone.toml"))).unwrap_err();
        assert_eq!(exit_code::code_of(&e), exit_code::NO_INPUT);
        assert!(e.to_string().contains("gone.toml: no such file"), "{e}");
    }
}

//! `wmfix.toml`: how to build, run and check one application.

use crate::exit_code::{self, fail};
use anyhow::Result;
use serde::Deserialize;
use std::path::{Path, PathBuf};

pub const FILE_NAME: &str = "wmfix.toml";

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Files and folders to instrument, relative to the config's folder.
    #[serde(default = "default_sources")]
    pub sources: Vec<PathBuf>,
    /// Shell command that builds the program, run in the (instrumented or original) tree.
    pub build: String,
    /// Shell command that runs the program once.
    pub run: String,
    /// Seconds before a run is killed; a timeout counts as an error.
    #[serde(default = "default_timeout")]
    pub timeout_s: f64,
    /// Optional shell command run after a run that exited 0; `WMFIX_RUN_OUTPUT` names the file
    /// holding the run's output. Exit status 0 means the post-condition holds.
    #[serde(default)]
    pub check: Option<String>,
    /// Exit codes that mean the program crashed (a CUDA error, say) rather than computed a
    /// wrong result. Death by a signal is always a crash, and so is an exit status of 129 to
    /// 192, which is how a shell reports its child's death by signal.
    #[serde(default)]
    pub crash_exit_codes: Vec<i32>,
    /// Whether the program needs a GPU (the default). `false` declares one that does not (a
    /// simulation, the stand-ins of wmfix's CPU tests): then no CUDA driver is looked for.
    #[serde(default = "default_gpu")]
    pub gpu: bool,
}

fn default_sources() -> Vec<PathBuf> {
    vec![PathBuf::from(".")]
}

fn default_timeout() -> f64 {
    30.0
}

fn default_gpu() -> bool {
    true
}

/// A config and the folder it lives in (the application's root).
#[derive(Debug, Clone)]
pub struct App {
    pub root: PathBuf,
    pub config: Config,
}

impl App {
    /// Reads `dir/wmfix.toml`.
    pub fn load(dir: &Path) -> Result<App> {
        let root = dir
            .canonicalize()
            .map_err(|e| fail(exit_code::NO_INPUT, format!("{}: {e}", dir.display())))?;
        let path = root.join(FILE_NAME);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            fail(
                exit_code::CONFIG,
                format!("{}: {e} (`wmfix init` writes a template)", path.display()),
            )
        })?;
        let config = parse(&text)
            .map_err(|e| fail(exit_code::CONFIG, format!("{}: {e}", path.display())))?;
        for s in &config.sources {
            if !root.join(s).exists() {
                return Err(fail(
                    exit_code::CONFIG,
                    format!(
                        "{}: source `{}` does not exist",
                        path.display(),
                        s.display()
                    ),
                ));
            }
        }
        Ok(App { root, config })
    }
}

pub fn parse(text: &str) -> Result<Config, String> {
    let config: Config = toml::from_str(text).map_err(|e| e.to_string().trim_end().to_string())?;
    if !(config.timeout_s > 0.0 && config.timeout_s.is_finite()) {
        return Err(format!(
            "timeout_s must be a positive number of seconds, not {}",
            config.timeout_s
        ));
    }
    Ok(config)
}

pub const TEMPLATE: &str = r#"# wmfix configuration: how to build, run and check this application.

# Files and folders to instrument, relative to this file. Other files are copied as they are.
sources = ["."]

# Shell command that builds the program. It runs in a copy of this folder: the instrumented
# one, and for the baseline the original. nvcc is on PATH (from PATH, CUDA_HOME, or wmfix's
# PyPI install).
build = "nvcc -O3 -arch=sm_90 -o app main.cu"

# Shell command that runs the program once. Its exit status is the post-condition: 0 = correct.
run = "./app"

# Seconds before a run is killed (with its whole process group); a timeout counts as an error.
timeout_s = 30

# Optional: a command that checks the run's output, run after a run that exited 0.
# WMFIX_RUN_OUTPUT names the file with the run's stdout and stderr. Exit 0 = correct.
# check = "grep -q PASS \"$WMFIX_RUN_OUTPUT\""

# Exit codes that mean a crash (e.g. a CUDA error) rather than a wrong result.
crash_exit_codes = []

# The program runs on a GPU: without a CUDA driver and device, wmfix stops before building.
# gpu = false declares a program that needs none (a simulation, a stand-in).
# gpu = true
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_parses_with_defaults() {
        let c = parse(TEMPLATE).unwrap();
        assert_eq!(c.sources, [PathBuf::from(".")]);
        assert_eq!(c.timeout_s, 30.0);
        assert_eq!(c.check, None);
    }

    #[test]
    fn unknown_keys_are_rejected_with_their_line() {
        let e = parse("build = \"make\"\nrun = \"./a\"\ntimeout = 3\n").unwrap_err();
        assert!(
            e.contains("line 3") && e.contains("unknown field `timeout`"),
            "{e}"
        );
    }

    #[test]
    fn missing_keys_and_bad_timeouts_are_rejected() {
        assert!(
            parse("run = \"./a\"\n")
                .unwrap_err()
                .contains("missing field `build`")
        );
        assert!(
            parse("build = \"b\"\nrun = \"r\"\ntimeout_s = 0\n")
                .unwrap_err()
                .contains("positive")
        );
    }
}

//! A CUDA MPS server of wmfix's own while the runs go (`--mps`): each run's process then gets
//! its context from the server, which is cheaper than making one. On an H100 (driver 580,
//! results/2026-11-26b-*) 16 processes starting at once made their contexts in 1.5 s instead of
//! 2.2 s, and cbe-dot's test made 1.3x more runs an hour. The server has its own pipe and log
//! folders inside the output folder, so it never meets another user's MPS server, and it is
//! told to quit when wmfix is done with it (a server left by a killed wmfix is told first).

use crate::exit_code::{UNAVAILABLE, fail};
use anyhow::Result;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The control program, looked up on PATH.
pub const CONTROL: &str = "nvidia-cuda-mps-control";

/// A running server; told to quit when dropped.
pub struct Mps {
    pipe: PathBuf,
    log: PathBuf,
}

impl Mps {
    /// Starts a server whose pipe and log folders are under `dir`.
    pub fn start(dir: &Path) -> Result<Mps> {
        let mps = Mps {
            pipe: dir.join("pipe"),
            log: dir.join("log"),
        };
        std::fs::create_dir_all(&mps.pipe)?;
        std::fs::create_dir_all(&mps.log)?;
        mps.quit();
        let o = mps
            .control()
            .arg("-d")
            .output()
            .map_err(|e| fail(UNAVAILABLE, format!("--mps: cannot run {CONTROL}: {e}")))?;
        if !o.status.success() {
            return Err(fail(
                UNAVAILABLE,
                format!(
                    "--mps: `{CONTROL} -d` failed ({}): {}",
                    o.status,
                    String::from_utf8_lossy(&o.stderr).trim()
                ),
            ));
        }
        Ok(mps)
    }

    /// The variables that point a run's CUDA at this server.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            (
                "CUDA_MPS_PIPE_DIRECTORY".to_string(),
                self.pipe.display().to_string(),
            ),
            (
                "CUDA_MPS_LOG_DIRECTORY".to_string(),
                self.log.display().to_string(),
            ),
        ]
    }

    fn control(&self) -> Command {
        let mut c = Command::new(CONTROL);
        c.envs(self.env());
        c
    }

    /// `quit` on the control pipe, waiting up to 10 s (no server there: the control program
    /// says so and ends).
    fn quit(&self) {
        let Ok(mut child) = self
            .control()
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
        else {
            return;
        };
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(b"quit\n");
        }
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for Mps {
    fn drop(&mut self) {
        self.quit();
    }
}

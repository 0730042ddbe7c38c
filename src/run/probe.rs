//! Whether the program's launches reach wmfix's runtime. Before `test` and `reduce` run under
//! stress, one run under the first environment that changes launches, with every fence on and
//! `WMFIX_VERBOSE=1`, so that the host library prints a line for each launch it plans. A
//! program none of whose launches it planned (kernels launched from code that was not
//! instrumented, or a runtime that gave up without a word, as launches on the default stream
//! did at af5886e) would be tested with no stress and no remapped ids at all; it is said
//! plainly.

use crate::app::config::App;
use crate::fences::set::FenceSet;
use crate::run::environment::{Stress, TestEnv};
use crate::run::trial::{self, TrialSpec};
use std::path::Path;

/// What one verbose run said of its launches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Launches {
    /// Launches the runtime planned.
    pub planned: usize,
    /// Of them, launches given stressing blocks.
    pub stressed: usize,
}

impl Launches {
    /// From a run's output: the host library's `wmfix: launch N: grid (..) -> (..): A
    /// application + S stressing blocks` lines.
    pub fn parse(log: &str) -> Launches {
        let mut l = Launches::default();
        for line in log.lines() {
            let Some(rest) = line.strip_prefix("wmfix: launch ") else {
                continue;
            };
            let Some(blocks) = rest.split(" + ").nth(1) else {
                continue;
            };
            l.planned += 1;
            let stress = blocks
                .split_whitespace()
                .next()
                .and_then(|n| n.parse::<u64>().ok());
            if stress.is_some_and(|n| n > 0) {
                l.stressed += 1;
            }
        }
        l
    }

    /// The warning for runs under `env`, if they would test nothing that native runs do not.
    pub fn warning(&self, env: TestEnv) -> Option<String> {
        if self.planned == 0 {
            return Some(format!(
                "wmfix: warning: under {env}, no launch of the program went through wmfix's runtime (a run with WMFIX_VERBOSE=1 printed no launch line): its kernels get no stressing blocks and no remapped ids, so its runs test no more than native runs; are its kernels launched from files wmfix did not instrument?"
            ));
        }
        (env.stress != Stress::No && self.stressed == 0).then(|| {
            format!(
                "wmfix: warning: under {env}, none of the program's {} launches got stressing blocks (a run with WMFIX_VERBOSE=1): its runs are not stressed",
                self.planned
            )
        })
    }
}

/// Before `test` or `reduce` runs under `envs`: `check` under the first that changes launches,
/// on the first of `gpus`.
pub fn before_runs(
    app: &App,
    instrumented: &Path,
    envs: &[TestEnv],
    run_env: &[(String, String)],
    gpus: &[String],
    log: &Path,
) -> std::io::Result<Option<Launches>> {
    match env_to_probe(envs) {
        Some(env) => check(
            app,
            instrumented,
            env,
            run_env,
            gpus.first().map(String::as_str),
            log,
        ),
        None => Ok(None),
    }
}

/// The first of `envs` under which the runtime plans launches (not no-str-).
pub fn env_to_probe(envs: &[TestEnv]) -> Option<TestEnv> {
    envs.iter()
        .copied()
        .find(|e| e.stress != Stress::No || e.randomise)
}

/// One verbose run of the instrumented tree under `env` with every fence, `run_env` added; its
/// launches, or `None` for a program that needs no GPU (a stand-in runs no runtime) or a run
/// that ctrl-c stopped. Says the warning on stderr.
pub fn check(
    app: &App,
    instrumented: &Path,
    env: TestEnv,
    run_env: &[(String, String)],
    gpu: Option<&str>,
    log: &Path,
) -> std::io::Result<Option<Launches>> {
    if !app.config.gpu {
        return Ok(None);
    }
    let mut vars = TrialSpec::new(env, 0, &FenceSet::All).env_vars();
    vars.extend(run_env.iter().cloned());
    vars.push(("WMFIX_VERBOSE".to_string(), "1".to_string()));
    if let Some(g) = gpu {
        vars.push(("CUDA_VISIBLE_DEVICES".to_string(), g.to_string()));
    }
    if trial::run_once(app, instrumented, &vars, log)?.is_none() {
        return Ok(None);
    }
    let launches = Launches::parse(&std::fs::read_to_string(log).unwrap_or_default());
    if let Some(w) = launches.warning(env) {
        eprintln!("{w}");
    }
    Ok(Some(launches))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(s: &str) -> TestEnv {
        TestEnv::parse(s).unwrap()
    }

    #[test]
    fn the_host_librarys_launch_lines_are_counted() {
        let log = "wmfix: device 0: env=sys-str+ seed=3 fences=all; 1 TU(s)\n\
                   wmfix: launch 0: grid (128,1,1) -> (176,1,1): 128 application + 48 stressing blocks\n\
                   wmfix: launch 1: grid (1,1,1) -> (1,1,1): 1 application + 0 stressing blocks, profile variant 1\n\
                   cbe-dot blocks=128 PASS\n";
        assert_eq!(
            Launches::parse(log),
            Launches {
                planned: 2,
                stressed: 1
            }
        );
        assert_eq!(Launches::parse(log).warning(env("sys-str+")), None);
    }

    #[test]
    fn a_run_whose_launches_missed_the_runtime_is_said() {
        // What cbe-dot printed at c2355dc: the program's own line only.
        let none = Launches::parse("wmfix-time-ms: 0.7468\ncbe-dot PASS\n");
        let w = none.warning(env("sys-str+")).unwrap();
        assert!(
            w.starts_with("wmfix: warning: under sys-str+, no launch"),
            "{w}"
        );
        let unstressed = Launches {
            planned: 3,
            stressed: 0,
        };
        assert!(
            unstressed
                .warning(env("aim-str-"))
                .unwrap()
                .contains("none of the program's 3 launches")
        );
        // Randomised ids without stress: planned launches are all it needs.
        assert_eq!(unstressed.warning(env("no-str+")), None);
        assert_eq!(
            env_to_probe(&[env("no-str-"), env("no-str+")]),
            Some(env("no-str+"))
        );
        assert_eq!(env_to_probe(&[env("no-str-")]), None);
    }
}

//! One run of the application under a testing environment, and its outcome.

use crate::app::child::{self, Exit};
use crate::app::config::App;
use crate::fences::set::FenceSet;
use crate::run::environment::TestEnv;
use crate::run::warm::{End, Pool};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Pass,
    /// The post-condition failed.
    Fail,
    Timeout,
    /// Killed by a signal, or exited with one of the config's crash codes.
    Crash,
}

impl Outcome {
    pub fn is_error(self) -> bool {
        self != Outcome::Pass
    }
}

impl std::fmt::Display for Outcome {
    /// The word the records use: pass, fail, timeout, crash.
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::Timeout => "timeout",
            Outcome::Crash => "crash",
        })
    }
}

/// How a run ended, in words: "passed", "failed its post-condition (exit code 1)", "crashed
/// with exit code 3", "crashed: killed by signal 11 (SIGSEGV)", "timed out".
pub fn describe(outcome: Outcome, exit: Exit) -> String {
    match (outcome, exit) {
        (Outcome::Pass, _) => "passed".into(),
        (Outcome::Fail, Exit::Code(0)) => "failed its check".into(),
        (Outcome::Fail, e) => format!("failed its post-condition ({e})"),
        (Outcome::Timeout, _) => "timed out".into(),
        (Outcome::Crash, Exit::Signal(s)) => {
            format!("crashed: killed by signal {s}{}", child::signal_name(s))
        }
        (Outcome::Crash, Exit::Code(c)) if (129..=192).contains(&c) => format!(
            "crashed: killed by signal {}{} (exit code {c} from the shell)",
            c - 128,
            child::signal_name(c - 128)
        ),
        (Outcome::Crash, e) => format!("crashed with {e}"),
    }
}

/// Whether a program's output says that CUDA failed (no device, a driver too old, an error
/// code from the runtime): the words CUDA's own messages and the usual checking macros print.
pub fn mentions_cuda_error(output: &str) -> bool {
    let text = output.to_ascii_lowercase();
    [
        "cuda error",
        "cudaerror",
        "cuda_error",
        "cuda-capable device",
        "cuda driver version is insufficient",
        "cuda failure",
    ]
    .iter()
    .any(|w| text.contains(w))
}

/// What makes a run reproducible.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrialSpec {
    pub env: TestEnv,
    pub seed: u64,
    pub fences: FenceSet,
    /// `WMFIX_FENCES_IN_LOOP`, when not every in-body placement is on (the reducer's
    /// placement phase).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fences_in_loop: Option<FenceSet>,
    /// Whether the run records which fence sites ran on global memory (`run::coverage`). Off
    /// unless asked: the runs that expose errors stay as close to the program as they can.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub coverage: bool,
}

impl TrialSpec {
    /// The variables the runtime reads (runtime-cu/README.md).
    pub fn env_vars(&self) -> Vec<(String, String)> {
        vec![
            ("WMFIX_ENV".into(), self.env.to_string()),
            ("WMFIX_SEED".into(), self.seed.to_string()),
            ("WMFIX_FENCES".into(), self.fences.to_string()),
        ]
        .into_iter()
        .chain(
            self.fences_in_loop
                .as_ref()
                .map(|f| ("WMFIX_FENCES_IN_LOOP".into(), f.to_string())),
        )
        .collect()
    }

    pub fn new(env: TestEnv, seed: u64, fences: &FenceSet) -> TrialSpec {
        TrialSpec {
            env,
            seed,
            fences: fences.clone(),
            fences_in_loop: None,
            coverage: false,
        }
    }
}

/// One finished run, as recorded in `runs.jsonl`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub id: usize,
    #[serde(flatten)]
    pub spec: TrialSpec,
    pub outcome: Outcome,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub duration_s: f64,
    /// The GPU it ran on (CUDA_VISIBLE_DEVICES), when runs were spread over several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
    /// The run's output, kept for runs that erred (relative to the test directory).
    pub log: Option<PathBuf>,
    /// Which fence sites ran, and which on global memory (`run::coverage`); absent when the
    /// run left no coverage file (no-str-, killed, or a runtime before coverage).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coverage: Option<crate::run::coverage::Coverage>,
    /// A warm process served the run (`run::warm`: `--warm`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub warm: bool,
}

impl RunRecord {
    /// How the run ended, as far as the record says (a timeout has no code).
    pub fn exit(&self) -> Exit {
        match (self.signal, self.exit_code) {
            (Some(s), _) => Exit::Signal(s),
            (None, Some(c)) => Exit::Code(c),
            (None, None) => Exit::Timeout,
        }
    }
}

/// Runs the program once in `tree` with `extra_env`; `None` if interrupted.
pub fn run_once(
    app: &App,
    tree: &Path,
    extra_env: &[(String, String)],
    log: &Path,
) -> std::io::Result<Option<(Outcome, Exit, Duration)>> {
    let ran = run_maybe_warm(app, tree, extra_env, log, None)?;
    Ok(ran.map(|r| (r.outcome, r.exit, r.duration)))
}

/// How one run ended, and whether a warm process served it.
pub struct Ran {
    pub outcome: Outcome,
    pub exit: Exit,
    pub duration: Duration,
    pub warm: bool,
}

/// `run_once`, in a process of `warm` when given and the run can be warm (`run::warm`).
pub fn run_maybe_warm(
    app: &App,
    tree: &Path,
    extra_env: &[(String, String)],
    log: &Path,
    warm: Option<&Pool>,
) -> std::io::Result<Option<Ran>> {
    let cfg = &app.config;
    let timeout = Duration::from_secs_f64(cfg.timeout_s);
    let mut env = extra_env.to_vec();
    // The runtime's host library, which the build named (`app::host_lib`): a run that cannot
    // load it exits 3 rather than running without stress.
    env.extend(crate::app::host_lib::run_env());
    if cfg.keep_block_order {
        env.push(("WMFIX_BLOCK_ORDER".to_string(), "keep".to_string()));
    }
    let warm_run = warm.and_then(|p| p.run(&cfg.run_command(), tree, &env, log, timeout));
    let (f, lease) = match warm_run {
        Some(r) => {
            let (f, lease) = r?;
            (f, Some(lease))
        }
        None => (
            child::run(&child::Spec {
                command: &cfg.launched_run_command(),
                dir: tree,
                env: &env,
                timeout,
                log,
            })?,
            None,
        ),
    };
    let warm = lease.is_some();
    let Some(outcome) = outcome_of(cfg, f.exit, tree, log, timeout)? else {
        return Ok(None);
    };
    if let Some(lease) = lease {
        lease.done(match outcome {
            Outcome::Pass => End::Passed,
            Outcome::Fail => End::Failed,
            Outcome::Crash | Outcome::Timeout => End::Broke,
        });
    }
    Ok(Some(Ran {
        outcome,
        exit: f.exit,
        duration: f.duration,
        warm,
    }))
}

/// A run's outcome from how it exited and, after exit 0, the post-condition; `None` if
/// interrupted.
fn outcome_of(
    cfg: &crate::app::config::Config,
    exit: Exit,
    tree: &Path,
    log: &Path,
    timeout: Duration,
) -> std::io::Result<Option<Outcome>> {
    Ok(Some(match exit {
        Exit::Interrupted => return Ok(None),
        Exit::Timeout => Outcome::Timeout,
        Exit::Signal(_) => Outcome::Crash,
        // A shell reports a child killed by signal n as exit status 128 + n.
        Exit::Code(c) if (129..=192).contains(&c) => Outcome::Crash,
        Exit::Code(c) if cfg.crash_exit_codes.contains(&c) => Outcome::Crash,
        Exit::Code(0) => match &cfg.check {
            None => Outcome::Pass,
            // A check cut short by ctrl-c says nothing about the run: no record.
            Some(check) => match check_output(check, tree, log, timeout)? {
                Some(o) => o,
                None => return Ok(None),
            },
        },
        Exit::Code(_) => Outcome::Fail,
    }))
}

/// The check's verdict on a run's output; None if ctrl-c stopped it.
fn check_output(
    check: &str,
    tree: &Path,
    log: &Path,
    timeout: Duration,
) -> std::io::Result<Option<Outcome>> {
    let check_log = log.with_extension("check");
    // The check runs in the tree: give it an absolute path.
    let env = [(
        "WMFIX_RUN_OUTPUT".to_string(),
        std::path::absolute(log)?.display().to_string(),
    )];
    let f = child::run(&child::Spec {
        command: check,
        dir: tree,
        env: &env,
        timeout,
        log: &check_log,
    })?;
    // The check's own output goes after the run's, so a kept log shows why it failed.
    let extra = std::fs::read(&check_log).unwrap_or_default();
    let _ = std::fs::remove_file(&check_log);
    if !extra.is_empty() {
        use std::io::Write;
        let mut l = std::fs::OpenOptions::new().append(true).open(log)?;
        writeln!(l, "--- check: {check}")?;
        l.write_all(&extra)?;
    }
    Ok(match f.exit {
        Exit::Interrupted => None,
        Exit::Code(0) => Some(Outcome::Pass),
        _ => Some(Outcome::Fail),
    })
}

/// Where a trial runs: the build, the GPU, the variables every run of the batch gets (the
/// chip profile), warm processes if `--warm`.
pub struct Place<'a> {
    pub tree: &'a Path,
    pub gpu: Option<&'a str>,
    pub extra: &'a [(String, String)],
    pub warm: Option<&'a Pool>,
}

/// Runs one trial and makes its record (without `log`, which the caller decides on).
pub fn run_trial(
    app: &App,
    place: &Place,
    id: usize,
    spec: &TrialSpec,
    log: &Path,
) -> std::io::Result<Option<RunRecord>> {
    let Place {
        tree,
        gpu,
        extra,
        warm,
    } = *place;
    let mut env = spec.env_vars();
    env.extend(extra.iter().cloned());
    if let Some(g) = gpu {
        env.push(("CUDA_VISIBLE_DEVICES".to_string(), g.to_string()));
    }
    // The run's coverage file, beside its log (the run's directory is the tree: absolute).
    let cov_file = std::path::absolute(log.with_extension("coverage"))?;
    if spec.coverage {
        let _ = std::fs::remove_file(&cov_file);
        env.push((
            crate::run::coverage::VAR.to_string(),
            cov_file.display().to_string(),
        ));
    }
    let ran = run_maybe_warm(app, tree, &env, log, warm)?;
    let coverage = spec
        .coverage
        .then(|| crate::run::coverage::Coverage::read(&cov_file))
        .flatten();
    let _ = std::fs::remove_file(&cov_file);
    let Some(Ran {
        outcome,
        exit,
        duration,
        warm,
    }) = ran
    else {
        return Ok(None);
    };
    let (exit_code, signal) = match exit {
        Exit::Code(c) => (Some(c), None),
        Exit::Signal(s) => (None, Some(s)),
        _ => (None, None),
    };
    Ok(Some(RunRecord {
        id,
        spec: spec.clone(),
        outcome,
        exit_code,
        signal,
        duration_s: duration.as_secs_f64(),
        gpu: gpu.map(str::to_string),
        log: None,
        coverage,
        warm,
    }))
}

/// Tries of the baseline: a program that passes natively now and then is still testable.
const BASELINE_TRIES: usize = 3;

/// The original, uninstrumented program must pass its post-condition (in one of a few tries),
/// or no error could be blamed on weak memory.
/// When every try failed with a CUDA error in its output, the program cannot use the GPU: that
/// is said instead (exit 69), since no post-condition was ever reached.
pub fn baseline(app: &App, original: &Path, log: &Path) -> anyhow::Result<()> {
    use crate::exit_code::{self, fail};
    let mut seen = Vec::new();
    let mut cuda_errors = 0;
    for _ in 0..BASELINE_TRIES {
        match run_once(app, original, &[], log)? {
            Some((Outcome::Pass, _, _)) => return Ok(()),
            Some((outcome, exit, _)) => {
                seen.push(describe(outcome, exit));
                if mentions_cuda_error(&std::fs::read_to_string(log).unwrap_or_default()) {
                    cuda_errors += 1;
                }
            }
            None => {
                return Err(crate::interrupt::stopped("during the baseline run"));
            }
        }
    }
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let last = text.lines().take(20).collect::<Vec<_>>().join("\n");
    seen.dedup();
    if cuda_errors == BASELINE_TRIES {
        return Err(fail(
            exit_code::UNAVAILABLE,
            format!(
                "the original program cannot use the GPU: it stopped with a CUDA error in {BASELINE_TRIES} of {BASELINE_TRIES} runs ({}); check the driver and the device (nvidia-smi) and the program's own CUDA calls; last output in {}:\n{last}",
                seen.join("; "),
                log.display(),
            ),
        ));
    }
    Err(fail(
        exit_code::BASELINE_FAILED,
        format!(
            "the original program fails its post-condition in {BASELINE_TRIES} of {BASELINE_TRIES} runs ({}), so no error could be blamed on weak memory; last output in {}:\n{last}",
            seen.join("; "),
            log.display(),
        ),
    ))
}

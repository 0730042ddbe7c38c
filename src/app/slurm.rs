//! Runs launched through Slurm's `srun`: each run's job step is named after the output folder's
//! owner token (`--job-name=wmfix-<token>`), so that the steps a run left behind can be found
//! and cancelled with `scancel`.
//!
//! A step's task runs under `slurmd`, not as wmfix's child: killing `srun` with SIGKILL (a run's
//! process group at a time-out or ctrl-c, or what a killed wmfix left, `claim.rs`) leaves the
//! step running, and its job too when `srun` made the job. Only the controller can stop it.
//! `SLURM_JOB_NAME` in the environment would not do: srun ignores it inside an allocation.

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Whether this process has launched a run under a step name (so it has steps to cancel).
static NAMED: AtomicBool = AtomicBool::new(false);

/// How long one `squeue` or `scancel` may take before it is given up (a controller that does
/// not answer must not hold wmfix up for long; one that is down fails within its
/// MessageTimeout, 10 s by default).
const COMMAND_LIMIT: Duration = Duration::from_secs(12);

/// How long cancelled steps get to go before wmfix goes on without waiting further.
const GONE_LIMIT: Duration = Duration::from_secs(10);

/// The job and step name of the runs of the output folder with this owner token.
pub fn step_name(token: &str) -> String {
    format!("wmfix-{token}")
}

/// `launcher` with `--job-name=wmfix-<token>` after its `srun` word, if it has one (`srun -n1`,
/// `/usr/bin/srun ...`, `env X=1 srun ...`); otherwise as it is. A `--job-name` or `-J` of
/// the launcher's own comes after wmfix's and wins: then wmfix cannot find the steps.
pub fn name_steps(launcher: &str, token: &str) -> String {
    let Some(end) = srun_word_end(launcher) else {
        return launcher.to_string();
    };
    NAMED.store(true, Ordering::Relaxed);
    format!(
        "{} --job-name={}{}",
        &launcher[..end],
        step_name(token),
        &launcher[end..]
    )
}

/// The byte offset just past the first word of `launcher` that runs `srun`.
fn srun_word_end(launcher: &str) -> Option<usize> {
    let mut start = None;
    for (i, c) in launcher.char_indices().chain([(launcher.len(), ' ')]) {
        match (c.is_whitespace(), start) {
            (false, None) => start = Some(i),
            (true, Some(s)) => {
                if launcher[s..i].rsplit('/').next() == Some("srun") {
                    return Some(i);
                }
                start = None;
            }
            _ => {}
        }
    }
    None
}

/// Whether this process named any run's step.
pub fn named_any() -> bool {
    NAMED.load(Ordering::Relaxed)
}

/// Cancels this user's jobs and steps named `name` that are still pending or running, and
/// waits (up to 10 s) for the steps to end. Returns how many it cancelled; 0 without Slurm's
/// commands on PATH or a controller that answers.
pub fn cancel_named(name: &str) -> usize {
    let ids = live_ids(name);
    if ids.is_empty() {
        return 0;
    }
    // Its exit status is no answer: it fails when one of them ended meanwhile.
    let mut scancel = Command::new("scancel");
    scancel.arg("--quiet").args(&ids);
    let _ = output_within(scancel);
    let t0 = Instant::now();
    while !live_ids(name).is_empty() && t0.elapsed() < GONE_LIMIT {
        std::thread::sleep(Duration::from_millis(100));
    }
    ids.len()
}

/// The ids of this user's steps named `name` (`12.0`) and of the jobs of that name not yet
/// ending (`12`: pending, running, suspended or configuring; a completing one is ending).
/// Empty when `squeue` is missing, fails or does not answer (then it is not asked twice).
pub fn live_ids(name: &str) -> Vec<String> {
    let Some(mut ids) = listed_ids(name, &["--states=PD,R,S,CF"]) else {
        return vec![];
    };
    ids.extend(listed_ids(name, &["--steps"]).unwrap_or_default());
    ids
}

/// The ids `squeue` lists with `extra` (this user's) whose name is `name`. The name is matched
/// here: `squeue --name` filters jobs but not steps (`--steps` lists every step).
fn listed_ids(name: &str, extra: &[&str]) -> Option<Vec<String>> {
    let mut squeue = Command::new("squeue");
    squeue
        .args(["--noheader", "--format=%i %j"])
        .arg(format!("--user={}", uid()))
        .args(extra);
    output_within(squeue).map(|out| ids_named(&out, name))
}

/// The ids of the `id name` lines of `listing` whose name is `name`.
fn ids_named(listing: &str, name: &str) -> Vec<String> {
    listing
        .lines()
        .filter_map(|l| l.trim().split_once(' '))
        .filter(|(_, n)| *n == name)
        .map(|(id, _)| id.to_string())
        .collect()
}

fn uid() -> u32 {
    // SAFETY: getuid(2) cannot fail and touches no memory.
    unsafe { libc::getuid() }
}

/// The standard output of `command` when it ran and exited 0 within `COMMAND_LIMIT`; `None`
/// when it is not installed, failed, or was killed for taking too long.
fn output_within(mut command: Command) -> Option<String> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let t0 = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().ok()? {
            break status;
        }
        if t0.elapsed() >= COMMAND_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut out = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take()?, &mut out).ok()?;
    status.success().then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_step_name_goes_right_after_the_srun_word() {
        let t = "0123abcd";
        assert_eq!(
            name_steps("srun --ntasks=1 --quiet", t),
            "srun --job-name=wmfix-0123abcd --ntasks=1 --quiet"
        );
        assert_eq!(name_steps("srun", t), "srun --job-name=wmfix-0123abcd");
        assert_eq!(
            name_steps("env A=1 /opt/slurm/bin/srun -n1 numactl -N0", t),
            "env A=1 /opt/slurm/bin/srun --job-name=wmfix-0123abcd -n1 numactl -N0"
        );
        for other in ["mpirun -np 1", "srunner -x", "./my-srun", ""] {
            assert_eq!(name_steps(other, t), other);
        }
    }

    #[test]
    fn only_the_lines_of_the_name_are_taken() {
        let listing = "  12.0 wmfix-ab\n12.1 wmfix-abc\n13 wmfix-ab\n14 my job wmfix-ab\n";
        assert_eq!(ids_named(listing, "wmfix-ab"), ["12.0", "13"]);
        assert!(ids_named("", "wmfix-ab").is_empty());
    }

    #[test]
    fn without_slurm_commands_nothing_is_cancelled() {
        // No controller answers this name (or no squeue at all): nothing to cancel, at once.
        let t0 = Instant::now();
        assert_eq!(cancel_named("wmfix-no-such-token-in-any-cluster"), 0);
        assert!(t0.elapsed() < COMMAND_LIMIT);
    }
}

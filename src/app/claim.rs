//! One wmfix process per output directory, and no leftovers from a killed one.
//!
//! A wmfix killed with SIGKILL cannot kill its runs' process groups, and a run left on the GPU
//! would compete with the next command's runs. So every child carries `WMFIX_OWNER=<token of
//! the output directory>` in its environment; the next wmfix that claims the directory holds
//! its lock (`out_dir::OutDir`: an exclusive `flock` that the kernel drops when its holder dies,
//! however it dies) and kills every process group that still carries the token.
//!
//! Runs launched through `srun` run under `slurmd`, out of reach of a process-group kill: their
//! steps carry the token in their name (`slurm.rs`), and the claim cancels those too, as does
//! `release` when a command ends (a time-out or ctrl-c kills `srun` with SIGKILL, which leaves
//! its step running).

use crate::app::slurm;
use crate::out_dir::OutDir;
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub const OWNER_VAR: &str = "WMFIX_OWNER";

/// The token of the directory this process works in; a command claims one, a library caller
/// may move on.
static CLAIMED: Mutex<Option<String>> = Mutex::new(None);

/// The `(name, value)` every child of this process gets, once it has claimed a directory.
pub fn owner_env() -> Option<(String, String)> {
    let claimed = CLAIMED.lock().unwrap();
    claimed
        .as_ref()
        .map(|token| (OWNER_VAR.to_string(), token.clone()))
}

/// Tags this process's children with `out`'s token and kills what a killed earlier wmfix left
/// running there (only while `out`'s lock is held: unlocked, another wmfix may be using the
/// directory, and its runs are not leftovers). Claiming the directory already held is a no-op.
pub fn claim(out: &OutDir) {
    let token = token(out.root());
    let mut claimed = CLAIMED.lock().unwrap();
    if claimed.as_ref() == Some(&token) {
        return;
    }
    if !out.locked() {
        *claimed = Some(token);
        return;
    }
    let cancelled = slurm::cancel_named(&slurm::step_name(&token));
    if cancelled > 0 {
        eprintln!(
            "wmfix: cancelled {cancelled} Slurm job(s) or step(s) left running in {} by an earlier wmfix",
            out.root().display()
        );
    }
    let killed = kill_owned_by(&token);
    if killed > 0 {
        eprintln!(
            "wmfix: killed {killed} process group(s) left running in {} by an earlier wmfix",
            out.root().display()
        );
    }
    *claimed = Some(token);
}

/// The launcher a run goes through: an `srun` one names the run's step after the claimed
/// directory's token, so that `claim` and `release` can cancel it.
pub fn launcher_for_run(launcher: &str) -> String {
    match CLAIMED.lock().unwrap().as_deref() {
        Some(token) => slurm::name_steps(launcher, token),
        None => launcher.to_string(),
    }
}

/// The command is over: cancels the Slurm steps of its runs that are still running (those of
/// runs killed at a time-out or by ctrl-c). Does nothing unless a run was launched through
/// `srun`.
pub fn release() {
    if !slurm::named_any() {
        return;
    }
    let Some(token) = CLAIMED.lock().unwrap().clone() else {
        return;
    };
    let cancelled = slurm::cancel_named(&slurm::step_name(&token));
    if cancelled > 0 {
        eprintln!("wmfix: cancelled {cancelled} Slurm job(s) or step(s) of runs it stopped");
    }
}

pub fn token(out: &std::path::Path) -> String {
    crate::digest::Fnv::of(out.as_os_str().as_encoded_bytes())
}

/// Kills the process groups of every process whose environment holds `WMFIX_OWNER=token`, and
/// waits (up to 5 s) for them to go. Returns how many groups it signalled.
pub fn kill_owned_by(token: &str) -> usize {
    let needle = format!("{OWNER_VAR}={token}");
    // SAFETY: getpgrp(2) cannot fail and touches no memory.
    let own = unsafe { libc::getpgrp() };
    let mut groups: Vec<i32> = owned_pids(&needle)
        .into_iter()
        .filter_map(group_of)
        .filter(|&g| g > 1 && g != own)
        .collect();
    groups.sort_unstable();
    groups.dedup();
    for &g in &groups {
        // SAFETY: kill(2) with a negative pid signals the process group; no memory is involved.
        unsafe {
            libc::kill(-g, libc::SIGKILL);
        }
    }
    let t0 = Instant::now();
    while !groups.is_empty()
        && owned_pids(&needle).into_iter().any(running)
        && t0.elapsed() < Duration::from_secs(5)
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    groups.len()
}

/// Processes (other than this one) whose initial environment holds `needle`.
fn owned_pids(needle: &str) -> Vec<i32> {
    let me = std::process::id() as i32;
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != me)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|v| v == needle.as_bytes()))
        })
        .collect()
}

/// Fields after the command name in /proc/PID/stat (the name may hold spaces and parentheses).
fn stat_fields(pid: i32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(')')?.1;
    Some(rest.split_whitespace().map(str::to_string).collect())
}

fn group_of(pid: i32) -> Option<i32> {
    stat_fields(pid)?.get(2)?.parse().ok()
}

/// Alive and not a zombie waiting for its parent.
pub fn running(pid: i32) -> bool {
    stat_fields(pid).is_some_and(|f| f.first().is_some_and(|s| s != "Z"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    #[test]
    fn kills_the_groups_that_carry_the_token_and_only_those() {
        let spawn = |token: &str| {
            std::process::Command::new("sh")
                .arg("-c")
                .arg("sleep 60 & wait")
                .env(OWNER_VAR, token)
                .process_group(0)
                .spawn()
                .unwrap()
        };
        let mut mine = spawn("test-token-mine");
        let mut other = spawn("test-token-other");
        // The sleeps of both groups carry the token too (once the shells have started them).
        let started = |t: &str| owned_pids(&format!("{OWNER_VAR}={t}")).len() == 2;
        let t0 = Instant::now();
        while !(started("test-token-mine") && started("test-token-other"))
            && t0.elapsed().as_secs() < 10
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(owned_pids("WMFIX_OWNER=test-token-mine").len(), 2);
        assert_eq!(kill_owned_by("test-token-mine"), 1);
        assert!(mine.wait().is_ok());
        assert!(
            owned_pids("WMFIX_OWNER=test-token-mine")
                .into_iter()
                .all(|p| !running(p))
        );
        assert!(running(other.id() as i32), "another owner's run was killed");
        assert_eq!(kill_owned_by("test-token-other"), 1);
        other.wait().unwrap();
    }
}

//! Running a shell command as a child in its own process group, with a timeout: on
//! timeout or ctrl-c the whole group is killed, so nothing the program started lives on.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
    Timeout,
    Interrupted,
}

impl std::fmt::Display for Exit {
    /// In words: "exit code 3", "signal 11 (SIGSEGV)", "timed out", "interrupted".
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match *self {
            Exit::Code(c) => write!(f, "exit code {c}"),
            Exit::Signal(s) => write!(f, "signal {s}{}", signal_name(s)),
            Exit::Timeout => f.write_str("timed out"),
            Exit::Interrupted => f.write_str("interrupted"),
        }
    }
}

/// " (SIGSEGV)" for the signals a crashing program dies of, else nothing.
pub fn signal_name(s: i32) -> &'static str {
    match s {
        libc::SIGHUP => " (SIGHUP)",
        libc::SIGINT => " (SIGINT)",
        libc::SIGQUIT => " (SIGQUIT)",
        libc::SIGILL => " (SIGILL)",
        libc::SIGABRT => " (SIGABRT)",
        libc::SIGBUS => " (SIGBUS)",
        libc::SIGFPE => " (SIGFPE)",
        libc::SIGKILL => " (SIGKILL)",
        libc::SIGSEGV => " (SIGSEGV)",
        libc::SIGPIPE => " (SIGPIPE)",
        libc::SIGTERM => " (SIGTERM)",
        _ => "",
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Finished {
    pub exit: Exit,
    pub duration: Duration,
}

pub struct Spec<'a> {
    pub command: &'a str,
    pub dir: &'a Path,
    pub env: &'a [(String, String)],
    pub timeout: Duration,
    /// stdout and stderr go here.
    pub log: &'a Path,
}

pub fn run(spec: &Spec) -> std::io::Result<Finished> {
    let log = std::fs::File::create(spec.log)?;
    let start = Instant::now();
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(spec.command)
        .current_dir(spec.dir)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .envs(crate::app::claim::owner_env())
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .process_group(0)
        .spawn()?;
    let group = child.id() as i32;
    let watch = ExitWatch::new(group);
    let exit = loop {
        if let Some(status) = child.try_wait()? {
            break exit_of(status);
        }
        if let Some(exit) = stop_now(start, spec.timeout) {
            stop_group(group, &mut child)?;
            break exit;
        }
        watch.wait(spec.timeout.saturating_sub(start.elapsed()));
    };
    // Whatever the program left running in its group goes too.
    kill_group(group);
    Ok(Finished {
        exit,
        duration: start.elapsed(),
    })
}

/// Waits for a child to end without polling: a run is noticed as it ends, not up to a poll
/// interval later (thousands of short runs in a reduction; each GPU run too). Through a pidfd
/// (Linux 5.3 on); where there is none, sleeps growing from 1 ms to 20 ms.
struct ExitWatch {
    pidfd: Option<std::os::fd::OwnedFd>,
    sleep: std::cell::Cell<Duration>,
}

/// How long a wait lasts at most: ctrl-c is looked at between waits.
const WAIT_AT_MOST: Duration = Duration::from_millis(20);

impl ExitWatch {
    fn new(pid: i32) -> ExitWatch {
        use std::os::fd::FromRawFd;
        // SAFETY: pidfd_open(2) takes a pid and flags and returns a new fd or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        ExitWatch {
            // SAFETY: a non-negative result is a new fd that nothing else owns.
            pidfd: (fd >= 0).then(|| unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as i32) }),
            sleep: std::cell::Cell::new(Duration::from_millis(1)),
        }
    }

    /// Until the child has ended, `left` has passed, or `WAIT_AT_MOST`.
    fn wait(&self, left: Duration) {
        let most = left.min(WAIT_AT_MOST);
        match &self.pidfd {
            Some(fd) => {
                use std::os::fd::AsRawFd;
                let mut p = libc::pollfd {
                    fd: fd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                };
                // At least 1 ms: a timeout of 0 would spin while less than a millisecond is left.
                let ms = most.as_millis().clamp(1, 1000) as i32;
                // SAFETY: one valid pollfd; an error or EINTR only ends this wait early.
                unsafe { libc::poll(&mut p, 1, ms) };
            }
            None => {
                let d = self.sleep.get();
                std::thread::sleep(d.min(most));
                self.sleep.set((d * 2).min(WAIT_AT_MOST));
            }
        }
    }
}

/// How a process that ended did: its exit code, or the signal that killed it.
pub fn exit_of(status: std::process::ExitStatus) -> Exit {
    status
        .code()
        .map_or_else(|| Exit::Signal(status.signal().unwrap_or(0)), Exit::Code)
}

/// Whether a run started at `start` must stop now: its time is up, or ctrl-c.
pub fn stop_now(start: Instant, timeout: Duration) -> Option<Exit> {
    if start.elapsed() >= timeout {
        Some(Exit::Timeout)
    } else if crate::interrupt::interrupted() {
        Some(Exit::Interrupted)
    } else {
        None
    }
}

/// How long a stopped run's group has between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(1);

/// Stops a timed-out or interrupted run: SIGTERM to its group first, so that a launcher (`srun`)
/// can cancel the job step it runs the program in (a SIGKILLed `srun` leaves its step running),
/// then SIGKILL once the leader is gone or `GRACE` has passed.
fn stop_group(group: i32, child: &mut std::process::Child) -> std::io::Result<()> {
    // SAFETY: kill(2) with a negative pid signals the process group; no memory is involved.
    unsafe {
        libc::kill(-group, libc::SIGTERM);
    }
    let t0 = Instant::now();
    while child.try_wait()?.is_none() && t0.elapsed() < GRACE {
        std::thread::sleep(Duration::from_millis(10));
    }
    kill_group(group);
    child.wait()?;
    Ok(())
}

fn kill_group(group: i32) {
    // SAFETY: kill(2) with a negative pid signals the process group; no memory is involved.
    unsafe {
        libc::kill(-group, libc::SIGKILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn go(cmd: &str, timeout_ms: u64) -> (Finished, String) {
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path().join("log");
        let spec = Spec {
            command: cmd,
            dir: tmp.path(),
            env: &[("X".into(), "7".into())],
            timeout: Duration::from_millis(timeout_ms),
            log: &log,
        };
        let f = run(&spec).unwrap();
        (f, std::fs::read_to_string(&log).unwrap())
    }

    #[test]
    fn exit_codes_signals_and_output_are_reported() {
        let (f, out) = go("echo out $X; echo err >&2; exit 3", 5000);
        assert_eq!(f.exit, Exit::Code(3));
        assert_eq!(out, "out 7\nerr\n");
        assert_eq!(
            go("kill -SEGV $$", 5000).0.exit,
            Exit::Signal(libc::SIGSEGV)
        );
    }

    #[test]
    fn a_timed_out_run_gets_sigterm_before_sigkill() {
        // A launcher (srun) cancels its job step on SIGTERM; on SIGKILL the step stays.
        let tmp = tempfile::tempdir().unwrap();
        let note = tmp.path().join("note");
        let cmd = format!(
            "trap 'echo term > {}; exit 143' TERM; sleep 100 & wait",
            note.display()
        );
        let (f, _) = go(&cmd, 300);
        assert_eq!(f.exit, Exit::Timeout);
        assert!(f.duration < Duration::from_secs(3));
        assert_eq!(std::fs::read_to_string(&note).unwrap_or_default(), "term\n");
    }

    #[test]
    fn timeout_kills_the_whole_group() {
        let tmp = tempfile::tempdir().unwrap();
        let pidfile = tmp.path().join("pid");
        let cmd = format!("sleep 100 & echo $! > {}; wait", pidfile.display());
        let (f, _) = go(&cmd, 300);
        assert_eq!(f.exit, Exit::Timeout);
        assert!(f.duration < Duration::from_secs(5));
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // Killed, it may stay a zombie for a moment until init reaps it.
        let running = || {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                s.rsplit(')')
                    .next()
                    .is_some_and(|r| !r.trim_start().starts_with('Z'))
            })
        };
        let t0 = std::time::Instant::now();
        while running() && t0.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(!running(), "the grandchild survived");
    }
}

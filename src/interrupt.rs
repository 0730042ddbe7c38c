//! ctrl-c (and SIGTERM, SIGHUP: ctrlc's `termination` feature, so a batch scheduler's or a
//! closed terminal's stop is handled alike): a flag that long loops poll, so that children are
//! killed and results kept.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Once, OnceLock};
use std::time::{Duration, Instant};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// When the first signal came.
static FIRST: OnceLock<Instant> = OnceLock::new();

/// A second signal within this long of the first is the same interruption delivered twice:
/// `timeout -s INT` signals wmfix and then its process group, and a terminal's ctrl-c reaches
/// every process of the foreground group.
pub const SAME_SIGNAL: Duration = Duration::from_secs(1);

/// Installs the handler (once per process).
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = ctrlc::set_handler(|| {
            if on_signal(&INTERRUPTED, &FIRST, Instant::now()) {
                // A deliberate second ctrl-c ends the process at once; runs still going are
                // then left to the next wmfix on the output directory (claim.rs) to kill.
                std::process::exit(crate::exit_code::INTERRUPTED);
            }
        });
    });
}

/// Records a signal in `flag`; true when it asks to exit at once (a second one, a second or
/// more after the `first`).
fn on_signal(flag: &AtomicBool, first: &OnceLock<Instant>, now: Instant) -> bool {
    let first = *first.get_or_init(|| now);
    if !flag.swap(true, Ordering::SeqCst) {
        eprintln!("\nwmfix: interrupted; stopping runs and keeping what was measured");
        return false;
    }
    now.duration_since(first) >= SAME_SIGNAL
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// The one way to say that a step was cut short by a signal: an error with exit code 130
/// naming the step (`during`: "during the build"). Loops that stop early with what they have
/// (a run without a record, a report marked `interrupted`) say it with their own types and end
/// with [`code`].
pub fn stopped(during: &str) -> anyhow::Error {
    crate::exit_code::fail(
        crate::exit_code::INTERRUPTED,
        format!("interrupted {during}"),
    )
}

/// `Err(stopped(during))` once a signal came.
pub fn check(during: &str) -> anyhow::Result<()> {
    if interrupted() {
        return Err(stopped(during));
    }
    Ok(())
}

/// The exit code of a command whose report says whether it was interrupted.
pub fn code(interrupted: bool) -> i32 {
    if interrupted {
        crate::exit_code::INTERRUPTED
    } else {
        crate::exit_code::OK
    }
}

/// For tests: behave as if ctrl-c was pressed.
pub fn raise() {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_twice_within_a_second_is_one_interruption() {
        // Not the process's own flag: other tests run in this process.
        let (flag, first) = (AtomicBool::new(false), OnceLock::new());
        let t0 = Instant::now();
        assert!(!on_signal(&flag, &first, t0));
        assert!(flag.load(Ordering::SeqCst));
        assert!(!on_signal(&flag, &first, t0 + Duration::from_millis(50)));
        assert!(!on_signal(&flag, &first, t0 + Duration::from_millis(999)));
        assert!(on_signal(&flag, &first, t0 + SAME_SIGNAL));
    }

    #[test]
    fn a_stopped_step_exits_130_and_names_the_step() {
        let e = stopped("during the build");
        assert_eq!(crate::exit_code::code_of(&e), crate::exit_code::INTERRUPTED);
        assert_eq!(e.to_string(), "interrupted during the build");
        assert_eq!(code(true), 130);
        assert_eq!(code(false), 0);
    }
}

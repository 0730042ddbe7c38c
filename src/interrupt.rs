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
}

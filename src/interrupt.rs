//! ctrl-c (and SIGTERM, SIGHUP: ctrlc's `termination` feature, so a batch scheduler's or a
//! closed terminal's stop is handled alike): a flag that long loops poll, so that children are
//! killed and results kept.

use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Installs the handler (once per process).
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // A second ctrl-c while stopping ends the process at once; runs still going are then
        // left to the next wmfix on the output directory (claim.rs) to kill.
        let _ = ctrlc::set_handler(|| {
            if INTERRUPTED.swap(true, Ordering::SeqCst) {
                std::process::exit(crate::exit_code::INTERRUPTED);
            }
            eprintln!("\nwmfix: interrupted; stopping runs and keeping what was measured");
        });
    });
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// For tests: behave as if ctrl-c was pressed.
pub fn raise() {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

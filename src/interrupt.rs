//! ctrl-c: a flag that long loops poll, so that children are killed and results kept.

use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Installs the handler (once per process).
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // A second ctrl-c while stopping ends the process the usual way.
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

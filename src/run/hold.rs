//! Keeps a CUDA context open in wmfix itself while it runs the application many times.
//!
//! Each run is a new process that creates its own context, and that is most of a short run:
//! on an H200, 0.37 s for `cudaFree(0)` alone, 0.21 s while another process holds a context
//! on the GPU (case-studies/cbe-dot/RESULTS.md). Holding one does what persistence mode does
//! for start-up, without touching the GPU's settings. Children are exec'd, so a context in
//! the parent does not leak into them.

use std::sync::Arc;

use cudarc::driver::CudaContext;

/// Contexts held until dropped.
pub struct Held(#[allow(dead_code)] Vec<Arc<CudaContext>>);

impl Held {
    pub fn count(&self) -> usize {
        self.0.len()
    }
}

/// Whether the CUDA driver library can be loaded (cudarc panics on first use when it cannot).
pub fn driver_present() -> bool {
    // SAFETY: only tries to load the library.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// For commands that run the program on a GPU: a CUDA driver and at least one device, or exit
/// 69 with one line saying so and what to do, before anything is built.
pub fn require_gpu(command: &str) -> anyhow::Result<()> {
    use crate::exit_code::{UNAVAILABLE, fail};
    let what = format!(
        "`wmfix {command}` runs the program on a GPU: run it where an NVIDIA GPU and its driver are, or set `gpu = false` in wmfix.toml if the program needs none"
    );
    if !driver_present() {
        return Err(fail(
            UNAVAILABLE,
            format!("no CUDA driver (libcuda) on this machine; {what}"),
        ));
    }
    match CudaContext::device_count() {
        Ok(n) if n > 0 => Ok(()),
        Ok(_) => Err(fail(
            UNAVAILABLE,
            format!("the CUDA driver sees no device; {what}"),
        )),
        Err(e) => Err(fail(
            UNAVAILABLE,
            format!(
                "the CUDA driver finds no usable device ({}); {what}",
                in_words(&e)
            ),
        )),
    }
}

/// A driver error as the driver words it ("no CUDA-capable device is detected
/// (CUDA_ERROR_NO_DEVICE)"), not cudarc's Debug text; only the code's name where the driver
/// cannot be asked.
pub fn in_words(e: &cudarc::driver::DriverError) -> String {
    let name = format!("{:?}", e.0);
    if !driver_present() {
        return name;
    }
    match e.error_string() {
        Ok(text) => format!("{} ({name})", text.to_string_lossy()),
        Err(_) => name,
    }
}

/// Opens a context on each of `gpus` (ordinals as wmfix sees them; empty: device 0). Nothing
/// on a machine without a CUDA driver, and nothing for a device that cannot be opened (a UUID,
/// a bad ordinal): the runs themselves report what is wrong.
pub fn hold(gpus: &[String]) -> Held {
    if !driver_present() {
        return Held(vec![]);
    }
    let ordinals: Vec<usize> = if gpus.is_empty() {
        vec![0]
    } else {
        gpus.iter().filter_map(|g| g.parse().ok()).collect()
    };
    Held(
        ordinals
            .into_iter()
            .filter_map(|i| CudaContext::new(i).ok())
            .collect(),
    )
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_driver_error_is_said_in_words_not_debug_text() {
        let e =
            cudarc::driver::DriverError(cudarc::driver::sys::cudaError_enum::CUDA_ERROR_NO_DEVICE);
        let words = super::in_words(&e);
        assert!(words.contains("CUDA_ERROR_NO_DEVICE"), "{words}");
        assert!(!words.contains("DriverError("), "{words}");
    }

    #[test]
    fn no_driver_is_exit_69_naming_the_way_out() {
        if super::driver_present() {
            return; // a GPU machine: covered by the GPU scripts
        }
        let e = super::require_gpu("test").unwrap_err();
        assert_eq!(crate::exit_code::code_of(&e), crate::exit_code::UNAVAILABLE);
        let m = e.to_string();
        assert!(
            m.contains("no CUDA driver") && m.contains("gpu = false"),
            "{m}"
        );
        assert!(!m.contains('\n'), "one line: {m}");
    }

    #[test]
    fn nothing_is_held_without_a_driver() {
        if super::driver_present() {
            return; // a GPU machine: covered by the GPU scripts
        }
        assert_eq!(super::hold(&["0".into(), "1".into()]).count(), 0);
    }
}

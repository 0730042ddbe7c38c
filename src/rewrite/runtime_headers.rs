//! The CUDA runtime headers of `runtime-cu/`, built into the binary so that a carried `wmfix`
//! needs nothing beside it.

use std::path::Path;

include!(concat!(env!("OUT_DIR"), "/runtime_files.rs"));

/// Writes every runtime header into `dir`.
pub fn write_to(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (name, text) in RUNTIME_FILES {
        std::fs::write(dir.join(name), text)?;
    }
    Ok(())
}

//! `wmfix init`: a commented wmfix.toml template.

use crate::exit_code;

pub fn run() -> anyhow::Result<i32> {
    let path = std::path::Path::new(crate::app::config::FILE_NAME);
    if path.exists() {
        return Err(exit_code::fail(
            exit_code::CONFIG,
            "wmfix.toml already exists; not overwritten",
        ));
    }
    std::fs::write(path, crate::app::config::TEMPLATE)?;
    println!("wmfix: wrote wmfix.toml; edit its build and run commands");
    Ok(exit_code::OK)
}

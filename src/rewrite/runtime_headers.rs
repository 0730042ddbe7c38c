//! The CUDA runtime headers of `runtime-cu/`, built into the binary so that a carried `wmfix`
//! needs nothing beside it.

use std::path::Path;

include!(concat!(env!("OUT_DIR"), "/runtime_files.rs"));

/// Writes every runtime file into `dir`; with `host_library` (the library `wmfix build` made,
/// `app::host_lib`), `wmfix_site.h` names it, so that the program finds it without
/// `WMFIX_HOST_LIB`.
pub fn write_to(dir: &Path, host_library: Option<&Path>) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (name, text) in RUNTIME_FILES {
        std::fs::write(dir.join(name), text)?;
    }
    if let Some(lib) = host_library {
        std::fs::write(dir.join("wmfix_site.h"), site_header(lib))?;
    }
    Ok(())
}

/// `wmfix_site.h` naming `lib` (as a C string literal).
fn site_header(lib: &Path) -> String {
    let mut literal = String::new();
    for c in lib.to_string_lossy().chars() {
        match c {
            '"' | '\\' => {
                literal.push('\\');
                literal.push(c);
            }
            '?' => literal.push_str("\\?"), // no trigraphs
            c => literal.push(c),
        }
    }
    format!(
        "/* Written by wmfix build: the host library this build loads (runtime-cu/wmfix_glue.cuh). */\n\
         #ifndef WMFIX_HOST_LIBRARY\n#define WMFIX_HOST_LIBRARY \"{literal}\"\n#endif\n"
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_site_header_quotes_the_path() {
        let h = super::site_header(std::path::Path::new("/a \"b\"\\c?/lib.so"));
        assert!(
            h.contains("#define WMFIX_HOST_LIBRARY \"/a \\\"b\\\"\\\\c\\?/lib.so\"\n"),
            "{h}"
        );
    }
}

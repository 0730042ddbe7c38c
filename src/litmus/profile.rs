//! A chip profile as the runtime reads it (`WMFIX_PROFILE`), and the limits the runtime accepts.

use crate::litmus::vocabulary::Sequence;
use serde::Serialize;

/// Most locations the runtime stresses at once (`kMaxSpread` in `runtime-cu/wmfix_common.cuh`).
pub const MAX_SPREAD: usize = 64;
/// Largest patch size the runtime accepts.
pub const MAX_PATCH_SIZE: usize = 1 << 20;

// ---------------------------------------------------------------------------------------------
// The profile

/// A chip profile as `runtime-cu` reads it (`WMFIX_PROFILE`): `patch_size`, `sequence`,
/// `spread`, plus `name` and `description`, which the runtime ignores. A missing value is left
/// out of the file, so the runtime keeps its default for it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Profile {
    /// A file-name-safe form of the GPU's name (`nvidia-h200`).
    pub name: String,
    pub gpu: String,
    pub description: String,
    pub patch_size: Option<usize>,
    pub sequence: Option<Sequence>,
    pub spread: Option<usize>,
    /// Comment lines at the top of the file.
    pub header: Vec<String>,
    /// Why each value (or why it is missing), as a comment line above its key.
    pub notes: [String; 3],
}

/// `NVIDIA H200` -> `nvidia-h200`; the name `wmfix tune` gives `profiles/<name>.toml`.
pub fn slug(gpu: &str) -> String {
    let mut out = String::new();
    for c in gpu.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_end_matches('-').to_string();
    if out.is_empty() {
        "unknown-gpu".into()
    } else {
        out
    }
}

/// A string value the runtime's parser reads back unchanged: it has no escapes, so quotes,
/// backslashes and control characters are replaced.
fn toml_string(s: &str) -> String {
    let clean: String = s
        .chars()
        .map(|c| match c {
            '"' => '\'',
            '\\' => '/',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect();
    format!("\"{clean}\"")
}

fn comment(s: &str) -> String {
    s.lines()
        .map(|l| format!("# {l}").trim_end().to_string() + "\n")
        .collect()
}

impl Profile {
    /// The TOML text, in the subset `runtime-cu/wmfix_host.cuh` parses: `key = value` lines,
    /// integers and quoted strings without escapes, `#` comments.
    pub fn to_toml(&self) -> String {
        let mut out = String::new();
        for h in &self.header {
            out += &comment(h);
        }
        out += &format!("name = {}\n", toml_string(&self.name));
        out += &format!("description = {}\n\n", toml_string(&self.description));
        out += &comment(&self.notes[0]);
        match self.patch_size {
            Some(p) => out += &format!("patch_size = {p}\n\n"),
            None => out += "# patch_size: not measured; the runtime keeps its default\n\n",
        }
        out += &comment(&self.notes[1]);
        match &self.sequence {
            Some(s) => out += &format!("sequence = \"{}\"  # {}\n\n", s.text(), s.compact()),
            None => out += "# sequence: not measured; the runtime keeps its default\n\n",
        }
        out += &comment(&self.notes[2]);
        match self.spread {
            Some(m) => out += &format!("spread = {m}\n"),
            None => out += "# spread: not measured; the runtime keeps its default\n",
        }
        out
    }
}

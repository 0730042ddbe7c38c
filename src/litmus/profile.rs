//! A chip profile as the runtime reads it (`WMFIX_PROFILE`), and the limits the runtime accepts.

use crate::exit_code::{self, fail};
use crate::litmus::vocabulary::Sequence;
use anyhow::Result;
use serde::{Deserialize, Serialize};

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

pub use crate::chip::slug;

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
    /// The TOML text, in the subset `runtime-cu/wmfix_profile.h` parses: `key = value` lines,
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

/// The stress a profile file sets, as wmfix reads it back (`wmfix litmus --stress PROFILE`):
/// every key present and within the runtime's limits; other keys (`name`, `description`) are
/// ignored, as the runtime ignores them.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Stress {
    pub patch_size: usize,
    pub sequence: Sequence,
    pub spread: usize,
}

impl Stress {
    /// Reads a profile's text; `origin` names it in errors (exit 78).
    pub fn parse(text: &str, origin: &str) -> Result<Stress> {
        let bad = |m: String| fail(exit_code::CONFIG, format!("{origin}: {m}"));
        let p: Stress = toml::from_str(text).map_err(|e| bad(e.to_string()))?;
        if !(1..=MAX_PATCH_SIZE).contains(&p.patch_size) || !(1..=MAX_SPREAD).contains(&p.spread) {
            return Err(bad(format!(
                "patch_size must be in 1..={MAX_PATCH_SIZE} and spread in 1..={MAX_SPREAD}"
            )));
        }
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_profile_names_its_origin() {
        for text in [
            "patch_size = 0\nsequence = \"ld\"\nspread = 2\n",
            "patch_size = 64\nsequence = \"ld\"\nspread = 65\n",
            "patch_size = 64\nsequence = \"xx\"\nspread = 2\n",
            "patch_size = 64\nspread = 2\n",
        ] {
            let e = Stress::parse(text, "p.toml").unwrap_err();
            assert_eq!(exit_code::code_of(&e), exit_code::CONFIG);
            assert!(e.to_string().starts_with("p.toml:"), "{e}");
        }
    }

    #[test]
    fn what_tune_writes_reads_back() {
        let p = Profile {
            name: "x".into(),
            gpu: "X".into(),
            description: "d".into(),
            patch_size: Some(64),
            sequence: Some(Sequence::parse("st4").unwrap()),
            spread: Some(5),
            header: vec!["h".into()],
            notes: Default::default(),
        };
        let s = Stress::parse(&p.to_toml(), "x.toml").unwrap();
        assert_eq!(
            (s.patch_size, s.sequence.text(), s.spread),
            (64, "st st st st".into(), 5)
        );
    }
}

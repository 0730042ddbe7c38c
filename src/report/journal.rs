//! A reduction's `journal.jsonl` read back for the page: its header (the settings the
//! reduction ran with) and every request with its answer (`reduce::journal::Entry`), in order.
//! The line a kill cut short is the journal's last, and is left out as a resumed reduction
//! leaves it out; a bad line before the last is an error naming the file and line (exit 65).

use crate::reduce::journal::Entry;
use crate::report::doc::{Doc, bad};
use anyhow::Result;
use std::path::Path;

#[derive(Debug, Default)]
pub struct Journal {
    /// The first line: the reduction's settings, as written.
    pub header: serde_json::Map<String, serde_json::Value>,
    pub entries: Vec<Entry>,
    /// A last line cut short (a reduction killed while it wrote).
    pub torn_last_line: bool,
}

pub fn read(path: &Path) -> Result<Doc<Journal>> {
    let text = std::fs::read_to_string(path).map_err(|e| bad(path, "journal", e))?;
    Ok(Doc {
        path: path.to_path_buf(),
        meta: None,
        value: parse(path, &text)?,
    })
}

pub fn parse(path: &Path, text: &str) -> Result<Journal> {
    let lines: Vec<&str> = text.lines().collect();
    let Some(first) = lines.first() else {
        return Err(bad(path, "journal", "it is empty"));
    };
    let header = serde_json::from_str::<serde_json::Map<_, _>>(first)
        .ok()
        .filter(|h| h.contains_key("wmfix_reduce"))
        .ok_or_else(|| bad(path, "journal", "line 1 is not a reduction's header"))?;
    let mut journal = Journal {
        header,
        ..Journal::default()
    };
    for (i, line) in lines.iter().enumerate().skip(1) {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Entry>(line) {
            Ok(e) => journal.entries.push(e),
            Err(_) if i + 1 == lines.len() && !text.ends_with('\n') => {
                journal.torn_last_line = true;
            }
            Err(e) => {
                let at = format!("{}:{}", path.display(), i + 1);
                return Err(bad(Path::new(&at), "journal line", e));
            }
        }
    }
    Ok(journal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exit_code;

    const HEADER: &str = r#"{"env":"sys-str+","fences":4,"wmfix_reduce":1}"#;
    const ENTRY: &str = r#"{"nonce":1,"fences":"0-3","request":{"max_runs":4,"max_seconds":null,"stop_after_errors":1},"tally":{"runs":4,"errors":0,"timeouts":0,"seconds":2.5}}"#;

    #[test]
    fn the_header_and_entries_are_read_a_torn_last_line_left_out() {
        let text = format!("{HEADER}\n{ENTRY}\n{ENTRY}\n{{\"nonce\":3,\"fen");
        let j = parse(Path::new("j"), &text).unwrap();
        assert_eq!(j.header["fences"], 4);
        assert_eq!(j.entries.len(), 2);
        assert_eq!(j.entries[0].tally.seconds, 2.5);
        assert!(j.torn_last_line);
    }

    #[test]
    fn a_bad_line_before_the_last_names_the_file_and_line() {
        let text = format!("{HEADER}\n{ENTRY}\nnot json\n{ENTRY}\n");
        let e = parse(Path::new("r/journal.jsonl"), &text).unwrap_err();
        assert_eq!(exit_code::code_of(&e), exit_code::BAD_INPUT);
        assert!(e.to_string().starts_with("r/journal.jsonl:3: "), "{e}");
        let e = parse(Path::new("j"), &format!("{ENTRY}\n")).unwrap_err();
        assert!(
            e.to_string().contains("line 1 is not a reduction's header"),
            "{e}"
        );
        assert!(parse(Path::new("j"), "").is_err());
    }
}

//! One record file read for the page: as wmfix wrote it, or as `scripts/gpu/evidence.sh` keeps
//! it, `{"meta": {...}, "result": ...}`, the meta naming the GPU, driver, commit, command and
//! date. A file that does not read is an error naming it (exit 65); a missing one exit 66.

use crate::exit_code::{self, fail};
use anyhow::Result;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use std::path::{Path, PathBuf};

/// What the GPU script wrote beside a result: all optional, shown as found.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub struct Meta {
    pub gpu: Option<String>,
    pub driver: Option<String>,
    pub commit: Option<String>,
    pub command: Option<String>,
    pub date: Option<String>,
}

/// One file read: where it was, its meta when wrapped, its value.
#[derive(Debug)]
pub struct Doc<T> {
    pub path: PathBuf,
    pub meta: Option<Meta>,
    pub value: T,
}

/// A file that does not read as `what`: exit 65 naming it.
pub fn bad(path: &Path, what: &str, e: impl std::fmt::Display) -> anyhow::Error {
    fail(
        exit_code::BAD_INPUT,
        format!("{}: not a readable {what}: {e}", path.display()),
    )
}

fn read_text(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|e| {
        let code = if e.kind() == std::io::ErrorKind::NotFound {
            exit_code::NO_INPUT
        } else {
            exit_code::BAD_INPUT
        };
        fail(code, format!("{}: {e}", path.display()))
    })
}

/// `text` as `T`, unwrapped from `{"meta", "result"}` when it is wrapped so.
pub fn parse<T: DeserializeOwned>(path: &Path, text: &str, what: &str) -> Result<Doc<T>> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| bad(path, what, e))?;
    let (meta, value) = match value {
        serde_json::Value::Object(mut m) if m.contains_key("meta") && m.contains_key("result") => {
            let meta = m.remove("meta").unwrap_or_default();
            let meta = serde_json::from_value(meta).map_err(|e| bad(path, "meta", e))?;
            (Some(meta), m.remove("result").unwrap_or_default())
        }
        v => (None, v),
    };
    let value = serde_json::from_value(value).map_err(|e| bad(path, what, e))?;
    Ok(Doc {
        path: path.to_path_buf(),
        meta,
        value,
    })
}

/// The JSON file at `path` as `T` (wrapped or not).
pub fn read<T: DeserializeOwned>(path: &Path, what: &str) -> Result<Doc<T>> {
    parse(path, &read_text(path)?, what)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Two {
        a: u32,
        result: Option<u32>,
    }

    #[test]
    fn a_wrapped_file_gives_its_result_and_meta_an_unwrapped_one_itself() {
        let p = Path::new("x.json");
        let plain: Doc<Two> = parse(p, r#"{"a": 1, "result": 5}"#, "t").unwrap();
        assert_eq!(
            plain.value,
            Two {
                a: 1,
                result: Some(5)
            }
        );
        assert!(
            plain.meta.is_none(),
            "a `result` key alone is not a wrapper"
        );
        let wrapped: Doc<Two> = parse(
            p,
            r#"{"meta": {"gpu": "G", "commit": "abc", "extra": 1}, "result": {"a": 2, "result": null}}"#,
            "t",
        )
        .unwrap();
        assert_eq!(wrapped.value.a, 2);
        let meta = wrapped.meta.unwrap();
        assert_eq!(meta.gpu.as_deref(), Some("G"));
        assert_eq!(meta.commit.as_deref(), Some("abc"));
    }

    #[test]
    fn bad_json_names_the_file_with_exit_65() {
        let p = Path::new("dir/summary.json");
        for text in [
            "{\"a\": ",
            "\"text\"",
            "{\"meta\": {}, \"result\": {\"b\": 1}}",
        ] {
            let e = parse::<Two>(p, text, "test summary").unwrap_err();
            assert_eq!(exit_code::code_of(&e), exit_code::BAD_INPUT, "{text}");
            assert!(
                e.to_string()
                    .starts_with("dir/summary.json: not a readable test summary"),
                "{e}"
            );
        }
    }

    #[test]
    fn a_missing_file_is_exit_66() {
        let e = read::<Two>(Path::new("/nonexistent/x.json"), "t").unwrap_err();
        assert_eq!(exit_code::code_of(&e), exit_code::NO_INPUT);
    }
}

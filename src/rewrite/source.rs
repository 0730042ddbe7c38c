//! One source file: its text, its path relative to the tree being instrumented, and line/column
//! look-ups for messages.

use std::path::PathBuf;

pub struct SourceFile {
    /// Path relative to the root of the tree being instrumented.
    pub rel: PathBuf,
    /// Path as the user gave it, for messages.
    pub shown: PathBuf,
    pub text: String,
    /// How `text` was decoded from the file's bytes; `encoding.encode` gives them back.
    pub encoding: Encoding,
    line_starts: Vec<usize>,
}

/// A file's bytes as text, losslessly: UTF-8 when they are, else each byte as the Latin-1
/// character of the same value (any bytes decode, and encode back to themselves).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Encoding {
    #[default]
    Utf8,
    Latin1,
}

impl Encoding {
    pub fn decode(bytes: Vec<u8>) -> (String, Encoding) {
        match String::from_utf8(bytes) {
            Ok(text) => (text, Encoding::Utf8),
            Err(e) => (
                e.into_bytes().iter().map(|&b| char::from(b)).collect(),
                Encoding::Latin1,
            ),
        }
    }

    /// `encode`, without a copy where the bytes are the text's own (UTF-8).
    pub fn into_bytes(self, text: String) -> Vec<u8> {
        match self {
            Encoding::Utf8 => text.into_bytes(),
            Encoding::Latin1 => self.encode(&text),
        }
    }

    /// The bytes of `text` in this encoding. Text wmfix adds is ASCII; a character Latin-1
    /// cannot hold (none wmfix writes) is kept as UTF-8 rather than lost.
    pub fn encode(self, text: &str) -> Vec<u8> {
        match self {
            Encoding::Utf8 => text.as_bytes().to_vec(),
            Encoding::Latin1 => {
                let mut out = Vec::with_capacity(text.len());
                for c in text.chars() {
                    match u8::try_from(u32::from(c)) {
                        Ok(b) => out.push(b),
                        Err(_) => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
                    }
                }
                out
            }
        }
    }
}

impl SourceFile {
    pub fn new(rel: PathBuf, shown: PathBuf, text: String) -> SourceFile {
        SourceFile::decoded(rel, shown, text, Encoding::Utf8)
    }

    /// A file read as bytes, decoded by `Encoding::decode`.
    pub fn from_bytes(rel: PathBuf, shown: PathBuf, bytes: Vec<u8>) -> SourceFile {
        let (text, encoding) = Encoding::decode(bytes);
        SourceFile::decoded(rel, shown, text, encoding)
    }

    fn decoded(rel: PathBuf, shown: PathBuf, text: String, encoding: Encoding) -> SourceFile {
        let line_starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        SourceFile {
            rel,
            shown,
            text,
            encoding,
            line_starts,
        }
    }

    /// 1-based line and column (in bytes) of a byte offset.
    pub fn line_col(&self, byte: usize) -> (usize, usize) {
        let line = self.line_starts.partition_point(|&s| s <= byte);
        (line, byte - self.line_starts[line - 1] + 1)
    }

    /// `path:line:col`, the form editors and compilers use.
    pub fn location(&self, byte: usize) -> String {
        let (l, c) = self.line_col(byte);
        format!("{}:{l}:{c}", self.shown.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_are_one_based() {
        let f = SourceFile::new("a.cu".into(), "x/a.cu".into(), "ab\ncd\n\nef".into());
        assert_eq!(f.line_col(0), (1, 1));
        assert_eq!(f.line_col(1), (1, 2));
        assert_eq!(f.line_col(3), (2, 1));
        assert_eq!(f.line_col(7), (4, 1));
        assert_eq!(f.location(4), "x/a.cu:2:2");
    }

    #[test]
    fn any_bytes_decode_and_encode_back() {
        let bytes = b"// caf\xe9 \xa9 \xff\n__global__ void k() {}\n".to_vec();
        let f = SourceFile::from_bytes("a.cu".into(), "a.cu".into(), bytes.clone());
        assert_eq!(f.encoding, Encoding::Latin1);
        assert!(f.text.contains("__global__ void k()"));
        assert_eq!(f.encoding.encode(&f.text), bytes);
        let edited = f.encoding.encode(&f.text.replace("{}", "{ x(); }"));
        let at = bytes.len() - 3;
        assert_eq!(edited[..at], bytes[..at]);
        assert_eq!(&edited[at..], b"{ x(); }\n");
        let utf8 = SourceFile::from_bytes("b.cu".into(), "b.cu".into(), "é".into());
        assert_eq!((utf8.encoding, utf8.text.as_str()), (Encoding::Utf8, "é"));
    }
}

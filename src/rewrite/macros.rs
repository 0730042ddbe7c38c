//! Macros the grammar cannot see through, learnt from the `#define`s of every file of the tree
//! (and `macros` in wmfix.toml): qualifier macros (`#define MY_DEVICE __device__
//! __forceinline__`, `CUTLASS_DEVICE`, `_CCCL_HOST_DEVICE`) and namespace macros without a `;`
//! (`#define CUB_NAMESPACE_BEGIN namespace cub {`). `mask.rs` blanks their uses before parsing
//! (same length, so edits still fit the original), and a function whose head held a device
//! qualifier macro is device code as if it said `__device__`.

use std::collections::HashMap;

/// What a learnt macro stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Meaning {
    /// Qualifiers that change nothing wmfix looks at (`inline`, `__forceinline__`, attributes).
    Plain,
    /// Opens or closes namespaces: blanked, its declarations read as top-level ones.
    Namespace,
    /// Says `__device__` (and `__host__` when `host`).
    Device { host: bool },
    /// Says `__global__`.
    Kernel,
}

/// Qualifier words a qualifier macro may expand to.
const QUALIFIERS: &[&str] = &[
    "__device__",
    "__host__",
    "__global__",
    "__forceinline__",
    "__noinline__",
    "__inline__",
    "inline",
    "static",
    "constexpr",
    "extern",
    "__launch_bounds__",
];

/// Keywords a header may redefine that are not qualifiers of ours either.
const KEYWORDS: &[&str] = &[
    "const",
    "volatile",
    "register",
    "auto",
    "noexcept",
    "restrict",
    "__restrict__",
    "__restrict",
    "mutable",
    "explicit",
    "virtual",
    "friend",
    "typename",
    "template",
    "thread_local",
];

#[derive(Clone, Debug, Default)]
pub struct Macros {
    pub by_name: HashMap<String, Meaning>,
}

impl Macros {
    /// The macros of `texts` (every file's) and `given` (wmfix.toml's `macros`: name to
    /// expansion), each name's meaning over all its definitions (device code wins: a
    /// `#ifdef __CUDACC__` branch defines it for nvcc).
    pub fn learn<'a>(
        texts: impl IntoIterator<Item = &'a str>,
        given: &[(String, String)],
    ) -> Macros {
        let mut bodies: Vec<(String, String)> = given.to_vec();
        let mut function_like = std::collections::HashSet::new();
        for text in texts {
            if text.contains("#define") || text.contains("# define") {
                let (objects, functions) = defines(text);
                bodies.extend(objects);
                function_like.extend(functions);
            }
        }
        // A keyword defined as itself (`#define extern extern`, in an OpenGL header), or a name
        // also defined with parameters elsewhere, is no qualifier to mask.
        bodies.retain(|(name, _)| {
            !QUALIFIERS.contains(&name.as_str())
                && !KEYWORDS.contains(&name.as_str())
                && !function_like.contains(name)
        });
        let mut m = Macros::default();
        // Macros defined through others (`#define CUB_NAMESPACE_BEGIN _CCCL_BEGIN_NAMESPACE_CUB`):
        // until nothing new is learnt.
        loop {
            let mut changed = false;
            for (name, body) in &bodies {
                let Some(meaning) = m.meaning_of(body) else {
                    continue;
                };
                let old = m.by_name.get(name).copied();
                let new = old.map_or(meaning, |o| o.max(meaning));
                if old != Some(new) {
                    m.by_name.insert(name.clone(), new);
                    changed = true;
                }
            }
            if !changed {
                return m;
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// Whether `bytes` name a learnt device or kernel qualifier macro (a header that does is
    /// device code, like one that says `__device__`).
    pub fn named_in(&self, text: &str) -> bool {
        !self.is_empty()
            && identifiers(text).any(|(_, w)| {
                matches!(
                    self.by_name.get(w),
                    Some(Meaning::Device { .. } | Meaning::Kernel)
                )
            })
    }

    /// What a macro body means, if it is only qualifiers, attributes and known macros, or only
    /// opens or closes namespaces.
    fn meaning_of(&self, body: &str) -> Option<Meaning> {
        let body = strip_comments(body);
        let body = body.trim();
        if !body.is_empty() && body.chars().all(|c| c == '}' || c.is_whitespace()) {
            return Some(Meaning::Namespace);
        }
        if opens_namespace(body) {
            return Some(Meaning::Namespace);
        }
        let mut meaning = Meaning::Plain;
        let mut rest = body;
        while !rest.is_empty() {
            rest = rest.trim_start();
            if let Some(after) = skip_attribute(rest) {
                rest = after;
                continue;
            }
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            if end == 0 {
                return None;
            }
            let word = &rest[..end];
            rest = &rest[end..];
            let m = match word {
                "__device__" => Meaning::Device { host: false },
                "__global__" => Meaning::Kernel,
                "__host__" => Meaning::Plain,
                w if QUALIFIERS.contains(&w) => Meaning::Plain,
                w => match self.by_name.get(w) {
                    // `#define CUB_NAMESPACE_BEGIN _CCCL_BEGIN_NAMESPACE_CUB`.
                    Some(Meaning::Namespace) if w == body => return Some(Meaning::Namespace),
                    Some(Meaning::Namespace) | None => return None,
                    Some(m) => *m,
                },
            };
            // `__launch_bounds__(n)` and the like: their parenthesised arguments.
            if rest.trim_start().starts_with('(') && word == "__launch_bounds__" {
                let open = rest.len() - rest.trim_start().len();
                rest = &rest[balanced(rest, open)?..];
            }
            meaning = meaning.max(m);
        }
        if body.contains("__host__") && matches!(meaning, Meaning::Device { .. }) {
            meaning = Meaning::Device { host: true };
        }
        Some(meaning)
    }
}

/// `namespace a {`, `namespace a { namespace b {`, `inline namespace v1 {`, `namespace a::b {`.
fn opens_namespace(body: &str) -> bool {
    let mut rest = body;
    let mut any = false;
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            return any;
        }
        rest = rest.strip_prefix("inline").map_or(rest, str::trim_start);
        let Some(after) = rest.strip_prefix("namespace") else {
            return false;
        };
        let Some(open) = after.find('{') else {
            return false;
        };
        let name = after[..open].trim();
        if !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
        {
            return false;
        }
        any = true;
        rest = &after[open + 1..];
    }
}

/// After `__attribute__((...))` or `[[...]]` at the start of `text`, if one is there.
fn skip_attribute(text: &str) -> Option<&str> {
    if let Some(after) = text.strip_prefix("__attribute__") {
        let open = after.len() - after.trim_start().len();
        return Some(&after[balanced(after, open)?..]);
    }
    if text.starts_with("[[") {
        return Some(&text[text.find("]]")? + 2..]);
    }
    None
}

/// The end of the parenthesised group starting at `open` (`(`), past its `)`.
fn balanced(text: &str, open: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    if bytes.get(open) != Some(&b'(') {
        return None;
    }
    let mut depth = 0usize;
    for (i, &b) in bytes.iter().enumerate().skip(open) {
        match b {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

fn strip_comments(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    while let Some(at) = rest.find("/*") {
        out.push_str(&rest[..at]);
        rest = rest[at..]
            .find("*/")
            .map_or("", |end| &rest[at + end + 2..]);
    }
    out.push_str(rest);
    match out.find("//") {
        Some(at) => out[..at].to_string(),
        None => out,
    }
}

/// The object-like `#define NAME BODY` lines of `text` (continued lines joined), as (NAME, BODY),
/// and the names of its function-like ones.
fn defines(text: &str) -> (Vec<(String, String)>, Vec<String>) {
    let mut out = Vec::new();
    let mut functions = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        let Some(rest) = t.strip_prefix('#') else {
            continue;
        };
        let Some(rest) = rest.trim_start().strip_prefix("define") else {
            continue;
        };
        if !rest.starts_with([' ', '\t']) {
            continue;
        }
        let mut full = rest.to_string();
        while full.ends_with('\\') {
            full.pop();
            match lines.next() {
                Some(next) => {
                    full.push(' ');
                    full.push_str(next);
                }
                None => break,
            }
        }
        let full = full.trim_start();
        let end = full
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(full.len());
        if end == 0 {
            continue;
        }
        if full[end..].starts_with('(') {
            functions.push(full[..end].to_string());
            continue;
        }
        out.push((full[..end].to_string(), full[end..].to_string()));
    }
    (out, functions)
}

/// The identifiers of `text` (words not starting with a digit), with their offsets.
pub fn identifiers(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let bytes = text.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < bytes.len() {
            let start = i;
            if is_word_byte(bytes[i]) {
                while i < bytes.len() && is_word_byte(bytes[i]) {
                    i += 1;
                }
                if !bytes[start].is_ascii_digit() {
                    return Some((start, &text[start..i]));
                }
            } else {
                i += 1;
            }
        }
        None
    })
}

pub fn is_word_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Whether `text[at..at + len]` is a whole identifier.
pub fn whole_word(text: &str, at: usize, len: usize) -> bool {
    let b = text.as_bytes();
    (at == 0 || !is_word_byte(b[at - 1])) && b.get(at + len).is_none_or(|&c| !is_word_byte(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn learnt(text: &str) -> Macros {
        Macros::learn([text], &[])
    }

    #[test]
    fn qualifier_and_namespace_macros_are_learnt_through_each_other() {
        let m = learnt(
            "#define MY_DEVICE __device__ __forceinline__\n\
             #  define HD __host__ __device__\n\
             #define K __global__ __launch_bounds__(256, 2)\n\
             #define INL __forceinline__ __attribute__((always_inline))\n\
             #define CUB_NS_BEGIN namespace cub { inline namespace v2 {\n\
             #define CUB_NS_END } }\n\
             #define BEGIN CUB_NS_BEGIN\n\
             #define DEV2 MY_DEVICE /* again */ inline\n\
             #define WIDTH 32\n\
             #define F(x) __device__ x\n\
             #define LONG __device__ \\\n  __host__\n",
        );
        let get = |n: &str| m.by_name.get(n).copied();
        assert_eq!(get("MY_DEVICE"), Some(Meaning::Device { host: false }));
        assert_eq!(get("HD"), Some(Meaning::Device { host: true }));
        assert_eq!(get("K"), Some(Meaning::Kernel));
        assert_eq!(get("INL"), Some(Meaning::Plain));
        assert_eq!(get("CUB_NS_BEGIN"), Some(Meaning::Namespace));
        assert_eq!(get("CUB_NS_END"), Some(Meaning::Namespace));
        assert_eq!(get("BEGIN"), Some(Meaning::Namespace));
        assert_eq!(get("DEV2"), Some(Meaning::Device { host: false }));
        assert_eq!(get("LONG"), Some(Meaning::Device { host: true }));
        assert_eq!(get("WIDTH"), None);
        assert_eq!(get("F"), None, "function-like macros are not learnt");
        assert!(m.named_in("MY_DEVICE int f();") && !m.named_in("MY_DEVICEX int f();"));
    }

    #[test]
    fn keywords_defined_as_themselves_and_function_like_names_are_not_learnt() {
        let m = learnt(
            "#define extern extern\n#define const const\n#ifdef A\n#define CALL(x) f(x)\n#else\n#define CALL\n#endif\n#define API\n",
        );
        assert_eq!(m.by_name.get("extern"), None);
        assert_eq!(m.by_name.get("const"), None);
        assert_eq!(m.by_name.get("CALL"), None);
        assert_eq!(m.by_name.get("API"), Some(&Meaning::Plain));
    }

    #[test]
    fn a_device_definition_wins_over_an_empty_one_and_the_config_adds_its_own() {
        let text = "#ifdef __CUDACC__\n#define HD __host__ __device__\n#else\n#define HD\n#endif\n";
        assert_eq!(
            learnt(text).by_name.get("HD"),
            Some(&Meaning::Device { host: true })
        );
        let m = Macros::learn(
            ["int x;"],
            &[("GPU_FN".to_string(), "__device__".to_string())],
        );
        assert_eq!(
            m.by_name.get("GPU_FN"),
            Some(&Meaning::Device { host: false })
        );
    }
}

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
    /// Function-like macros with a definition that opens or closes namespaces or expands to no
    /// code (`_CCCL_BEGIN_NAMESPACE(cuda::std)`, `_CCCL_PRAGMA_UNROLL_FULL()`): a use, arguments
    /// and all, is blanked (`mask.rs`), when every definition is such or the use is not a
    /// statement of its own (no `;` after it, as `NAME(p[i]);` would be).
    pub calls: HashMap<String, Call>,
    /// Function-like macros that stand for C++20 syntax in one of their definitions (the
    /// concept emulation of libcu++: `_CCCL_TEMPLATE(class T) _CCCL_REQUIRES(C<T>)`).
    pub shapes: HashMap<String, Shape>,
    /// Object-like macros with a definition that is one logical operator (`_CCCL_AND`: `&&`).
    pub operators: HashMap<String, &'static str>,
    /// Function-like macros that paste their arguments into one name (`#define CAT2(A, B)
    /// A##B`, and those defined through them): a qualifier macro named by pasting
    /// (`CAT3(STDGPU_, STDGPU_BACKEND_MACRO_NAMESPACE, _HOST_DEVICE)`) means what the macros
    /// whose names it can make mean.
    pub pasters: std::collections::HashSet<String>,
    /// Every object-like macro the tree defines, learnt or not: a pasted name that is one of them
    /// means what it means, wildcards aside.
    objects: std::collections::HashSet<String>,
}

/// C++20 syntax a function-like macro stands for, masked in place (`mask.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// `template <__VA_ARGS__>`: `NAME(` becomes `template<`, its `)` a `>`.
    TemplateHead,
    /// `requires __VA_ARGS__`: `NAME` becomes `requires`, the parenthesised arguments stay.
    Requires,
    /// `-> __VA_ARGS__ IMPL` with `IMPL(...)` a requires-clause: `NAME(T)(C)` becomes `-> T`,
    /// the constraint blanked.
    TrailingRequires,
    /// Template parameters (`typename D = void, std::enable_if_t<__VA_ARGS__, D>* = nullptr`,
    /// stdgpu's SFINAE): the use becomes one unnamed `typename` parameter.
    TypeParameter,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Call {
    /// `Plain` (no code) or `Namespace`.
    pub meaning: Meaning,
    /// Whether every definition was understood (else some may expand to code).
    pub every: bool,
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
        let mut calls: HashMap<String, Vec<String>> = HashMap::new();
        let mut namespace_lines = Vec::new();
        for text in texts {
            namespace_lines.extend(namespace_macro_lines(text));
            // `#  define` too: CUB indents its directives by nesting depth.
            if text.contains("define") {
                let (objects, functions) = defines(text);
                bodies.extend(objects);
                for (name, body) in functions {
                    calls.entry(name).or_default().push(body);
                }
            }
        }
        // A keyword defined as itself (`#define extern extern`, in an OpenGL header), or a name
        // also defined with parameters elsewhere, is no qualifier to mask.
        bodies.retain(|(name, _)| {
            !QUALIFIERS.contains(&name.as_str())
                && !KEYWORDS.contains(&name.as_str())
                && !calls.contains_key(name)
        });
        let mut m = Macros {
            pasters: pasters(&calls),
            objects: bodies.iter().map(|(name, _)| name.clone()).collect(),
            ..Macros::default()
        };
        for (name, defs) in &calls {
            if let Some(shape) = defs.iter().find_map(|b| shape_of(b, &calls)) {
                m.shapes.insert(name.clone(), shape);
            }
        }
        for (name, body) in &bodies {
            if let Some(op) = ["&&", "||"].into_iter().find(|op| body.trim() == *op) {
                m.operators.insert(name.clone(), op);
            }
        }
        bodies.retain(|(name, _)| !m.operators.contains_key(name));
        // Macros defined through others (`#define CUB_NAMESPACE_BEGIN _CCCL_BEGIN_NAMESPACE_CUB`):
        // until nothing new is learnt.
        loop {
            let mut changed = false;
            for (name, body) in &bodies {
                let Some(meaning) = m.meaning_of(body, false) else {
                    continue;
                };
                let old = m.by_name.get(name).copied();
                let new = old.map_or(meaning, |o| o.max(meaning));
                if old != Some(new) {
                    m.by_name.insert(name.clone(), new);
                    changed = true;
                }
            }
            for (name, defs) in &calls {
                let meanings: Vec<_> = defs.iter().map(|b| m.meaning_of(b, true)).collect();
                let Some(meaning) = meanings.iter().flatten().max().copied() else {
                    continue;
                };
                let call = Call {
                    meaning,
                    every: meanings.iter().all(Option::is_some),
                };
                if meaning <= Meaning::Namespace && m.calls.get(name) != Some(&call) {
                    m.calls.insert(name.clone(), call);
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        // Macros whose every definition declares something with code: blanked like code-free
        // ones (their code is in the definition, and no grammar reads a declaration made by a
        // call, as cuda-samples' `BUILD_SHAREDMEMORY_TYPE(int, s_int);`).
        for (name, defs) in &calls {
            let declares = |b: &String| declares(b, |w| m.by_name.contains_key(w));
            if !m.calls.contains_key(name)
                && !m.shapes.contains_key(name)
                && defs.iter().all(declares)
            {
                let call = Call {
                    meaning: Meaning::Plain,
                    every: true,
                };
                m.calls.insert(name.clone(), call);
            }
        }
        // Defined outside the tree (thrust's and CUB's in the toolkit): known by name alone.
        for name in namespace_lines {
            m.by_name.entry(name).or_insert(Meaning::Namespace);
        }
        m
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
            && self.calls.is_empty()
            && self.shapes.is_empty()
            && self.operators.is_empty()
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
    /// opens or closes namespaces (with code-free calls beside: `_CCCL_PROLOGUE_INCLUDE_CHECK()`).
    /// `call`: the body of a function-like macro, where `;` and unknown words (its parameters,
    /// say) may stand only inside the code-free calls.
    fn meaning_of(&self, body: &str, call: bool) -> Option<Meaning> {
        let body = strip_comments(body);
        let body = body.trim();
        let mut meaning = Meaning::Plain;
        let mut namespace = false;
        let mut rest = body;
        while !rest.is_empty() {
            rest = rest.trim_start();
            if rest.is_empty() {
                break;
            }
            if let Some(after) = rest.strip_prefix('}') {
                namespace = true;
                rest = after;
                continue;
            }
            if let Some(after) = call.then(|| rest.strip_prefix(';')).flatten() {
                rest = after;
                continue;
            }
            if let Some(after) = open_namespace(rest) {
                namespace = true;
                rest = after;
                continue;
            }
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
            let open = rest.len() - rest.trim_start().len();
            if rest[open..].starts_with('(') {
                let args_end = balanced(rest, open);
                let m = match word {
                    "_Pragma" | "__pragma" | "static_assert" => Some(Meaning::Plain),
                    "__launch_bounds__" => Some(Meaning::Plain),
                    w => self.calls.get(w).map(|c| c.meaning),
                };
                if let (Some(m), Some(args_end)) = (m, args_end) {
                    namespace |= m == Meaning::Namespace;
                    rest = &rest[args_end..];
                    continue;
                }
                if let (true, Some(args_end)) = (self.pasters.contains(word), args_end) {
                    let pasted = self.pasted_meaning(&rest[open..args_end])?;
                    meaning = meaning.max(pasted);
                    rest = &rest[args_end..];
                    continue;
                }
            }
            let m = match word {
                "__device__" => Meaning::Device { host: false },
                "__global__" => Meaning::Kernel,
                "__host__" => Meaning::Plain,
                w if QUALIFIERS.contains(&w) => Meaning::Plain,
                w => match self.by_name.get(w) {
                    // `#define CUB_NAMESPACE_BEGIN _CCCL_BEGIN_NAMESPACE_CUB`.
                    Some(Meaning::Namespace) => {
                        namespace = true;
                        continue;
                    }
                    None => return None,
                    Some(m) => *m,
                },
            };
            meaning = meaning.max(m);
        }
        if namespace {
            // Namespaces and qualifiers in one macro: not a shape to blank.
            return (meaning == Meaning::Plain).then_some(Meaning::Namespace);
        }
        if body.contains("__host__") && matches!(meaning, Meaning::Device { .. }) {
            meaning = Meaning::Device { host: true };
        }
        Some(meaning)
    }
}

/// The macros of `calls` that paste their arguments: a body with `##`, or a call of such a macro.
fn pasters(calls: &HashMap<String, Vec<String>>) -> std::collections::HashSet<String> {
    let mut out: std::collections::HashSet<String> = calls
        .iter()
        .filter(|(_, bodies)| bodies.iter().any(|b| b.contains("##")))
        .map(|(name, _)| name.clone())
        .collect();
    loop {
        let more: Vec<String> = calls
            .iter()
            .filter(|(name, bodies)| {
                !out.contains(*name)
                    && bodies.iter().any(|b| {
                        let b = b.trim_start();
                        let end = b
                            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                            .unwrap_or(b.len());
                        out.contains(&b[..end]) && b[end..].trim_start().starts_with('(')
                    })
            })
            .map(|(name, _)| name.clone())
            .collect();
        if more.is_empty() {
            return out;
        }
        out.extend(more);
    }
}

impl Macros {
    /// What the names a paster call (`(STDGPU_, BACKEND, _HOST_DEVICE)`, parenthesised) can
    /// make mean: its arguments pasted in order, nested pasters flattened; a whole word among
    /// them (`BACKEND`, not the fragments `STDGPU_`, `_HOST_DEVICE`) stands for any word when
    /// the literal name is no learnt macro (a build's `-D`). The greatest meaning of the learnt
    /// qualifier macros matched; None if none is.
    fn pasted_meaning(&self, args: &str) -> Option<Meaning> {
        let mut parts = Vec::new();
        self.paste_parts(args, &mut parts)?;
        let literal: String = parts.concat();
        if self.objects.contains(&literal) {
            return self
                .by_name
                .get(&literal)
                .filter(|m| **m != Meaning::Namespace)
                .copied();
        }
        let wild = |p: &&str| !p.starts_with('_') && !p.ends_with('_');
        if !parts.iter().any(wild) {
            return None;
        }
        self.by_name
            .iter()
            .filter(|(name, m)| **m != Meaning::Namespace && glob(&parts, name, &wild))
            .map(|(_, m)| *m)
            .max()
    }

    /// The words `args` (a parenthesised argument list) pastes, in order.
    fn paste_parts<'t>(&self, args: &'t str, parts: &mut Vec<&'t str>) -> Option<()> {
        let inner = args.trim().strip_prefix('(')?.strip_suffix(')')?;
        let mut depth = 0;
        let mut start = 0;
        for (i, c) in inner.char_indices().chain([(inner.len(), ',')]) {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                ',' if depth == 0 => {
                    let arg = inner[start..i].trim();
                    start = i + 1;
                    let end = arg
                        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                        .unwrap_or(arg.len());
                    match &arg[end..] {
                        "" => parts.push(arg),
                        call if self.pasters.contains(&arg[..end]) => {
                            self.paste_parts(call, parts)?
                        }
                        _ => return None,
                    }
                }
                _ => {}
            }
        }
        Some(())
    }
}

/// Whether `name` is `parts` pasted, each part that `wild` picks standing for one or more word
/// characters.
fn glob(parts: &[&str], name: &str, wild: &dyn Fn(&&str) -> bool) -> bool {
    let Some((first, rest)) = parts.split_first() else {
        return name.is_empty();
    };
    if !wild(first) {
        return name
            .strip_prefix(first)
            .is_some_and(|n| glob(rest, n, wild));
    }
    (1..=name.len()).any(|k| glob(rest, &name[k..], wild))
}

/// The C++20 syntax a function-like macro body stands for, if it is one of `Shape`'s; `calls`:
/// every function-like macro's bodies.
fn shape_of(body: &str, calls: &HashMap<String, Vec<String>>) -> Option<Shape> {
    let squeezed: String = strip_comments(body).split_whitespace().collect();
    match squeezed.as_str() {
        "template<__VA_ARGS__>" => return Some(Shape::TemplateHead),
        "requires__VA_ARGS__" => return Some(Shape::Requires),
        _ => {}
    }
    if squeezed.starts_with("typename") && squeezed.contains("__VA_ARGS__") {
        return Some(Shape::TypeParameter);
    }
    let rest = squeezed.strip_prefix("->__VA_ARGS__")?;
    let requires = |b: &String| shape_of(b, &HashMap::new()) == Some(Shape::Requires);
    calls
        .get(rest)
        .is_some_and(|defs| defs.iter().any(requires))
        .then_some(Shape::TrailingRequires)
}

/// After `namespace a {`, `inline namespace v1 {` or `namespace a::b {` at the start of `text`.
fn open_namespace(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("inline").map_or(text, str::trim_start);
    let after = rest.strip_prefix("namespace")?;
    let open = after.find('{')?;
    let name = after[..open].trim();
    name.chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
        .then(|| &after[open + 1..])
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

/// Whether a definition is whole declarations with a body: `template <> struct S<t> { ... }`,
/// or a function after a qualifier, given or learnt (`MGPU_DEVICE inline T f(...) { ... }`),
/// also after attributes and calls of upper-case macros (`[[nodiscard]]`, `_CCCL_TEMPLATE(class
/// T)`, `DECLARE_INVOCABLE(...);`).
fn declares(body: &str, learnt: impl Fn(&str) -> bool) -> bool {
    let b = strip_comments(body);
    let b = past_attributes_and_calls(&b);
    let first = b
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .next()
        .unwrap_or("");
    let head = ["template", "struct", "class", "union"].contains(&first)
        || QUALIFIERS.contains(&first)
        || learnt(first);
    head && b.contains('{')
}

/// `b` past its leading attributes and calls of upper-case macros, each with the `;` after it,
/// if any.
fn past_attributes_and_calls(mut b: &str) -> &str {
    loop {
        b = b.trim_start();
        let name = b
            .bytes()
            .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == b'_')
            .count();
        let open = name + (b[name..].len() - b[name..].trim_start().len());
        let after = skip_attribute(b).or_else(|| {
            let upper = b.as_bytes()[..name].iter().any(u8::is_ascii_uppercase);
            upper
                .then(|| balanced(b, open))
                .flatten()
                .map(|end| &b[end..])
        });
        let Some(after) = after else {
            return b;
        };
        b = after.trim_start();
        b = b.strip_prefix(';').unwrap_or(b);
    }
}

/// The end of the parenthesised group starting at `open` (`(`), past its `)`; parentheses in
/// string and character literals do not count.
pub fn balanced(text: &str, open: usize) -> Option<usize> {
    if text.as_bytes().get(open) != Some(&b'(') {
        return None;
    }
    let mut depth = 0usize;
    let mut end = None;
    outside_literals(text, open, text.len(), |i, b| {
        match b {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    end = Some(i + 1);
                    return false;
                }
            }
            _ => {}
        }
        true
    });
    end
}

/// Calls `f` with each byte of `text[from..to]` outside string and character literals and
/// comments, and its index, until `f` says to stop.
pub fn outside_literals(text: &str, from: usize, to: usize, mut f: impl FnMut(usize, u8) -> bool) {
    let bytes = text.as_bytes();
    let mut quote = None;
    let mut i = from;
    while i < to {
        let b = bytes[i];
        match (quote, b) {
            (Some(_), b'\\') => i += 1,
            (Some(q), _) if b == q => quote = None,
            (Some(_), _) => {}
            (None, b'"' | b'\'') => quote = Some(b),
            // A comment: `// a, b` in an argument list is no argument, `// don't` no literal.
            (None, b'/') if bytes.get(i + 1) == Some(&b'/') => {
                i = text[i..to].find('\n').map_or(to, |n| i + n);
                continue;
            }
            (None, b'/') if bytes.get(i + 1) == Some(&b'*') => {
                let body = text.get(i + 2..to).unwrap_or("");
                i = body.find("*/").map_or(to, |n| i + 2 + n + 2);
                continue;
            }
            (None, _) => {
                if !f(i, b) {
                    return;
                }
            }
        }
        i += 1;
    }
}

/// Where the code after `from` starts, past white space and comments.
pub fn past_comments(text: &str, from: usize) -> usize {
    let mut at = from;
    loop {
        let rest = &text[at..];
        let code = rest.trim_start();
        at += rest.len() - code.len();
        if code.starts_with("//") {
            at += code.find('\n').unwrap_or(code.len());
        } else if let Some(body) = code.strip_prefix("/*") {
            at += body.find("*/").map_or(code.len(), |e| e + 4);
        } else {
            return at;
        }
    }
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

/// The `#define NAME BODY` lines of `text` (continued lines joined), as (NAME, BODY): the
/// object-like ones, and the function-like ones with BODY after the parameters.
type Defines = Vec<(String, String)>;

/// The object-like `#define`s of a text: name and expansion.
pub fn object_defines(text: &str) -> Defines {
    if text.contains("define") {
        defines(text).0
    } else {
        Vec::new()
    }
}
fn defines(text: &str) -> (Defines, Defines) {
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
            if let Some(params_end) = balanced(full, end) {
                functions.push((full[..end].to_string(), full[params_end..].to_string()));
            }
            continue;
        }
        out.push((full[..end].to_string(), full[end..].to_string()));
    }
    (out, functions)
}

/// Names standing alone on a line that say they open or close a namespace
/// (`THRUST_NAMESPACE_BEGIN`, `CUB_NAMESPACE_END`, `BEGIN_NAMESPACE_X`): upper case, with
/// `NAMESPACE` and `BEGIN` or `END` in them.
fn namespace_macro_lines(text: &str) -> Vec<String> {
    if !text.contains("NAMESPACE") {
        return Vec::new();
    }
    text.lines()
        .map(str::trim)
        .filter(|l| {
            l.bytes()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_')
                && l.contains("NAMESPACE")
                && (l.contains("BEGIN") || l.contains("END"))
                && !l.starts_with(|c: char| c.is_ascii_digit())
        })
        .map(str::to_string)
        .collect()
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
#[path = "macros_tests.rs"]
mod tests;

//! Which device functions a launched kernel may reach. A fence in any other function never
//! runs, so `reduce` drops it without a run. Conservative: a function counts as unreachable
//! only when its name is a plain identifier mentioned nowhere but in the bodies of device
//! functions that are unreachable themselves.
//!
//! A mention is a word of the text, not a parsed call: a call by name, a launch, a pointer
//! taken, a template argument, a macro body, a string (`cuModuleGetFunction(.., "k")`), a
//! comment and each part of a mangled name (`_Z1kPi`) all count, in every file of the tree,
//! parsed or copied (host sources, scripts, binaries). The roots are
//! - every function whose name is not a plain identifier (a method, an operator, a qualified
//!   or specialised name: called in ways its name does not show);
//! - every function whose name is mentioned outside the bodies of device functions (a launch,
//!   host code, a prototype, a global's initialiser, a copied file);
//! - every function, when no file launches a kernel (`<<<...>>>`): the launches, and perhaps
//!   the calls, are then somewhere wmfix does not see.
//!
//! Names are not resolved: when a name is reached, every function of that name is (overloads,
//! same-named functions of several files). A function template is reached like any function:
//! every use of it names it (`f<T>(..)`, `f(..)`, `&f<T>`, an explicit instantiation), and an
//! explicit specialisation's name (`f<int>`) is not plain, so it is a root.

use crate::rewrite::plan::Function;
use crate::rewrite::ranges::Nested;
use crate::rewrite::render::Planned;
use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Sets `reachable` of every planned function; `copies` (relative to `root`) are the files of
/// the tree copied without being planned, read here for mentions.
pub fn mark(files: &mut [Planned], root: &Path, copies: &[PathBuf]) {
    let names: HashSet<String> = files
        .iter()
        .flat_map(|p| &p.plan.functions)
        .filter_map(|f| f.plain_name_at.map(|_| f.name.clone()))
        .collect();
    // Without a launch seen, everything stays reachable, as planned: nothing to read.
    if names.is_empty() || !files.iter().any(|p| p.plan.launches) {
        return;
    }
    let planned: Vec<&Planned> = files.iter().collect();
    let seen = super::parallel::map(planned, |p| {
        mentions(&p.file.text, &p.plan.functions, &names)
    });
    let paths: Vec<PathBuf> = copies.iter().map(|rel| root.join(rel)).collect();
    let copied = super::parallel::map(paths, |path| mentions_in_file(&path, &names));
    let mut outside: HashSet<&str> = copied.into_iter().flatten().collect();
    outside.extend(seen.iter().flat_map(|m| m.outside.iter().copied()));
    let functions: Vec<&[Function]> = files.iter().map(|p| &p.plan.functions[..]).collect();
    let reached = reachable(&functions, &seen, &outside);
    for (p, reached) in files.iter_mut().zip(reached) {
        for (f, r) in p.plan.functions.iter_mut().zip(reached) {
            f.reachable = r;
        }
    }
}

/// What one planned file mentions, of the names looked for.
struct Mentions<'n> {
    /// Per function: the names its body mentions.
    inside: Vec<HashSet<&'n str>>,
    /// Names mentioned outside every device function's body (its own name where it is
    /// defined not counted).
    outside: HashSet<&'n str>,
}

fn mentions<'n>(text: &str, functions: &[Function], names: &'n HashSet<String>) -> Mentions<'n> {
    let bodies = Nested::new(functions.iter().map(|f| f.body.clone()));
    let defined: HashSet<usize> = functions.iter().filter_map(|f| f.plain_name_at).collect();
    let mut m = Mentions {
        inside: vec![HashSet::new(); functions.len()],
        outside: HashSet::new(),
    };
    for (at, word) in words(text.as_bytes()) {
        if defined.contains(&at) {
            continue;
        }
        each_name(word, names, &mut |name| {
            let mut body = bodies.innermost(at..at);
            if body.is_none() {
                m.outside.insert(name);
            }
            // A body inside another's (a local class's method) is in both.
            while let Some(i) = body {
                m.inside[i].insert(name);
                body = bodies.parent(i);
            }
        });
    }
    m
}

/// The names of `names` a copied file mentions; one that cannot be read mentions them all.
fn mentions_in_file<'n>(path: &Path, names: &'n HashSet<String>) -> Vec<&'n str> {
    let mut found = HashSet::new();
    let read = scan_file(path, &mut |word| {
        each_name(word, names, &mut |name| {
            found.insert(name);
        })
    });
    match read {
        Ok(()) => found.into_iter().collect(),
        Err(_) => names.iter().map(String::as_str).collect(),
    }
}

/// Every word of the file at `path`, read in chunks (a copied file may be large data).
fn scan_file(path: &Path, each: &mut dyn FnMut(&[u8])) -> std::io::Result<()> {
    /// A longer run of word bytes is no name: not kept across chunks.
    const LONGEST: usize = 1 << 16;
    let mut file = std::fs::File::open(path)?;
    let mut buf = vec![0u8; 1 << 20];
    let mut carry: Vec<u8> = Vec::new();
    loop {
        let n = file.read(&mut buf)?;
        carry.extend_from_slice(&buf[..n]);
        // The last word may go on in the next chunk: kept back, unless the file ended.
        let cut = if n == 0 {
            carry.len()
        } else {
            carry
                .iter()
                .rposition(|b| !is_word(*b))
                .map_or(0, |i| i + 1)
        };
        for (_, w) in words(&carry[..cut]) {
            each(w);
        }
        carry.drain(..cut);
        if n == 0 {
            return Ok(());
        }
        if carry.len() > LONGEST {
            carry.clear();
        }
    }
}

/// Each of `names` that `word` is or, as a mangled name, holds.
fn each_name<'n>(word: &[u8], names: &'n HashSet<String>, found: &mut dyn FnMut(&'n str)) {
    let mut look = |w: &[u8]| {
        let name = std::str::from_utf8(w).ok().and_then(|w| names.get(w));
        if let Some(name) = name {
            found(name);
        }
    };
    look(word);
    if word.starts_with(b"_Z") {
        mangled_parts(word).into_iter().for_each(look);
    }
}

/// The `<length><name>` parts of a mangled name: `k` of `_Z1kPi`, `ns` and `f` of
/// `_ZN2ns1fEv`.
fn mangled_parts(word: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < word.len() {
        let digits = word[i..].iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 {
            i += 1;
            continue;
        }
        let len: usize = std::str::from_utf8(&word[i..i + digits])
            .ok()
            .and_then(|d| d.parse().ok())
            .unwrap_or(usize::MAX);
        let start = i + digits;
        match start.checked_add(len) {
            Some(end) if end <= word.len() && len > 0 => {
                out.push(&word[start..end]);
                i = end;
            }
            _ => i = start,
        }
    }
    out
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The words of `text` (runs of letters, digits and `_` not starting with a digit) and where
/// each starts.
fn words(text: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    let mut i = 0;
    std::iter::from_fn(move || {
        loop {
            while i < text.len() && !is_word(text[i]) {
                i += 1;
            }
            if i >= text.len() {
                return None;
            }
            let start = i;
            while i < text.len() && is_word(text[i]) {
                i += 1;
            }
            if !text[start].is_ascii_digit() {
                return Some((start, &text[start..i]));
            }
        }
    })
}

/// Per file, per function: whether a root reaches it through mentions in reached bodies.
fn reachable(files: &[&[Function]], seen: &[Mentions], outside: &HashSet<&str>) -> Vec<Vec<bool>> {
    let all = || {
        files
            .iter()
            .enumerate()
            .flat_map(|(i, fs)| fs.iter().enumerate().map(move |(j, f)| (i, j, f)))
    };
    let mentioned = |f: &Function| f.plain_name_at.is_none() || outside.contains(f.name.as_str());
    let mut reached: Vec<Vec<bool>> = files.iter().map(|fs| vec![false; fs.len()]).collect();
    let mut by_name: HashMap<&str, Vec<(usize, usize)>> = HashMap::new();
    let mut work = Vec::new();
    for (i, j, f) in all() {
        if f.plain_name_at.is_some() {
            by_name.entry(f.name.as_str()).or_default().push((i, j));
        }
        if mentioned(f) {
            reached[i][j] = true;
            work.push((i, j));
        }
    }
    let mut names_reached: HashSet<&str> = HashSet::new();
    while let Some((i, j)) = work.pop() {
        for name in &seen[i].inside[j] {
            if !names_reached.insert(name) {
                continue;
            }
            for &(fi, fj) in by_name.get(name).into_iter().flatten() {
                if !reached[fi][fj] {
                    reached[fi][fj] = true;
                    work.push((fi, fj));
                }
            }
        }
    }
    reached
}

#[cfg(test)]
#[path = "reach_tests.rs"]
mod tests;

//! The CPU side of `wmfix tune`: from the raw counts of the three micro-benchmark phases of
//! paper 000 (Sorensen & Donaldson, PLDI 2016, Sec. 3.2 to 3.4) to a chip profile for `sys-str`.
//!
//! - **Patch finding** (Sec. 3.2): `counts[test][d][l]`, the weak behaviours in C executions of
//!   `<T_d, l>`; [`critical_patch_size`] finds the epsilon-patches and the critical patch size P.
//! - **Sequence finding** (Sec. 3.3): `scores[test][sigma]`, summed over the distances and the
//!   patch-start locations; [`best_sequence`] takes the Pareto-optimal sequences over MP, LB and
//!   SB and breaks ties as the paper does.
//! - **Spread finding** (Sec. 3.4): `scores[test][m - 1]` for m = 1..M; [`best_spread`].
//!
//! [`RawCounts`] is the JSON that `wmfix tune` writes beside the profile and `wmfix tune
//! --analyse FILE` reads; every phase is optional, so a partial run can be analysed. [`run`]
//! is the `--analyse` command: it prints [`report`], writes `profile.toml` (the runtime's TOML
//! subset, see `runtime-cu/README.md`), `analysis.json` and the plots of `svg.rs`.

use crate::exit_code::{self, fail};
use crate::svg;
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// The version of the raw-counts JSON; a file with another `format` is refused.
pub const FORMAT: u32 = 1;
/// Most locations the runtime stresses at once (`kMaxSpread` in `runtime-cu/wmfix_common.cuh`).
pub const MAX_SPREAD: usize = 64;
/// Longest access sequence the runtime runs (`kMaxSeqLen`).
pub const MAX_SEQUENCE_LEN: usize = 32;
/// Largest patch size the runtime accepts.
pub const MAX_PATCH_SIZE: usize = 1 << 20;

// ---------------------------------------------------------------------------------------------
// Tests and per-test values

/// The three litmus tests of Fig. 2: message passing, load buffering, store buffering.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Test {
    #[serde(rename = "MP")]
    Mp,
    #[serde(rename = "LB")]
    Lb,
    #[serde(rename = "SB")]
    Sb,
}

impl Test {
    pub const ALL: [Test; 3] = [Test::Mp, Test::Lb, Test::Sb];

    pub fn name(self) -> &'static str {
        match self {
            Test::Mp => "MP",
            Test::Lb => "LB",
            Test::Sb => "SB",
        }
    }
}

impl fmt::Display for Test {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One value per test; in JSON an object with the keys `MP`, `LB`, `SB`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PerTest<T> {
    #[serde(rename = "MP")]
    pub mp: T,
    #[serde(rename = "LB")]
    pub lb: T,
    #[serde(rename = "SB")]
    pub sb: T,
}

impl<T> PerTest<T> {
    pub fn from_fn(mut f: impl FnMut(Test) -> T) -> Self {
        PerTest {
            mp: f(Test::Mp),
            lb: f(Test::Lb),
            sb: f(Test::Sb),
        }
    }

    pub fn get(&self, t: Test) -> &T {
        match t {
            Test::Mp => &self.mp,
            Test::Lb => &self.lb,
            Test::Sb => &self.sb,
        }
    }

    pub fn get_mut(&mut self, t: Test) -> &mut T {
        match t {
            Test::Mp => &mut self.mp,
            Test::Lb => &mut self.lb,
            Test::Sb => &mut self.sb,
        }
    }

    pub fn map<U>(&self, mut f: impl FnMut(Test, &T) -> U) -> PerTest<U> {
        PerTest::from_fn(|t| f(t, self.get(t)))
    }

    pub fn iter(&self) -> impl Iterator<Item = (Test, &T)> {
        Test::ALL.into_iter().map(move |t| (t, self.get(t)))
    }
}

// ---------------------------------------------------------------------------------------------
// Access sequences

/// One access of a stressing thread's loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Access {
    Ld,
    St,
}

impl Access {
    fn name(self) -> &'static str {
        match self {
            Access::Ld => "ld",
            Access::St => "st",
        }
    }
}

/// An access sequence sigma in (ld|st)+, at most [`MAX_SEQUENCE_LEN`] accesses. Ordered by
/// length, then access by access with `ld` before `st` (the order of [`all_sequences`]).
/// `Display` and [`Sequence::compact`] give the paper's form `ld st2 ld`; [`Sequence::text`]
/// gives `ld st st ld`, the form written into profiles. JSON holds the text form; parsing
/// accepts both (`ld3 st` is `ld ld ld st`, as in the runtime's parser).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Sequence(Vec<Access>);

impl Sequence {
    pub fn new(accesses: Vec<Access>) -> Result<Sequence, String> {
        if accesses.is_empty() {
            return Err("an access sequence needs at least one access".into());
        }
        if accesses.len() > MAX_SEQUENCE_LEN {
            return Err(format!(
                "an access sequence has at most {MAX_SEQUENCE_LEN} accesses, not {}",
                accesses.len()
            ));
        }
        Ok(Sequence(accesses))
    }

    pub fn accesses(&self) -> &[Access] {
        &self.0
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `ld st st ld`: one word per access.
    pub fn text(&self) -> String {
        self.0
            .iter()
            .map(|a| a.name())
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// `ld st2 ld`: runs of one access written with a count (the paper's `ld^x`).
    pub fn compact(&self) -> String {
        let mut words = Vec::new();
        let mut i = 0;
        while i < self.0.len() {
            let run = self.0[i..].iter().take_while(|&&a| a == self.0[i]).count();
            words.push(if run == 1 {
                self.0[i].name().to_string()
            } else {
                format!("{}{run}", self.0[i].name())
            });
            i += run;
        }
        words.join(" ")
    }

    /// Parses `ld st st ld` or `ld st2 ld` (whitespace-separated words `ld`/`st` with an
    /// optional positive count).
    pub fn parse(text: &str) -> Result<Sequence, String> {
        let mut out = Vec::new();
        for word in text.split_whitespace() {
            let access = match word.get(..2) {
                Some("ld") => Access::Ld,
                Some("st") => Access::St,
                _ => {
                    return Err(format!(
                        "access sequence \"{text}\": unknown access \"{word}\" (use ld and st, \
                         optionally with a count: ld3)"
                    ));
                }
            };
            let count = match &word[2..] {
                "" => 1,
                n => match n.parse::<usize>() {
                    Ok(c) if c > 0 && c <= MAX_SEQUENCE_LEN => c,
                    _ => {
                        return Err(format!(
                            "access sequence \"{text}\": bad count in \"{word}\""
                        ));
                    }
                },
            };
            if out.len() + count > MAX_SEQUENCE_LEN {
                return Err(format!(
                    "access sequence \"{text}\" is longer than {MAX_SEQUENCE_LEN} accesses"
                ));
            }
            out.extend(std::iter::repeat_n(access, count));
        }
        Sequence::new(out).map_err(|e| format!("access sequence \"{text}\": {e}"))
    }
}

impl Ord for Sequence {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0
            .len()
            .cmp(&other.0.len())
            .then_with(|| self.0.cmp(&other.0))
    }
}

impl PartialOrd for Sequence {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Sequence {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.compact())
    }
}

impl std::str::FromStr for Sequence {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Sequence::parse(s)
    }
}

impl Serialize for Sequence {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text())
    }
}

impl<'de> Deserialize<'de> for Sequence {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Sequence::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Every sequence in (ld|st)+ of length 1..=`max_len`, in [`Sequence`] order: `ld`, `st`,
/// `ld ld`, `ld st`, `st ld`, `st st`, `ld ld ld`, ...
///
/// There are 2 + 4 + ... + 2^N = 2^(N+1) - 2 of them: 62 for N = 5. The paper (Sec. 3.3) says
/// 2^(n+1) - 1 = 63 and its Tab. 3 ranks down to 63; that is the count of all words of length
/// 0..=N, i.e. it includes the empty sequence, which (ld|st)+ excludes (and a stressing loop
/// with no access is no stress). We enumerate the 62 non-empty sequences.
pub fn all_sequences(max_len: usize) -> Vec<Sequence> {
    let mut out = Vec::new();
    for len in 1..=max_len.min(MAX_SEQUENCE_LEN) {
        for bits in 0..(1u64 << len) {
            let accesses = (0..len)
                .map(|i| {
                    if bits >> (len - 1 - i) & 1 == 1 {
                        Access::St
                    } else {
                        Access::Ld
                    }
                })
                .collect();
            out.push(Sequence(accesses));
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Raw counts (the JSON)

/// Everything `wmfix tune` measured: the parameters and the three phases, each optional.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCounts {
    /// [`FORMAT`].
    pub format: u32,
    pub params: Params,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<PatchPhase>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence: Option<SequencePhase>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread: Option<SpreadPhase>,
}

/// The parameters of a tuning run (the paper's letters in brackets).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The GPU's name, as the driver reports it.
    pub gpu: String,
    /// The driver version (may be empty).
    #[serde(default)]
    pub driver: String,
    /// When the counts were measured (ISO 8601).
    pub date: String,
    /// The command that measured them.
    pub command: String,
    /// Distances between the two communication locations, in words: 0 <= d < D.
    pub distances: usize,
    /// Stressed scratchpad locations, in words: 0 <= l < L.
    pub locations: usize,
    /// Executions per test instance (C).
    pub executions: u64,
    /// Noise threshold (epsilon): a location is hot with more than this many weak behaviours.
    pub epsilon: u64,
    /// Longest access sequence tried (N).
    pub max_sequence_length: usize,
    /// Largest spread tried (M).
    pub max_spread: usize,
}

/// Patch finding: `counts[test][d][l]`, weak behaviours in C executions of `<T_d, l>`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PatchPhase {
    /// The loop of the stressing threads (the paper: a store then a load, `st ld`).
    #[serde(default = "patch_phase_sequence")]
    pub sequence: Sequence,
    /// Wall time of the phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
    /// `[d][l]` per test: D rows of L counts.
    pub counts: PerTest<Vec<Vec<u64>>>,
}

fn patch_phase_sequence() -> Sequence {
    Sequence(vec![Access::St, Access::Ld])
}

/// Sequence finding: each sequence stressed at the first location of each patch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SequencePhase {
    /// The patch size the phase was run with.
    pub patch_size: usize,
    /// The stressed locations: `{l < L : patch_size | l}`.
    pub locations: Vec<usize>,
    /// The sequences, in the order of the score arrays.
    pub sequences: Vec<Sequence>,
    /// `scores[test][sigma]`: weak behaviours summed over all distances and locations.
    pub scores: PerTest<Vec<u64>>,
    /// `counts[test][sigma][d][k]`: weak behaviours in C executions of `<T_d, sigma@l_k>`, with
    /// `l_k = locations[k]`. Optional; when present, each score must be its sum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts: Option<PerTest<Vec<Vec<Vec<u64>>>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
}

/// Spread finding: the chosen sequence at m random patch starts at once, m = 1..M.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpreadPhase {
    /// The patch size the phase was run with.
    pub patch_size: usize,
    /// The sequence the phase was run with.
    pub sequence: Sequence,
    /// `scores[test][m - 1]`: weak behaviours with spread m, summed over all distances.
    pub scores: PerTest<Vec<u64>>,
    /// `counts[test][m - 1][d]`. Optional; when present, each score must be its sum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts: Option<PerTest<Vec<Vec<u64>>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
}

impl SequencePhase {
    /// Each sequence with its three scores.
    pub fn entries(&self) -> Vec<(Sequence, PerTest<u64>)> {
        self.sequences
            .iter()
            .enumerate()
            .map(|(i, s)| (s.clone(), self.scores.map(|_, v| v[i])))
            .collect()
    }
}

impl RawCounts {
    /// Reads and checks a raw-counts file. Errors name the file and carry exit codes: 66 when
    /// it cannot be read, 65 when it is not valid raw counts.
    pub fn load(path: &Path) -> Result<RawCounts> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            fail(
                exit_code::NO_INPUT,
                format!("{}: cannot read raw counts: {e}", path.display()),
            )
        })?;
        let raw: RawCounts = serde_json::from_str(&text).map_err(|e| {
            fail(
                exit_code::BAD_INPUT,
                format!("{}: not a raw-counts JSON file: {e}", path.display()),
            )
        })?;
        raw.validate()
            .map_err(|e| fail(exit_code::BAD_INPUT, format!("{}: {e}", path.display())))?;
        Ok(raw)
    }

    /// Checks the format version, the dimensions of every table against the parameters, and
    /// that scores are the sums of the counts they come with.
    pub fn validate(&self) -> Result<(), String> {
        if self.format != FORMAT {
            return Err(format!(
                "format {} is not supported (this wmfix reads format {FORMAT})",
                self.format
            ));
        }
        let p = &self.params;
        if p.distances == 0 || p.locations == 0 {
            return Err("params.distances and params.locations must be positive".into());
        }
        if self.patch.is_none() && self.sequence.is_none() && self.spread.is_none() {
            return Err("no phase to analyse (none of patch, sequence, spread)".into());
        }
        if let Some(ph) = &self.patch {
            for (t, rows) in ph.counts.iter() {
                check_table(&format!("patch.counts.{t}"), rows, p.distances, p.locations)?;
            }
        }
        if let Some(ph) = &self.sequence {
            check_patch_size("sequence.patch_size", ph.patch_size)?;
            if ph.sequences.is_empty() {
                return Err("sequence.sequences is empty".into());
            }
            let mut seen = std::collections::BTreeSet::new();
            for s in &ph.sequences {
                if !seen.insert(s) {
                    return Err(format!(
                        "sequence.sequences: \"{}\" appears twice",
                        s.text()
                    ));
                }
                if s.len() > p.max_sequence_length {
                    return Err(format!(
                        "sequence.sequences: \"{}\" is longer than params.max_sequence_length = {}",
                        s.text(),
                        p.max_sequence_length
                    ));
                }
            }
            if let Some(&l) = ph.locations.iter().find(|&&l| l >= p.locations) {
                return Err(format!(
                    "sequence.locations: {l} is not below params.locations = {}",
                    p.locations
                ));
            }
            let n = ph.sequences.len();
            for (t, v) in ph.scores.iter() {
                if v.len() != n {
                    return Err(format!(
                        "sequence.scores.{t} has {} scores for {n} sequences",
                        v.len()
                    ));
                }
            }
            if let Some(counts) = &ph.counts {
                for (t, per_seq) in counts.iter() {
                    if per_seq.len() != n {
                        return Err(format!(
                            "sequence.counts.{t} has {} tables for {n} sequences",
                            per_seq.len()
                        ));
                    }
                    for (i, table) in per_seq.iter().enumerate() {
                        let what = format!("sequence.counts.{t}[{i}]");
                        check_table(&what, table, p.distances, ph.locations.len())?;
                        let sum: u64 = table.iter().flatten().sum();
                        if sum != ph.scores.get(t)[i] {
                            return Err(format!(
                                "{what} (\"{}\") sums to {sum} but sequence.scores.{t}[{i}] is {}",
                                ph.sequences[i].text(),
                                ph.scores.get(t)[i]
                            ));
                        }
                    }
                }
            }
        }
        if let Some(ph) = &self.spread {
            check_patch_size("spread.patch_size", ph.patch_size)?;
            let m = p.max_spread;
            if m == 0 || m > MAX_SPREAD {
                return Err(format!(
                    "params.max_spread = {m}: the runtime stresses 1 to {MAX_SPREAD} locations"
                ));
            }
            for (t, v) in ph.scores.iter() {
                if v.len() != m {
                    return Err(format!(
                        "spread.scores.{t} has {} scores, expected params.max_spread = {m}",
                        v.len()
                    ));
                }
            }
            if let Some(counts) = &ph.counts {
                for (t, rows) in counts.iter() {
                    let what = format!("spread.counts.{t}");
                    check_table(&what, rows, m, p.distances)?;
                    for (i, row) in rows.iter().enumerate() {
                        let sum: u64 = row.iter().sum();
                        if sum != ph.scores.get(t)[i] {
                            return Err(format!(
                                "{what}[{i}] (spread {}) sums to {sum} but spread.scores.{t}[{i}] is {}",
                                i + 1,
                                ph.scores.get(t)[i]
                            ));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The JSON text: objects indented, every array of numbers or strings on one line (a patch
    /// table is one line per distance).
    pub fn to_json(&self) -> String {
        let pretty = serde_json::to_string_pretty(self).expect("raw counts serialise");
        inline_flat_arrays(&pretty) + "\n"
    }
}

fn check_table(what: &str, rows: &[Vec<u64>], n_rows: usize, n_cols: usize) -> Result<(), String> {
    if rows.len() != n_rows {
        return Err(format!("{what} has {} rows, expected {n_rows}", rows.len()));
    }
    if let Some((i, r)) = rows.iter().enumerate().find(|(_, r)| r.len() != n_cols) {
        return Err(format!(
            "{what}[{i}] has {} entries, expected {n_cols}",
            r.len()
        ));
    }
    Ok(())
}

fn check_patch_size(what: &str, p: usize) -> Result<(), String> {
    if p == 0 || p > MAX_PATCH_SIZE {
        return Err(format!("{what} = {p}: must be in 1..={MAX_PATCH_SIZE}"));
    }
    Ok(())
}

/// Puts every innermost array (one without arrays or objects inside) of pretty-printed JSON on
/// one line. Strings are copied as they are.
fn inline_flat_arrays(pretty: &str) -> String {
    let b = pretty.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    // The index just past the string starting at b[i] == '"'.
    let skip_string = |mut i: usize| {
        i += 1;
        while b[i] != b'"' {
            i += if b[i] == b'\\' { 2 } else { 1 };
        }
        i + 1
    };
    while i < b.len() {
        match b[i] {
            b'"' => {
                let end = skip_string(i);
                out.extend_from_slice(&b[i..end]);
                i = end;
            }
            b'[' => {
                // Find the matching ']' if nothing nested comes first.
                let mut j = i + 1;
                let mut flat = None;
                while j < b.len() {
                    match b[j] {
                        b'"' => j = skip_string(j),
                        b'[' | b'{' => break,
                        b']' => {
                            flat = Some(j);
                            break;
                        }
                        _ => j += 1,
                    }
                }
                match flat {
                    Some(end) => {
                        let mut k = i;
                        while k <= end {
                            if b[k] == b'"' {
                                let e = skip_string(k);
                                out.extend_from_slice(&b[k..e]);
                                k = e;
                            } else {
                                if !b[k].is_ascii_whitespace() {
                                    out.push(b[k]);
                                }
                                k += 1;
                            }
                        }
                        i = end + 1;
                    }
                    None => {
                        out.push(b'[');
                        i += 1;
                    }
                }
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).expect("only ASCII bytes were dropped")
}

// ---------------------------------------------------------------------------------------------
// Patch finding (Sec. 3.2)

/// The epsilon-patches of one row `counts[l]` (one test, one distance): the maximal runs of
/// consecutive locations that each show more than `epsilon` weak behaviours, as `(start, size)`.
///
/// This is the paper's definition taken literally: "a maximal contiguous sequence of P
/// locations, each yielding more than epsilon weak behaviours". So when two neighbouring
/// P-aligned regions are both hot, they show as ONE patch of size 2P, not two of size P. We do
/// not split runs at P-word boundaries because P is what is being measured: splitting at the
/// boundaries of each candidate size would credit every candidate that divides the run (a
/// 64-word run holds two aligned 32-word regions, four 16-word ones, ...), so the smallest
/// candidate would always win. With hot regions scattered, as in the paper's Fig. 3, runs of
/// exactly P are still the most frequent; merged runs (2P, 3P, ...) and noise (short runs) are
/// counted under their own sizes and lose the vote. Whether the patches sit on P-word
/// boundaries is reported separately ([`TestPatches::aligned`]), not used to count them.
pub fn epsilon_patches(row: &[u64], epsilon: u64) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (l, &c) in row.iter().enumerate() {
        match (c > epsilon, start) {
            (true, None) => start = Some(l),
            (false, Some(s)) => {
                out.push((s, l - s));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, row.len() - s));
    }
    out
}

/// The epsilon-patches of one test over all distances.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TestPatches {
    /// Number of epsilon-patches, over all distances (universal rows not included).
    pub patches: usize,
    /// Patch size -> number of epsilon-patches of that size.
    pub sizes: BTreeMap<usize, usize>,
    /// Distances at which every location is hot. Such a row is one run over the whole measured
    /// range and shows no boundary at all, so it is not counted as a patch of size L: the paper
    /// reads its 980 data the same way ("LB weak behaviours universally for 64 <= d < 128 ...
    /// patches of length 64 emerge for LB at d = 128").
    pub universal_rows: usize,
    /// The sizes with the most epsilon-patches (several when tied; empty without patches).
    pub most: Vec<usize>,
    /// The test's patch size: `most` when it holds exactly one size.
    pub size: Option<usize>,
    /// Of the patches of `size`, those starting at a multiple of `size` (patch-aligned).
    pub aligned: usize,
}

/// The result of patch finding.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PatchAnalysis {
    pub epsilon: u64,
    pub tests: PerTest<TestPatches>,
    /// The critical patch size: the size that every test showing epsilon-patches names.
    pub critical: Option<usize>,
    /// Tests without any epsilon-patch, which have no say (the paper's 980: "critical patches
    /// for MP did not appear", and the size was taken from the other tests).
    pub abstained: Vec<Test>,
    /// Only when there is no critical size but there are patches: the size to use anyway (see
    /// [`critical_patch_size`]).
    pub fallback: Option<usize>,
}

impl PatchAnalysis {
    /// The patch size to stress with: the critical size, else the fallback.
    pub fn chosen(&self) -> Option<usize> {
        self.critical.or(self.fallback)
    }

    /// One line saying how the patch size was decided.
    pub fn verdict(&self) -> String {
        let answers = Test::ALL
            .iter()
            .map(|&t| {
                let tp = self.tests.get(t);
                match (tp.size, tp.most.len()) {
                    (Some(p), _) => format!("{t} {p}"),
                    (None, 0) => format!("{t} none"),
                    (None, _) => format!(
                        "{t} tied ({})",
                        tp.most
                            .iter()
                            .map(|p| p.to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                }
            })
            .collect::<Vec<_>>()
            .join(", ");
        let abstained = if self.abstained.is_empty() {
            String::new()
        } else {
            format!(
                "; {} showed no epsilon-patch and had no say",
                self.abstained
                    .iter()
                    .map(|t| t.name())
                    .collect::<Vec<_>>()
                    .join(" and ")
            )
        };
        match (self.critical, self.fallback) {
            (Some(p), _) => format!("critical patch size: {p} ({answers}{abstained})"),
            (None, Some(p)) => format!(
                "no critical patch size: the tests disagree ({answers}{abstained}); \
                 fallback {p}, the size most tests name, then the one with the most patches"
            ),
            (None, None) => format!(
                "no critical patch size: no epsilon-patch in any test ({answers}); \
                 epsilon = {} may be too high, or D too small",
                self.epsilon
            ),
        }
    }
}

/// The critical patch size (Sec. 3.2) of `counts[test][d][l]` with noise threshold `epsilon`.
///
/// For each test, the epsilon-patches of every distance ([`epsilon_patches`]) are counted by
/// size, and the test's size is the one with the most patches. The paper calls P the critical
/// patch size when all of MP, LB and SB agree on it. Two explicit departures, both from the
/// paper's own reading of its 980 data:
/// - a test with no epsilon-patch at all abstains (it is listed in `abstained`); the critical
///   size is the one every other test names, if at least one test shows patches;
/// - rows hot at every location are not patches (see [`TestPatches::universal_rows`]).
///
/// When a test's most frequent size is tied, or the tests name different sizes, there is no
/// critical size: `critical` is `None`, each test's answer is in `tests`, and `fallback` holds
/// the size named by most tests (a test tied between sizes names each of them), ties broken by
/// the total number of epsilon-patches of that size over all tests, then by the smaller size
/// (stressing at multiples of the smaller size also stresses the start of every larger patch
/// that it divides). The fallback is what the later phases can run with; the report says that
/// it is one.
///
/// Errors when the tables are empty or not rectangular, or the tests' tables differ in shape.
pub fn critical_patch_size(counts: &PerTest<Vec<Vec<u64>>>, epsilon: u64) -> Result<PatchAnalysis> {
    let rows = counts.mp.len();
    let cols = counts.mp.first().map_or(0, Vec::len);
    if rows == 0 || cols == 0 {
        anyhow::bail!("patch counts are empty");
    }
    for (t, table) in counts.iter() {
        check_table(&format!("patch counts of {t}"), table, rows, cols)
            .map_err(anyhow::Error::msg)?;
    }
    let tests = counts.map(|_, table| {
        let mut sizes = BTreeMap::new();
        let mut universal_rows = 0;
        let mut starts: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for row in table {
            let patches = epsilon_patches(row, epsilon);
            if patches == [(0, cols)] {
                universal_rows += 1;
                continue;
            }
            for (start, size) in patches {
                *sizes.entry(size).or_insert(0) += 1;
                starts.entry(size).or_default().push(start);
            }
        }
        let best = sizes.values().copied().max().unwrap_or(0);
        let most: Vec<usize> = sizes
            .iter()
            .filter(|&(_, &n)| n == best && best > 0)
            .map(|(&s, _)| s)
            .collect();
        let size = (most.len() == 1).then(|| most[0]);
        let aligned = size.map_or(0, |p| starts[&p].iter().filter(|&&s| s % p == 0).count());
        TestPatches {
            patches: sizes.values().sum(),
            sizes,
            universal_rows,
            most,
            size,
            aligned,
        }
    });
    let abstained: Vec<Test> = Test::ALL
        .into_iter()
        .filter(|&t| tests.get(t).patches == 0)
        .collect();
    let voters: Vec<&TestPatches> = tests
        .iter()
        .filter(|(_, tp)| tp.patches > 0)
        .map(|(_, tp)| tp)
        .collect();
    let critical = match voters.first().and_then(|v| v.size) {
        Some(p) if voters.iter().all(|v| v.size == Some(p)) => Some(p),
        _ => None,
    };
    let fallback = if critical.is_some() || voters.is_empty() {
        None
    } else {
        let mut votes: BTreeMap<usize, (usize, usize)> = BTreeMap::new();
        for v in &voters {
            for &p in &v.most {
                votes.entry(p).or_insert((0, 0)).0 += 1;
            }
        }
        for (p, e) in votes.iter_mut() {
            e.1 = voters
                .iter()
                .map(|v| v.sizes.get(p).copied().unwrap_or(0))
                .sum();
        }
        // Most votes, then most patches, then the smaller size (the first in the map).
        votes
            .iter()
            .fold(
                None,
                |best: Option<(usize, (usize, usize))>, (&p, &e)| match best {
                    Some((_, be)) if be >= e => best,
                    _ => Some((p, e)),
                },
            )
            .map(|(p, _)| p)
    };
    Ok(PatchAnalysis {
        epsilon,
        tests,
        critical,
        abstained,
        fallback,
    })
}

// ---------------------------------------------------------------------------------------------
// Pareto choice (Sec. 3.3 and 3.4)

/// How a [`Choice`] was decided, from the paper's rule to the deterministic fallbacks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// The only Pareto-optimal candidate.
    Unique,
    /// The paper's tie-break: of the Pareto-optimal candidates, the one that is more effective
    /// than each other one for two of the three tests.
    TwoOfThree,
    /// No candidate beats every other for two of three tests (they form a cycle); the one that
    /// beats the most others that way.
    MostTwoOfThreeWins,
    /// Still tied: the highest sum of its three scores, each relative to that test's best
    /// score over all candidates (so that no test weighs more for having larger counts).
    Balanced,
    /// Still tied (identical relative scores): the first in order (the shorter sequence, `ld`
    /// before `st`; the smaller spread).
    FirstInOrder,
}

impl Decision {
    pub fn describe(self) -> &'static str {
        match self {
            Decision::Unique => "the only Pareto-optimal one",
            Decision::TwoOfThree => {
                "more effective than each other Pareto-optimal one for two of the three tests \
                 (the paper's tie-break)"
            }
            Decision::MostTwoOfThreeWins => {
                "no Pareto-optimal one beats all others for two of the three tests; this one \
                 beats the most"
            }
            Decision::Balanced => {
                "tied on two-of-three wins; the highest sum of scores relative to each test's best"
            }
            Decision::FirstInOrder => "tied on everything; the first in order",
        }
    }
}

/// A Pareto-optimal candidate with its scores and its two-of-three wins against the others.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Candidate<K> {
    pub key: K,
    pub scores: PerTest<u64>,
    /// How many other Pareto-optimal candidates this one beats for at least two tests.
    pub wins: usize,
}

/// The choice among candidates scored on the three tests.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Choice<K> {
    pub chosen: K,
    pub decided_by: Decision,
    /// The Pareto-optimal candidates, in key order.
    pub pareto: Vec<Candidate<K>>,
    /// Every candidate with its scores, in key order.
    pub all: Vec<(K, PerTest<u64>)>,
}

pub type SequenceChoice = Choice<Sequence>;
pub type SpreadChoice = Choice<usize>;

impl<K: Clone> Choice<K> {
    /// The candidates ranked by their score on `t`, best first, ties in key order: `(rank
    /// from 1, key, score)`.
    pub fn ranking(&self, t: Test) -> Vec<(usize, K, u64)> {
        let mut v: Vec<(K, u64)> = self
            .all
            .iter()
            .map(|(k, s)| (k.clone(), *s.get(t)))
            .collect();
        // `all` is in key order and the sort is stable.
        v.sort_by_key(|x| std::cmp::Reverse(x.1));
        v.into_iter()
            .enumerate()
            .map(|(i, (k, s))| (i + 1, k, s))
            .collect()
    }
}

/// `a` dominates `b`: at least as effective for every test and more effective for one.
fn dominates(a: &PerTest<u64>, b: &PerTest<u64>) -> bool {
    Test::ALL.iter().all(|&t| a.get(t) >= b.get(t))
        && Test::ALL.iter().any(|&t| a.get(t) > b.get(t))
}

/// `a` is more effective than `b` for at least two of the three tests.
fn beats_two_of_three(a: &PerTest<u64>, b: &PerTest<u64>) -> bool {
    Test::ALL.iter().filter(|&&t| a.get(t) > b.get(t)).count() >= 2
}

/// The Pareto-optimal candidates over the three tests and the one chosen among them.
///
/// Pareto optimality (Sec. 3.3): a candidate is dropped when another one is at least as
/// effective for all three tests and more effective for one (the usual definition; two
/// candidates with equal scores both stay). The paper's Tab. 3 shows why ties are the rule, not
/// the exception: each test's best sequence (ld3 st ld for MP, st2 ld3 for LB, st2 ld for SB on
/// Titan) cannot be dominated, so at least those and the chosen ld st2 ld are Pareto-optimal.
/// The paper breaks ties by "selecting the sequence that was most effective for two out of the
/// three litmus tests". We read it pairwise: the chosen candidate is more effective than each
/// other Pareto-optimal one for at least two tests. That is the only reading under which the
/// paper's choice for Titan, ranked 17, 17 and 21 and best for no single test, can win against
/// the per-test champions, which each lose the two tests they are not champions of. Such a
/// candidate is unique when it exists; when it does not (a cycle), see [`Decision`] for the
/// deterministic fallbacks, in order.
pub fn choose<K: Ord + Clone>(items: &[(K, PerTest<u64>)]) -> Result<Choice<K>> {
    if items.is_empty() {
        anyhow::bail!("nothing to choose from");
    }
    let mut all = items.to_vec();
    all.sort_by(|a, b| a.0.cmp(&b.0));
    if all.windows(2).any(|w| w[0].0 == w[1].0) {
        anyhow::bail!("a candidate appears twice");
    }
    let front: Vec<&(K, PerTest<u64>)> = all
        .iter()
        .filter(|(_, s)| !all.iter().any(|(_, o)| dominates(o, s)))
        .collect();
    let pareto: Vec<Candidate<K>> = front
        .iter()
        .map(|(k, s)| Candidate {
            key: k.clone(),
            scores: s.clone(),
            wins: front
                .iter()
                .filter(|(_, o)| beats_two_of_three(s, o))
                .count(),
        })
        .collect();
    let (chosen, decided_by) = if pareto.len() == 1 {
        (pareto[0].key.clone(), Decision::Unique)
    } else {
        let most = pareto.iter().map(|c| c.wins).max().unwrap_or(0);
        let by_wins: Vec<&Candidate<K>> = pareto.iter().filter(|c| c.wins == most).collect();
        if by_wins.len() == 1 {
            let d = if most == pareto.len() - 1 {
                Decision::TwoOfThree
            } else {
                Decision::MostTwoOfThreeWins
            };
            (by_wins[0].key.clone(), d)
        } else {
            // Sum of score/best over the tests, exactly: scaled by the product of the bests.
            let best = PerTest::from_fn(|t| {
                all.iter().map(|(_, s)| *s.get(t)).max().unwrap_or(0).max(1) as u128
            });
            let balance = |s: &PerTest<u64>| -> u128 {
                Test::ALL
                    .iter()
                    .map(|&t| {
                        let others: u128 = Test::ALL
                            .iter()
                            .filter(|&&o| o != t)
                            .map(|&o| *best.get(o))
                            .product();
                        *s.get(t) as u128 * others
                    })
                    .sum()
            };
            let top = by_wins.iter().map(|c| balance(&c.scores)).max().unwrap();
            let by_balance: Vec<&&Candidate<K>> = by_wins
                .iter()
                .filter(|c| balance(&c.scores) == top)
                .collect();
            if by_balance.len() == 1 {
                (by_balance[0].key.clone(), Decision::Balanced)
            } else {
                // Pareto candidates are in key order.
                (by_balance[0].key.clone(), Decision::FirstInOrder)
            }
        }
    };
    Ok(Choice {
        chosen,
        decided_by,
        pareto,
        all,
    })
}

/// The most effective access sequence (Sec. 3.3) from each sequence's scores (summed over
/// distances and patch starts): [`choose`] over the sequences.
pub fn best_sequence(scores: &[(Sequence, PerTest<u64>)]) -> Result<SequenceChoice> {
    choose(scores)
}

/// The most effective spread (Sec. 3.4) from `scores[test][m - 1]`, m = 1..M: [`choose`] over
/// the spreads, the smaller spread first when everything else is tied.
pub fn best_spread(scores: &PerTest<Vec<u64>>) -> Result<SpreadChoice> {
    let m = scores.mp.len();
    if scores.iter().any(|(_, v)| v.len() != m) {
        anyhow::bail!("spread scores of the three tests differ in length");
    }
    let items: Vec<(usize, PerTest<u64>)> =
        (0..m).map(|i| (i + 1, scores.map(|_, v| v[i]))).collect();
    choose(&items)
}

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

// ---------------------------------------------------------------------------------------------
// The whole analysis

/// What [`analyse`] found in each phase present in the raw counts.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Analysis {
    pub gpu: String,
    pub patch: Option<PatchAnalysis>,
    /// Whether the patch counts vary with the stressed location or with the distance.
    pub structure: Option<crate::tune_structure::Structure>,
    pub sequence: Option<SequenceChoice>,
    pub spread: Option<SpreadChoice>,
    /// Inconsistencies between phases, choices made on no data.
    pub warnings: Vec<String>,
    pub profile: Profile,
}

/// Analyses every phase of `raw` (which must have passed [`RawCounts::validate`]), with the
/// file's epsilon unless `epsilon` overrides it, and builds the profile.
///
/// When no test's counts vary with the stressed location and the tests agree on the distance
/// where weak behaviours step up (`tune_structure`), the profile's patch size is that distance:
/// a patch size read from location noise would mean nothing. Otherwise it is the critical
/// patch size, else the fallback of
/// [`critical_patch_size`], else (no patch phase, or no epsilon-patch) the patch size the
/// sequence or spread phase was run with. Its sequence and spread are the choices of the
/// sequence and spread phases; a phase that is missing leaves its key out.
pub fn analyse(raw: &RawCounts, epsilon: Option<u64>) -> Result<Analysis> {
    let p = &raw.params;
    let epsilon = epsilon.unwrap_or(p.epsilon);
    let mut warnings = Vec::new();
    let patch = match &raw.patch {
        Some(ph) => Some(critical_patch_size(&ph.counts, epsilon)?),
        None => None,
    };
    let sequence = match &raw.sequence {
        Some(ph) => Some(best_sequence(&ph.entries())?),
        None => None,
    };
    let spread = match &raw.spread {
        Some(ph) => Some(best_spread(&ph.scores)?),
        None => None,
    };

    let structure = raw
        .patch
        .as_ref()
        .map(|ph| crate::tune_structure::Structure::of(&ph.counts));
    let from_distance = structure.as_ref().and_then(|s| s.patch_from_distance());
    let measured_p = from_distance.or(patch.as_ref().and_then(PatchAnalysis::chosen));
    let (patch_size, patch_note) = match (&patch, measured_p) {
        (Some(_), Some(size)) if from_distance.is_some() => (
            Some(size),
            format!(
                "from distance, not location: no test's weak behaviours vary with the stressed \
                 location, and they change in aligned blocks of {size} words of distance in \
                 every test that shows such blocks"
            ),
        ),
        (Some(pa), Some(size)) if pa.critical.is_some() => {
            (Some(size), format!("epsilon = {epsilon}; {}", pa.verdict()))
        }
        (Some(pa), Some(size)) => (
            Some(size),
            format!("FALLBACK, not a critical patch size: {}", pa.verdict()),
        ),
        (patch, _) => {
            let recorded = raw
                .sequence
                .as_ref()
                .map(|s| ("sequence", s.patch_size))
                .or(raw.spread.as_ref().map(|s| ("spread", s.patch_size)));
            let why = match patch {
                Some(pa) => pa.verdict(),
                None => "patch finding was not run".into(),
            };
            match recorded {
                Some((phase, size)) => (
                    Some(size),
                    format!("{why}; the patch size the {phase} phase was run with"),
                ),
                None => (None, why),
            }
        }
    };
    if let (Some(size), Some(ph)) = (measured_p, &raw.sequence)
        && ph.patch_size != size
    {
        warnings.push(format!(
            "the sequence phase was run with patch size {}, but patch finding gives {size}",
            ph.patch_size
        ));
    }
    if let (Some(size), Some(ph)) = (measured_p, &raw.spread)
        && ph.patch_size != size
    {
        warnings.push(format!(
            "the spread phase was run with patch size {}, but patch finding gives {size}",
            ph.patch_size
        ));
    }
    if let (Some(c), Some(ph)) = (&sequence, &raw.spread)
        && c.chosen != ph.sequence
    {
        warnings.push(format!(
            "the spread phase was run with sequence {}, but sequence finding chose {}",
            ph.sequence, c.chosen
        ));
    }
    for (what, all_zero) in [
        (
            "sequence",
            sequence
                .as_ref()
                .is_some_and(|c| c.all.iter().all(|(_, s)| s.iter().all(|(_, &v)| v == 0))),
        ),
        (
            "spread",
            spread
                .as_ref()
                .is_some_and(|c| c.all.iter().all(|(_, s)| s.iter().all(|(_, &v)| v == 0))),
        ),
    ] {
        if all_zero {
            warnings.push(format!(
                "no weak behaviour at all in the {what} phase: its choice is arbitrary"
            ));
        }
    }

    let sequence_note = match &sequence {
        Some(c) => format!(
            "the most effective of {} access sequences: {}",
            c.all.len(),
            c.decided_by.describe()
        ),
        None => "sequence finding was not run".into(),
    };
    let spread_note = match &spread {
        Some(c) => format!(
            "the most effective of spreads 1..{}: {}",
            c.all.len(),
            c.decided_by.describe()
        ),
        None => "spread finding was not run".into(),
    };
    let driver = if p.driver.is_empty() {
        String::new()
    } else {
        format!(", driver {}", p.driver)
    };
    let profile = Profile {
        name: slug(&p.gpu),
        gpu: p.gpu.clone(),
        description: format!("tuned by wmfix tune on {}{driver}, {}", p.gpu, p.date),
        patch_size,
        sequence: sequence.as_ref().map(|c| c.chosen.clone()),
        spread: spread.as_ref().map(|c| c.chosen),
        header: vec![
            format!(
                "wmfix chip profile for {}: stressing parameters for sys-str (Sorensen & \
                 Donaldson, PLDI 2016, Sec. 3).",
                p.gpu
            ),
            format!("Measured {}{driver}, with: {}", p.date, p.command),
            format!(
                "D = {}, L = {}, C = {}, epsilon = {epsilon}, N = {}, M = {}. Raw counts and \
                 plots: beside this file.",
                p.distances, p.locations, p.executions, p.max_sequence_length, p.max_spread
            ),
        ],
        notes: [patch_note, sequence_note, spread_note],
    };
    Ok(Analysis {
        gpu: p.gpu.clone(),
        patch,
        structure,
        sequence,
        spread,
        warnings,
        profile,
    })
}

/// Weak-behaviour counts the way Tab. 3 prints them: `342`, `9999`, `131k`, `12.5M`.
pub fn human(n: u64) -> String {
    if n < 10_000 {
        n.to_string()
    } else if n < 10_000_000 {
        format!("{}k", (n + 500) / 1000)
    } else {
        format!("{:.1}M", n as f64 / 1e6)
    }
}

/// The printed analysis: per-test patch sizes, the critical patch size, Tab. 3 (top and bottom
/// three sequences per test and the chosen one's ranks), the spread scores and the choices.
pub fn report(raw: &RawCounts, a: &Analysis) -> String {
    let p = &raw.params;
    let mut out = format!(
        "wmfix tune: {} ({}), D = {}, L = {}, C = {}\n",
        p.gpu, p.date, p.distances, p.locations, p.executions
    );
    if let Some(pa) = &a.patch {
        out += &format!(
            "\npatch finding (epsilon = {}: a location is hot with more than {} weak behaviours)\n",
            pa.epsilon, pa.epsilon
        );
        out += &format!(
            "  {:<4} {:>8} {:>6} {:>9} {:>10}  most frequent sizes (patches)\n",
            "test", "patches", "size", "aligned", "universal"
        );
        for (t, tp) in pa.tests.iter() {
            let mut top: Vec<(usize, usize)> = tp.sizes.iter().map(|(&s, &n)| (s, n)).collect();
            top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            let top = top
                .iter()
                .take(4)
                .map(|(s, n)| format!("{s} ({n})"))
                .collect::<Vec<_>>()
                .join(", ");
            let size = match (tp.size, tp.most.len()) {
                (Some(s), _) => s.to_string(),
                (None, 0) => "-".into(),
                (None, _) => "tied".into(),
            };
            let aligned = match tp.size {
                Some(s) => format!("{}/{}", tp.aligned, tp.sizes[&s]),
                None => "-".into(),
            };
            out += &format!(
                "  {:<4} {:>8} {:>6} {:>9} {:>10}  {}\n",
                t.name(),
                tp.patches,
                size,
                aligned,
                tp.universal_rows,
                if top.is_empty() { "none".into() } else { top }
            );
        }
        out += &format!("{}\n", pa.verdict());
        if let Some(st) = &a.structure {
            out += "what the counts depend on (the stressed location, or the distance):\n";
            for line in st.lines() {
                out += &format!("{line}\n");
            }
            if let Some(d) = st.patch_from_distance() {
                out += &format!("patch size {d}: from the distance blocks, not the location\n");
            }
        }
    }
    if let Some(c) = &a.sequence {
        let ph = raw.sequence.as_ref().expect("a choice comes from a phase");
        out += &format!(
            "\nsequence finding (patch size {}, {} locations, {} sequences; scores over all \
             distances and locations)\n",
            ph.patch_size,
            ph.locations.len(),
            c.all.len()
        );
        out += &sequence_table(c);
        out += &format!(
            "Pareto-optimal ({}): {}\n",
            c.pareto.len(),
            c.pareto
                .iter()
                .map(|x| format!(
                    "{} [{}/{}/{}, beats {}]",
                    x.key,
                    human(x.scores.mp),
                    human(x.scores.lb),
                    human(x.scores.sb),
                    x.wins
                ))
                .collect::<Vec<_>>()
                .join(", ")
        );
        out += &format!(
            "chosen sequence: {} (\"{}\"): {}\n",
            c.chosen,
            c.chosen.text(),
            c.decided_by.describe()
        );
    }
    if let Some(c) = &a.spread {
        let ph = raw.spread.as_ref().expect("a choice comes from a phase");
        out += &format!(
            "\nspread finding (sequence {}, patch size {}; scores over all distances; p = \
             Pareto-optimal, * = chosen)\n",
            ph.sequence, ph.patch_size
        );
        out += &format!("  {:>3} {:>9} {:>9} {:>9}\n", "m", "MP", "LB", "SB");
        for (m, s) in &c.all {
            let mark = if *m == c.chosen {
                " *"
            } else if c.pareto.iter().any(|x| x.key == *m) {
                " p"
            } else {
                ""
            };
            out += &format!("  {m:>3} {:>9} {:>9} {:>9}{mark}\n", s.mp, s.lb, s.sb);
        }
        out += &format!("chosen spread: {}: {}\n", c.chosen, c.decided_by.describe());
    }
    for w in &a.warnings {
        out += &format!("warning: {w}\n");
    }
    out
}

/// Tab. 3: per test, the top three and bottom three sequences, and the chosen one in between.
fn sequence_table(c: &SequenceChoice) -> String {
    let n = c.all.len();
    let columns: Vec<Vec<String>> = Test::ALL
        .iter()
        .map(|&t| {
            let ranking = c.ranking(t);
            let cell = |(r, s, v): &(usize, Sequence, u64)| {
                let mark = if *s == c.chosen { " *" } else { "" };
                format!("{r:>3} {:<12} {:>6}{mark}", s.compact(), human(*v))
            };
            let mut col = vec![format!("{:>3} {:<12} {:>6}", "", t.name(), "score")];
            let chosen_rank = ranking.iter().position(|x| x.1 == c.chosen).unwrap();
            let mut shown: Vec<usize> = (0..n.min(3)).collect();
            shown.push(chosen_rank);
            shown.extend(n.saturating_sub(3)..n);
            shown.sort();
            shown.dedup();
            let mut last = None;
            for i in shown {
                if last.is_some_and(|l| i > l + 1) {
                    col.push(format!("{:>3} {:<12} {:>6}", "...", "...", "..."));
                }
                col.push(cell(&ranking[i]));
                last = Some(i);
            }
            col
        })
        .collect();
    let rows = columns.iter().map(Vec::len).max().unwrap_or(0);
    let mut out = String::new();
    for r in 0..rows {
        let line: Vec<String> = columns
            .iter()
            .map(|col| format!("{:<26}", col.get(r).map_or("", String::as_str)))
            .collect();
        out += &format!("  {}\n", line.join("  ").trim_end());
    }
    out
}

// ---------------------------------------------------------------------------------------------
// `wmfix tune --analyse`

pub struct Options {
    /// The raw-counts JSON.
    pub raw: PathBuf,
    /// Where `profile.toml`, `analysis.json` and the plots go (created; other files there are
    /// left alone, the raw counts may live there).
    pub out: PathBuf,
    /// Overrides the file's noise threshold.
    pub epsilon: Option<u64>,
}

pub struct Done {
    pub analysis: Analysis,
    pub report: String,
    /// The files written, profile first.
    pub written: Vec<PathBuf>,
}

/// `wmfix tune --analyse FILE`: reads the raw counts, analyses them, writes the profile,
/// `analysis.json` and the plots (`patches.svg` in the style of Fig. 3 for distances 0, P and
/// 2P; `spread.svg` in the style of Fig. 4).
pub fn run(opts: &Options) -> Result<Done> {
    let raw = RawCounts::load(&opts.raw)?;
    let analysis = analyse(&raw, opts.epsilon).map_err(|e| {
        fail(
            exit_code::BAD_INPUT,
            format!("{}: {e:#}", opts.raw.display()),
        )
    })?;
    let report = report(&raw, &analysis);
    let cant_write = |path: &Path, e: std::io::Error| {
        fail(
            exit_code::CANT_WRITE,
            format!("{}: cannot write: {e}", path.display()),
        )
    };
    std::fs::create_dir_all(&opts.out).map_err(|e| cant_write(&opts.out, e))?;
    let mut files: Vec<(PathBuf, String)> = vec![
        (opts.out.join("profile.toml"), analysis.profile.to_toml()),
        (
            opts.out.join("analysis.json"),
            serde_json::to_string_pretty(&analysis)? + "\n",
        ),
    ];
    if let (Some(ph), Some(pa)) = (&raw.patch, &analysis.patch) {
        let p = pa.chosen().unwrap_or(32);
        let distances: Vec<usize> = [0, p, 2 * p]
            .into_iter()
            .filter(|&d| d < raw.params.distances)
            .collect();
        files.push((
            opts.out.join("patches.svg"),
            svg::patch_plot(
                &ph.counts,
                &distances,
                pa.epsilon,
                pa.chosen(),
                &format!(
                    "Patch finding on {} (epsilon = {})",
                    raw.params.gpu, pa.epsilon
                ),
            ),
        ));
    }
    if let (Some(ph), Some(c)) = (&raw.spread, &analysis.spread) {
        files.push((
            opts.out.join("spread.svg"),
            svg::spread_plot(
                &ph.scores,
                Some(c.chosen),
                &format!("Spread finding on {} ({})", raw.params.gpu, ph.sequence),
            ),
        ));
    }
    let mut written = Vec::new();
    for (path, text) in files {
        std::fs::write(&path, text).map_err(|e| cant_write(&path, e))?;
        written.push(path);
    }
    Ok(Done {
        analysis,
        report,
        written,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// xorshift64*: a deterministic generator for synthetic tables, no crate needed.
    struct Rng(u64);

    impl Rng {
        fn new(seed: u64) -> Rng {
            Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
        }
        fn next(&mut self) -> u64 {
            let mut x = self.0;
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            self.0 = x;
            x.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
        fn percent(&mut self, p: u64) -> bool {
            self.below(100) < p
        }
    }

    /// One test's synthetic patch table `[d][l]` and its ground truth.
    struct Table {
        counts: Vec<Vec<u64>>,
        /// `[d][region]`: which P-word regions are hot at distance d.
        hot: Vec<Vec<bool>>,
        /// Isolated hot locations planted in cold regions (one-location epsilon-patches).
        spurious: usize,
    }

    /// How a synthetic table is filled.
    struct Shape {
        distances: usize,
        locations: usize,
        /// Region size (the chip's patch size).
        p: usize,
        /// Percent of cold locations that show noise, and its largest value (kept at or below
        /// the epsilon of the test, 3).
        noise: (u64, u64),
        /// Percent of cold regions whose middle location shows an isolated spike above epsilon.
        spikes: u64,
    }

    /// Fills a table: at each distance the regions `pattern(block)` are hot, where the block is
    /// `d / p` (so the hot regions change every p distances, as on Titan). Hot locations show a
    /// rate that is consistent within a region (+-25%) and varies between regions.
    fn table(rng: &mut Rng, s: &Shape, pattern: &dyn Fn(&mut Rng, usize) -> Vec<bool>) -> Table {
        let regions = s.locations / s.p;
        let mut counts = vec![vec![0u64; s.locations]; s.distances];
        let mut hot = Vec::new();
        let mut spurious = 0;
        let mut block_pattern = Vec::new();
        for (d, row) in counts.iter_mut().enumerate() {
            if d % s.p == 0 {
                block_pattern = pattern(rng, d / s.p);
                assert_eq!(block_pattern.len(), regions);
            }
            hot.push(block_pattern.clone());
            for (cells, &is_hot) in row.chunks_mut(s.p).zip(&block_pattern) {
                let base = 20 + rng.below(180);
                for (i, c) in cells.iter_mut().enumerate() {
                    *c = if is_hot {
                        base * (75 + rng.below(51)) / 100
                    } else if i == s.p / 2 && rng.percent(s.spikes) {
                        spurious += 1;
                        5 + rng.below(20)
                    } else if s.noise.0 > 0 && rng.percent(s.noise.0) {
                        rng.below(s.noise.1 + 1)
                    } else {
                        0
                    };
                }
            }
        }
        Table {
            counts,
            hot,
            spurious,
        }
    }

    /// The epsilon-patch histogram the ground truth implies: each maximal run of k hot regions
    /// is one patch of k * p locations (a run over every region is a universal row), and each
    /// spike is a patch of one location.
    fn expected(t: &Table, p: usize) -> (BTreeMap<usize, usize>, usize) {
        let mut sizes = BTreeMap::new();
        let mut universal = 0;
        for row in &t.hot {
            let mut runs = Vec::new();
            let mut k = 0;
            for &h in row.iter().chain([false].iter()) {
                if h {
                    k += 1;
                } else if k > 0 {
                    runs.push(k);
                    k = 0;
                }
            }
            if runs == [row.len()] {
                universal += 1;
            } else {
                for k in runs {
                    *sizes.entry(k * p).or_insert(0) += 1;
                }
            }
        }
        if t.spurious > 0 {
            *sizes.entry(1).or_insert(0) += t.spurious;
        }
        (sizes, universal)
    }

    /// Titan (Fig. 3a): nothing for d < 32, then each 32-word region hot with probability 40%,
    /// the choice changing every 32 distances; noise at or below 3 and a few isolated spikes.
    fn titan_shape(distances: usize, locations: usize) -> Shape {
        Shape {
            distances,
            locations,
            p: 32,
            noise: (10, 3),
            spikes: 3,
        }
    }

    /// Each region hot with probability 40% (neighbours may both be hot and merge), or with
    /// `scattered`, 50% unless its left neighbour is hot (no merging). At least one region.
    fn titan_pattern(rng: &mut Rng, block: usize, regions: usize, scattered: bool) -> Vec<bool> {
        if block == 0 {
            return vec![false; regions];
        }
        let mut v = vec![false; regions];
        for r in 0..regions {
            v[r] = if scattered {
                (r == 0 || !v[r - 1]) && rng.percent(50)
            } else {
                rng.percent(40)
            };
        }
        if !v.contains(&true) {
            v[rng.below(regions as u64) as usize] = true;
        }
        v
    }

    fn titan(seed: u64, distances: usize, locations: usize, scattered: bool) -> PerTest<Table> {
        let mut rng = Rng::new(seed);
        let shape = titan_shape(distances, locations);
        let regions = locations / 32;
        PerTest::from_fn(|_| {
            table(&mut rng, &shape, &|r, b| {
                titan_pattern(r, b, regions, scattered)
            })
        })
    }

    /// 64-word patches that never touch: one region, or two apart.
    fn scattered_64(rng: &mut Rng) -> Vec<bool> {
        const PATTERNS: [[bool; 4]; 7] = [
            [true, false, false, false],
            [false, true, false, false],
            [false, false, true, false],
            [false, false, false, true],
            [true, false, true, false],
            [true, false, false, true],
            [false, true, false, true],
        ];
        PATTERNS[rng.below(7) as usize].to_vec()
    }

    /// GTX 980 (Fig. 3c), D = L = 256: MP shows a little noise (0 to 3) everywhere and nothing
    /// else; LB is silent for d < 64, hot everywhere for 64 <= d < 128 and shows 64-word
    /// patches from d = 128; SB shows 64-word patches from d = 64.
    fn gtx980(seed: u64) -> PerTest<Table> {
        let mut rng = Rng::new(seed);
        let quiet = |noise| Shape {
            distances: 256,
            locations: 256,
            p: 64,
            noise,
            spikes: 0,
        };
        let mp = table(&mut rng, &quiet((100, 3)), &|_, _| vec![false; 4]);
        let lb = table(&mut rng, &quiet((0, 0)), &|r, b| match b {
            0 => vec![false; 4],
            1 => vec![true; 4],
            _ => scattered_64(r),
        });
        let sb = table(&mut rng, &quiet((0, 0)), &|r, b| match b {
            0 => vec![false; 4],
            _ => scattered_64(r),
        });
        PerTest { mp, lb, sb }
    }

    fn counts_of(t: &PerTest<Table>) -> PerTest<Vec<Vec<u64>>> {
        t.map(|_, t| t.counts.clone())
    }

    fn scores(mp: u64, lb: u64, sb: u64) -> PerTest<u64> {
        PerTest { mp, lb, sb }
    }

    fn seq(s: &str) -> Sequence {
        Sequence::parse(s).unwrap()
    }

    // --- patch finding -------------------------------------------------------------------

    #[test]
    fn epsilon_patches_are_maximal_runs_above_epsilon() {
        assert_eq!(
            epsilon_patches(&[0, 5, 5, 0, 4, 4, 4], 3),
            vec![(1, 2), (4, 3)]
        );
        // More than epsilon: a count equal to epsilon is noise.
        assert_eq!(epsilon_patches(&[3, 3, 4, 3], 3), vec![(2, 1)]);
        assert_eq!(epsilon_patches(&[9, 9, 0, 9], 0), vec![(0, 2), (3, 1)]);
        assert_eq!(epsilon_patches(&[0, 0], 0), vec![]);
    }

    #[test]
    fn neighbouring_hot_regions_merge_and_alignment_is_reported() {
        let row = |hot: std::ops::Range<usize>| -> Vec<u64> {
            (0..128)
                .map(|l| if hot.contains(&l) { 50 } else { 0 })
                .collect()
        };
        // Two neighbouring aligned 32-word regions, one aligned region, one unaligned run, and a
        // row hot everywhere.
        let table = vec![row(0..64), row(32..64), row(40..72), row(0..128)];
        let quiet = vec![vec![0; 128]; 4];
        let a = critical_patch_size(
            &PerTest {
                mp: table,
                lb: quiet.clone(),
                sb: quiet,
            },
            3,
        )
        .unwrap();
        let mp = &a.tests.mp;
        assert_eq!(mp.sizes, BTreeMap::from([(32, 2), (64, 1)]));
        assert_eq!(mp.patches, 3);
        assert_eq!(mp.universal_rows, 1);
        assert_eq!(mp.most, vec![32]);
        assert_eq!(mp.size, Some(32));
        assert_eq!(mp.aligned, 1, "32..64 is aligned, 40..72 is not");
        assert_eq!(a.critical, Some(32));
        assert_eq!(a.abstained, vec![Test::Lb, Test::Sb]);
    }

    #[test]
    fn titan_style_tables_give_critical_patch_size_32() {
        let t = titan(7, 256, 256, false);
        let a = critical_patch_size(&counts_of(&t), 3).unwrap();
        for test in Test::ALL {
            let (sizes, universal) = expected(t.get(test), 32);
            let tp = a.tests.get(test);
            assert_eq!(tp.sizes, sizes, "{test}");
            assert_eq!(tp.universal_rows, universal, "{test}");
            assert_eq!(tp.size, Some(32), "{test}: {:?}", tp.sizes);
            // Every 32-word patch sits on a region boundary.
            assert_eq!(tp.aligned, tp.sizes[&32], "{test}");
            // Merged neighbours and spikes exist, so the vote is not trivial.
            assert!(tp.sizes.keys().any(|&s| s > 32), "{test}: {:?}", tp.sizes);
            assert!(tp.sizes.contains_key(&1), "{test}: {:?}", tp.sizes);
        }
        // Below d = 32 only isolated spikes.
        assert!(
            t.mp.counts[..32]
                .iter()
                .all(|r| epsilon_patches(r, 3).iter().all(|&(_, n)| n == 1))
        );
        assert_eq!(a.critical, Some(32));
        assert_eq!(a.fallback, None);
        assert!(a.abstained.is_empty());
        assert_eq!(a.chosen(), Some(32));
        assert!(
            a.verdict()
                .starts_with("critical patch size: 32 (MP 32, LB 32, SB 32")
        );
    }

    #[test]
    fn gtx980_style_tables_give_64_once_epsilon_filters_the_noise() {
        let t = gtx980(11);
        let counts = counts_of(&t);
        let a = critical_patch_size(&counts, 3).unwrap();
        assert_eq!(a.tests.mp.patches, 0, "MP's noise never exceeds 3");
        assert_eq!(a.abstained, vec![Test::Mp]);
        assert_eq!(
            a.tests.lb.universal_rows, 64,
            "LB is hot everywhere for 64 <= d < 128"
        );
        for test in [Test::Lb, Test::Sb] {
            let (sizes, universal) = expected(t.get(test), 64);
            assert_eq!(a.tests.get(test).sizes, sizes);
            assert_eq!(a.tests.get(test).universal_rows, universal);
            assert_eq!(a.tests.get(test).size, Some(64));
        }
        assert_eq!(a.critical, Some(64));
        assert!(
            a.verdict().contains("MP showed no epsilon-patch"),
            "{}",
            a.verdict()
        );

        // Without a threshold the noise makes MP's patches one location long: no agreement.
        let a0 = critical_patch_size(&counts, 0).unwrap();
        assert_eq!(a0.tests.mp.size, Some(1), "{:?}", a0.tests.mp.most);
        assert_eq!(a0.tests.lb.size, Some(64));
        assert_eq!(a0.critical, None);
        // LB and SB outvote MP.
        assert_eq!(a0.fallback, Some(64));
        assert_eq!(a0.chosen(), Some(64));
        assert!(a0.verdict().contains("disagree"), "{}", a0.verdict());
    }

    #[test]
    fn disagreeing_tests_give_no_critical_size_and_a_fallback() {
        let t = titan(5, 256, 256, false);
        let mut rng = Rng::new(99);
        let sb = table(
            &mut rng,
            &Shape {
                distances: 256,
                locations: 256,
                p: 64,
                noise: (10, 3),
                spikes: 0,
            },
            &|r, b| {
                if b == 0 {
                    vec![false; 4]
                } else {
                    scattered_64(r)
                }
            },
        );
        let counts = PerTest {
            mp: t.mp.counts.clone(),
            lb: t.lb.counts.clone(),
            sb: sb.counts,
        };
        let a = critical_patch_size(&counts, 3).unwrap();
        assert_eq!(
            [a.tests.mp.size, a.tests.lb.size, a.tests.sb.size],
            [Some(32), Some(32), Some(64)]
        );
        assert_eq!(a.critical, None);
        assert_eq!(a.fallback, Some(32), "two tests name 32");
        let v = a.verdict();
        assert!(
            v.starts_with("no critical patch size: the tests disagree (MP 32, LB 32, SB 64)"),
            "{v}"
        );
    }

    #[test]
    fn ties_within_a_test_and_fallback_tie_breaks() {
        let row = |runs: &[(usize, usize)]| -> Vec<u64> {
            (0..256)
                .map(|l| {
                    if runs.iter().any(|&(s, n)| l >= s && l < s + n) {
                        9
                    } else {
                        0
                    }
                })
                .collect()
        };
        let quiet = vec![vec![0; 256]; 2];
        // MP: one patch of 32 and one of 64 (tied); LB and SB: 64.
        let mp = vec![row(&[(0, 32), (128, 64)]), row(&[])];
        let lb = vec![row(&[(64, 64)]), row(&[])];
        let a = critical_patch_size(
            &PerTest {
                mp: mp.clone(),
                lb: lb.clone(),
                sb: lb.clone(),
            },
            3,
        )
        .unwrap();
        assert_eq!(a.tests.mp.most, vec![32, 64]);
        assert_eq!(a.tests.mp.size, None);
        assert_eq!(a.critical, None, "a tied test names no single size");
        assert_eq!(a.fallback, Some(64), "64: three votes, 32: one");
        assert!(a.verdict().contains("MP tied (32, 64)"), "{}", a.verdict());

        // MP: two 32s; LB: two 64s; SB silent: one vote each, two patches each -> the smaller.
        let a = critical_patch_size(
            &PerTest {
                mp: vec![row(&[(0, 32), (64, 32)]), row(&[])],
                lb: vec![row(&[(0, 64)]), row(&[(128, 64)])],
                sb: quiet.clone(),
            },
            3,
        )
        .unwrap();
        assert_eq!(a.critical, None);
        assert_eq!(a.fallback, Some(32));
        // The same, but LB has three 64s: more patches win the tie of votes.
        let a = critical_patch_size(
            &PerTest {
                mp: vec![row(&[(0, 32), (64, 32)]), row(&[])],
                lb: vec![row(&[(0, 64), (128, 64)]), row(&[(128, 64)])],
                sb: quiet.clone(),
            },
            3,
        )
        .unwrap();
        assert_eq!(a.fallback, Some(64));

        // No patch anywhere: no size at all.
        let a = critical_patch_size(
            &PerTest {
                mp: quiet.clone(),
                lb: quiet.clone(),
                sb: quiet,
            },
            3,
        )
        .unwrap();
        assert_eq!((a.critical, a.fallback, a.chosen()), (None, None, None));
        assert_eq!(a.abstained.len(), 3);
        assert!(a.verdict().contains("no epsilon-patch in any test"));
    }

    #[test]
    fn malformed_patch_tables_are_errors() {
        let ok = vec![vec![0u64; 4]; 2];
        let ragged = vec![vec![0u64; 4], vec![0u64; 3]];
        let e = critical_patch_size(
            &PerTest {
                mp: ok.clone(),
                lb: ragged,
                sb: ok.clone(),
            },
            3,
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("LB[1] has 3 entries, expected 4"),
            "{e}"
        );
        assert!(
            critical_patch_size(
                &PerTest {
                    mp: vec![],
                    lb: vec![],
                    sb: vec![]
                },
                3
            )
            .is_err()
        );
    }

    // --- sequences -----------------------------------------------------------------------

    #[test]
    fn there_are_62_sequences_of_length_1_to_5() {
        let all = all_sequences(5);
        assert_eq!(all.len(), 62);
        for n in 1..=10 {
            assert_eq!(all_sequences(n).len(), (1 << (n + 1)) - 2);
        }
        let texts: Vec<String> = all.iter().take(7).map(Sequence::text).collect();
        assert_eq!(
            texts,
            ["ld", "st", "ld ld", "ld st", "st ld", "st st", "ld ld ld"]
        );
        assert!(all.windows(2).all(|w| w[0] < w[1]), "sorted and distinct");
        assert_eq!(all.last().unwrap().text(), "st st st st st");
        for len in 1..=5 {
            assert_eq!(all.iter().filter(|s| s.len() == len).count(), 1 << len);
        }
        // Table 2's sequences are among them.
        for s in ["ld4 st", "ld3 st ld", "ld st2 ld", "st2 ld2", "ld st"] {
            assert!(all.contains(&seq(s)), "{s}");
        }
    }

    #[test]
    fn sequence_text_and_compact_forms() {
        let s = seq("ld st st ld");
        assert_eq!(s.compact(), "ld st2 ld");
        assert_eq!(s.to_string(), "ld st2 ld");
        assert_eq!(seq("ld st2 ld"), s);
        assert_eq!(seq("  ld4   st ").text(), "ld ld ld ld st");
        assert_eq!(seq("st2 ld2").text(), "st st ld ld");
        assert_eq!(seq("ld1 ld1").compact(), "ld2");
        for s in all_sequences(5) {
            assert_eq!(seq(&s.text()), s);
            assert_eq!(seq(&s.compact()), s);
        }
        for bad in [
            "",
            "  ",
            "lx",
            "ld st x",
            "ld0",
            "ld-1",
            "ldx",
            "st33",
            "ld16 st16 ld",
        ] {
            assert!(Sequence::parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(seq("ld16 st16").len(), 32);
        assert_eq!(
            serde_json::to_string(&seq("ld3 st")).unwrap(),
            "\"ld ld ld st\""
        );
        let back: Sequence = serde_json::from_str("\"st2 ld\"").unwrap();
        assert_eq!(back, seq("st st ld"));
        assert!(serde_json::from_str::<Sequence>("\"ld lt\"").is_err());
    }

    // --- Pareto choice -------------------------------------------------------------------

    #[test]
    fn dominated_candidates_drop_out() {
        let c = choose(&[
            (1, scores(5, 5, 5)),
            (2, scores(5, 5, 4)),
            (3, scores(1, 1, 1)),
        ])
        .unwrap();
        assert_eq!(c.pareto.len(), 1);
        assert_eq!((c.chosen, c.decided_by), (1, Decision::Unique));
        // Equal scores do not dominate each other: both stay, the first in order wins.
        let c = choose(&[(4, scores(5, 5, 5)), (2, scores(5, 5, 5))]).unwrap();
        assert_eq!(c.pareto.iter().map(|x| x.key).collect::<Vec<_>>(), [2, 4]);
        assert_eq!((c.chosen, c.decided_by), (2, Decision::FirstInOrder));
        assert!(choose::<usize>(&[]).is_err());
        assert!(choose(&[(1, scores(1, 1, 1)), (1, scores(2, 2, 2))]).is_err());
    }

    #[test]
    fn a_tie_is_broken_by_the_two_of_three_rule() {
        let a = seq("ld st");
        let b = seq("st ld");
        let c = best_sequence(&[
            (a.clone(), scores(10, 8, 5)),
            (b.clone(), scores(7, 9, 6)),
            (seq("ld"), scores(6, 7, 4)),
        ])
        .unwrap();
        assert_eq!(
            c.pareto
                .iter()
                .map(|x| (&x.key, x.wins))
                .collect::<Vec<_>>(),
            [(&a, 0), (&b, 1)]
        );
        assert_eq!(c.chosen, b, "st ld is more effective for LB and SB");
        assert_eq!(c.decided_by, Decision::TwoOfThree);
    }

    /// Titan's Tab. 3: each test has its own champion, the chosen ld st2 ld is best for none
    /// but beats each champion on the two tests it is not champion of. 58 other sequences
    /// score below 50k everywhere.
    fn titan_sequence_scores(seed: u64) -> Vec<(Sequence, PerTest<u64>)> {
        let planted = [
            ("ld3 st ld", scores(153_000, 40_000, 50_000)),
            ("st2 ld3", scores(60_000, 98_000, 55_000)),
            ("st2 ld", scores(70_000, 45_000, 138_000)),
            ("ld st2 ld", scores(104_000, 64_000, 93_000)),
        ];
        let mut rng = Rng::new(seed);
        all_sequences(5)
            .into_iter()
            .map(|s| {
                let p = planted.iter().find(|(t, _)| seq(t) == s);
                let sc = match p {
                    Some((_, sc)) => sc.clone(),
                    // Stores-only sequences are the weakest, as the paper observes.
                    None if s.accesses().iter().all(|&a| a == Access::St) => {
                        PerTest::from_fn(|_| 80 + rng.below(600))
                    }
                    None => PerTest::from_fn(|_| 1_000 + rng.below(49_000)),
                };
                (s, sc)
            })
            .collect()
    }

    #[test]
    fn titan_style_sequence_choice_is_the_balanced_one() {
        let c = best_sequence(&titan_sequence_scores(3)).unwrap();
        let keys: Vec<String> = c.pareto.iter().map(|x| x.key.compact()).collect();
        // In sequence order: shorter first, then ld before st.
        assert_eq!(keys, ["st2 ld", "ld st2 ld", "ld3 st ld", "st2 ld3"]);
        assert_eq!(c.chosen, seq("ld st2 ld"));
        assert_eq!(c.decided_by, Decision::TwoOfThree);
        for t in Test::ALL {
            let r = c.ranking(t);
            assert_eq!(r.len(), 62);
            assert_ne!(r[0].1, c.chosen, "best for no single test");
            assert!(r.windows(2).all(|w| w[0].2 >= w[1].2));
            // The bottom is stores only.
            assert!(r[61].1.accesses().iter().all(|&a| a == Access::St));
        }
        assert_eq!(c.ranking(Test::Mp)[0].1, seq("ld3 st ld"));
        assert_eq!(c.ranking(Test::Lb)[0].1, seq("st2 ld3"));
        assert_eq!(c.ranking(Test::Sb)[0].1, seq("st2 ld"));
    }

    #[test]
    fn cycles_fall_back_to_most_wins_then_balance_then_order() {
        // (9,7,1) beats two others for two tests but not (3,9,1): no two-of-three winner.
        let c = choose(&[
            (1, scores(3, 9, 1)),
            (2, scores(7, 2, 3)),
            (3, scores(1, 6, 8)),
            (4, scores(9, 7, 1)),
        ])
        .unwrap();
        assert_eq!(c.pareto.len(), 4);
        assert_eq!(
            c.pareto.iter().map(|x| x.wins).collect::<Vec<_>>(),
            [1, 1, 1, 2]
        );
        assert_eq!((c.chosen, c.decided_by), (4, Decision::MostTwoOfThreeWins));

        // A three-cycle, one win each; relative to each test's best, 2 has the most. SB counts
        // are larger: by raw sums 3 would win.
        let c = choose(&[
            (1, scores(9, 2, 100)),
            (2, scores(1, 9, 200)),
            (3, scores(2, 1, 800)),
        ])
        .unwrap();
        assert!(c.pareto.iter().all(|x| x.wins == 1));
        assert_eq!((c.chosen, c.decided_by), (2, Decision::Balanced));

        // A symmetric cycle: all equal on every rule, the first in order.
        let c = choose(&[
            (3, scores(3, 2, 1)),
            (2, scores(1, 3, 2)),
            (5, scores(2, 1, 3)),
        ])
        .unwrap();
        assert_eq!((c.chosen, c.decided_by), (2, Decision::FirstInOrder));
    }

    // --- spread --------------------------------------------------------------------------

    /// Score per spread, m = 1..64: a peak of 10000 at `peak`, `second` (if any) at 9000, and
    /// a U-shape well below elsewhere (higher at small and at large spreads).
    fn spread_scores(rng: &mut Rng, peak: usize, second: Option<usize>) -> Vec<u64> {
        (1..=64)
            .map(|m| {
                if m == peak {
                    10_000
                } else if Some(m) == second {
                    9_000
                } else {
                    6_000 / (m.abs_diff(2) as u64 + 1) + 40 * m as u64 + rng.below(100)
                }
            })
            .collect()
    }

    #[test]
    fn gtx980_style_spread_is_2() {
        let mut rng = Rng::new(4);
        let s = PerTest::from_fn(|_| spread_scores(&mut rng, 2, None));
        let c = best_spread(&s).unwrap();
        assert_eq!((c.chosen, c.decided_by), (2, Decision::Unique));
        assert_eq!(c.all.len(), 64);
        assert_eq!(c.all[0].0, 1);
    }

    #[test]
    fn k20_style_spread_tie_is_broken_two_of_three() {
        let mut rng = Rng::new(5);
        // 2 is best for MP and LB, 3 for SB (2 second there).
        let s = PerTest {
            mp: spread_scores(&mut rng, 2, None),
            lb: spread_scores(&mut rng, 2, None),
            sb: spread_scores(&mut rng, 3, Some(2)),
        };
        let c = best_spread(&s).unwrap();
        assert_eq!(c.pareto.iter().map(|x| x.key).collect::<Vec<_>>(), [2, 3]);
        assert_eq!((c.chosen, c.decided_by), (2, Decision::TwoOfThree));
        // And the other way round.
        let s = PerTest {
            mp: spread_scores(&mut rng, 3, Some(2)),
            lb: spread_scores(&mut rng, 3, Some(2)),
            sb: spread_scores(&mut rng, 2, None),
        };
        assert_eq!(best_spread(&s).unwrap().chosen, 3);
        let bad = PerTest {
            mp: vec![1, 2],
            lb: vec![1],
            sb: vec![1, 2],
        };
        assert!(best_spread(&bad).is_err());
    }

    // --- raw counts, analysis, profile ---------------------------------------------------

    fn params(distances: usize, locations: usize, max_spread: usize) -> Params {
        Params {
            gpu: "Synthetic \"Titan\"".into(),
            driver: "0.0".into(),
            date: "2026-11-22".into(),
            command: "synthetic (tests)".into(),
            distances,
            locations,
            executions: 1000,
            epsilon: 3,
            max_sequence_length: 5,
            max_spread,
        }
    }

    /// A Titan-style run with all three phases (D, L as given, P = 32, M = 16).
    fn titan_raw(seed: u64, distances: usize, locations: usize) -> RawCounts {
        let t = titan(seed, distances, locations, true);
        let entries = titan_sequence_scores(seed);
        let mut rng = Rng::new(seed + 1);
        let mut spread = PerTest::from_fn(|_| spread_scores(&mut rng, 2, None));
        for v in [&mut spread.mp, &mut spread.lb, &mut spread.sb] {
            v.truncate(16);
        }
        RawCounts {
            format: FORMAT,
            params: params(distances, locations, 16),
            patch: Some(PatchPhase {
                sequence: seq("st ld"),
                seconds: Some(12.5),
                counts: counts_of(&t),
            }),
            sequence: Some(SequencePhase {
                patch_size: 32,
                locations: (0..locations).step_by(32).collect(),
                sequences: entries.iter().map(|e| e.0.clone()).collect(),
                scores: PerTest::from_fn(|t| entries.iter().map(|e| *e.1.get(t)).collect()),
                counts: None,
                seconds: None,
            }),
            spread: Some(SpreadPhase {
                patch_size: 32,
                sequence: seq("ld st2 ld"),
                scores: spread,
                counts: None,
                seconds: None,
            }),
        }
    }

    #[test]
    fn raw_counts_round_trip_with_one_line_per_row() {
        let raw = titan_raw(2, 64, 128);
        raw.validate().unwrap();
        let json = raw.to_json();
        let back: RawCounts = serde_json::from_str(&json).unwrap();
        assert_eq!(back, raw);
        // One line per distance in each patch table.
        let rows = json
            .lines()
            .filter(|l| {
                let l = l.trim().trim_end_matches(',');
                l.starts_with('[') && l.ends_with(']') && l.matches(',').count() == 127
            })
            .count();
        assert_eq!(rows, 3 * 64, "{}", &json[..2000]);
        assert!(json.contains("\"sequences\": [\"ld\",\"st\",\"ld ld\","));
        assert!(json.contains("\"gpu\": \"Synthetic \\\"Titan\\\"\""));
        // Strings with brackets and commas are left alone.
        let odd = inline_flat_arrays(
            "{\n  \"a\": [\n    \"x, [y]\",\n    \"z\"\n  ],\n  \"b\": [\n    [\n      1,\n      2\n    ]\n  ]\n}",
        );
        assert_eq!(
            odd,
            "{\n  \"a\": [\"x, [y]\",\"z\"],\n  \"b\": [\n    [1,2]\n  ]\n}"
        );
    }

    #[test]
    fn validation_names_what_is_wrong() {
        let good = titan_raw(2, 64, 128);
        let check = |f: &dyn Fn(&mut RawCounts), want: &str| {
            let mut raw = good.clone();
            f(&mut raw);
            let e = raw.validate().unwrap_err();
            assert!(e.contains(want), "{e} does not contain {want}");
        };
        check(&|r| r.format = 2, "format 2 is not supported");
        check(
            &|r| {
                r.patch.as_mut().unwrap().counts.lb[3].pop();
            },
            "patch.counts.LB[3] has 127 entries, expected 128",
        );
        check(
            &|r| {
                r.patch.as_mut().unwrap().counts.sb.pop();
            },
            "patch.counts.SB has 63 rows, expected 64",
        );
        check(
            &|r| {
                let s = r.sequence.as_mut().unwrap();
                s.sequences[1] = s.sequences[0].clone();
            },
            "\"ld\" appears twice",
        );
        check(
            &|r| {
                r.sequence.as_mut().unwrap().scores.mp.pop();
            },
            "sequence.scores.MP has 61 scores for 62 sequences",
        );
        check(
            &|r| r.params.max_sequence_length = 4,
            "longer than params.max_sequence_length = 4",
        );
        check(
            &|r| r.sequence.as_mut().unwrap().locations.push(128),
            "sequence.locations: 128",
        );
        check(
            &|r| {
                r.spread.as_mut().unwrap().scores.sb.push(1);
            },
            "spread.scores.SB has 17 scores, expected params.max_spread = 16",
        );
        check(
            &|r| r.params.max_spread = 65,
            "the runtime stresses 1 to 64",
        );
        check(
            &|r| {
                r.patch = None;
                r.sequence = None;
                r.spread = None;
            },
            "no phase",
        );
        check(
            &|r| r.spread.as_mut().unwrap().patch_size = 0,
            "spread.patch_size = 0",
        );

        // Per-(d, l) counts must add up to the scores.
        let mut raw = good.clone();
        let ph = raw.sequence.as_mut().unwrap();
        ph.counts = Some(PerTest::from_fn(|t| {
            ph.scores
                .get(t)
                .iter()
                .map(|&s| {
                    let mut table = vec![vec![0u64; 4]; 64];
                    table[5][2] = s;
                    table
                })
                .collect()
        }));
        raw.validate().unwrap();
        raw.sequence.as_mut().unwrap().counts.as_mut().unwrap().lb[7][0][0] += 1;
        let e = raw.validate().unwrap_err();
        assert!(
            e.contains("sequence.counts.LB[7] (\"ld ld st\") sums to"),
            "{e}"
        );
        let mut raw = good.clone();
        let ph = raw.spread.as_mut().unwrap();
        ph.counts = Some(ph.scores.map(|_, v| {
            v.iter()
                .map(|&s| {
                    let mut row = vec![0; 64];
                    row[0] = s;
                    row
                })
                .collect()
        }));
        raw.validate().unwrap();
        raw.spread.as_mut().unwrap().counts.as_mut().unwrap().mp[1][3] = 1;
        let e = raw.validate().unwrap_err();
        assert!(e.contains("spread.counts.MP[1] (spread 2) sums to"), "{e}");

        // Unknown keys are refused (a typo would otherwise lose a phase).
        let mut v: serde_json::Value = serde_json::from_str(&good.to_json()).unwrap();
        v["spreads"] = serde_json::json!({});
        let e = serde_json::from_value::<RawCounts>(v).unwrap_err();
        assert!(e.to_string().contains("unknown field `spreads`"), "{e}");
    }

    #[test]
    fn analysis_of_a_titan_style_run() {
        let raw = titan_raw(2, 256, 256);
        let a = analyse(&raw, None).unwrap();
        assert_eq!(a.patch.as_ref().unwrap().critical, Some(32));
        assert_eq!(a.sequence.as_ref().unwrap().chosen, seq("ld st2 ld"));
        assert_eq!(a.spread.as_ref().unwrap().chosen, 2);
        assert!(a.warnings.is_empty(), "{:?}", a.warnings);
        let p = &a.profile;
        assert_eq!(
            (p.patch_size, p.sequence.clone(), p.spread),
            (Some(32), Some(seq("ld st st ld")), Some(2))
        );
        assert_eq!(p.name, "synthetic-titan");

        let r = report(&raw, &a);
        assert!(
            r.contains("critical patch size: 32 (MP 32, LB 32, SB 32)"),
            "{r}"
        );
        assert!(
            r.contains(
                "chosen sequence: ld st2 ld (\"ld st st ld\"): more effective than each other"
            ),
            "{r}"
        );
        assert!(
            r.contains("chosen spread: 2: the only Pareto-optimal one"),
            "{r}"
        );
        // Tab. 3: the champions at rank 1, the chosen one marked, the last rank 62.
        assert!(r.contains("  1 ld3 st ld      153k"), "{r}");
        assert!(r.contains("  1 st2 ld3         98k"), "{r}");
        assert!(r.contains(" 62 st"), "{r}");
        assert!(r.contains("ld st2 ld      104k *"), "{r}");
        assert_eq!(r.matches("k *").count(), 3, "once per column:\n{r}");
        assert!(r.contains("    2     10000     10000     10000 *\n"), "{r}");
    }

    #[test]
    fn warnings_for_phases_run_with_other_parameters() {
        let mut raw = titan_raw(2, 64, 128);
        raw.sequence.as_mut().unwrap().patch_size = 64;
        raw.spread.as_mut().unwrap().sequence = seq("ld st");
        let a = analyse(&raw, None).unwrap();
        assert_eq!(a.warnings.len(), 2, "{:?}", a.warnings);
        assert!(a.warnings[0].contains("sequence phase was run with patch size 64"));
        assert!(a.warnings[1].contains("spread phase was run with sequence ld st"));
        assert!(report(&raw, &a).contains("warning: the sequence phase"));
    }

    #[test]
    fn partial_runs_fill_what_they_can() {
        // Sequence finding only: the patch size it was run with, no spread.
        let mut raw = titan_raw(2, 64, 128);
        raw.patch = None;
        raw.spread = None;
        let a = analyse(&raw, None).unwrap();
        assert_eq!(a.profile.patch_size, Some(32));
        assert!(
            a.profile.notes[0].contains(
                "patch finding was not run; the patch size the sequence phase was run with"
            )
        );
        assert_eq!(a.profile.spread, None);
        let toml = a.profile.to_toml();
        assert!(toml.contains("# spread: not measured"));
        assert!(!toml.contains("\nspread ="));
        // Patch finding only, with a high epsilon: no size at all.
        let mut raw = titan_raw(2, 64, 128);
        raw.sequence = None;
        raw.spread = None;
        let a = analyse(&raw, Some(1_000_000)).unwrap();
        assert_eq!(a.profile.patch_size, None);
        assert!(a.profile.to_toml().contains("# patch_size: not measured"));
        // All-zero sequence scores: a warning that the choice means nothing.
        let mut raw = titan_raw(2, 64, 128);
        let s = raw.sequence.as_mut().unwrap();
        s.scores = s.scores.map(|_, v| vec![0; v.len()]);
        let a = analyse(&raw, None).unwrap();
        assert_eq!(a.sequence.unwrap().chosen, seq("ld"));
        assert!(
            a.warnings
                .iter()
                .any(|w| w.contains("no weak behaviour at all in the sequence phase"))
        );
    }

    #[test]
    fn epsilon_override_on_a_980_style_run() {
        let t = gtx980(11);
        let raw = RawCounts {
            format: FORMAT,
            params: params(256, 256, 64),
            patch: Some(PatchPhase {
                sequence: seq("st ld"),
                seconds: None,
                counts: counts_of(&t),
            }),
            sequence: None,
            spread: None,
        };
        let a = analyse(&raw, None).unwrap();
        assert_eq!(a.profile.patch_size, Some(64));
        assert!(a.profile.notes[0].starts_with("epsilon = 3; critical patch size: 64"));
        let a = analyse(&raw, Some(0)).unwrap();
        assert_eq!(a.profile.patch_size, Some(64));
        assert!(
            a.profile.notes[0].starts_with("FALLBACK"),
            "{}",
            a.profile.notes[0]
        );
    }

    /// The keys and values of a profile, read the way runtime-cu's parser reads them: every
    /// line is empty, a comment, or `key = value` with an integer or a string without quotes
    /// inside; a comment is cut at a `#` outside a string.
    fn runtime_parse(text: &str) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for line in text.lines() {
            let mut in_str = false;
            let mut cut = line.len();
            for (i, c) in line.char_indices() {
                if c == '"' {
                    in_str = !in_str;
                }
                if c == '#' && !in_str {
                    cut = i;
                    break;
                }
            }
            let line = line[..cut].trim();
            if line.is_empty() {
                continue;
            }
            let (k, v) = line.split_once('=').expect("key = value");
            let (k, v) = (k.trim(), v.trim());
            assert!(
                ["name", "description", "patch_size", "sequence", "spread"].contains(&k),
                "{k}"
            );
            let quoted = v.len() >= 2 && v.starts_with('"') && v.ends_with('"');
            if quoted {
                assert!(!v[1..v.len() - 1].contains(['"', '\\']), "{v}");
            } else {
                assert!(v.parse::<u64>().is_ok(), "{k} = {v}");
            }
            out.insert(k.to_string(), v.trim_matches('"').to_string());
        }
        out
    }

    #[test]
    fn profile_toml_is_in_the_runtimes_subset_and_valid_toml() {
        let raw = titan_raw(2, 64, 128);
        let a = analyse(&raw, None).unwrap();
        let text = a.profile.to_toml();
        let kv = runtime_parse(&text);
        assert_eq!(kv["patch_size"], "32");
        assert_eq!(kv["sequence"], "ld st st ld");
        assert_eq!(kv["spread"], "2");
        assert_eq!(kv["name"], "synthetic-titan");
        assert!(kv["description"].contains("Synthetic 'Titan'"), "{text}");
        let t: toml::Table = text.parse().unwrap();
        assert_eq!(t["patch_size"].as_integer(), Some(32));
        assert_eq!(t["sequence"].as_str(), Some("ld st st ld"));
        assert_eq!(t["spread"].as_integer(), Some(2));
        assert!(
            text.contains("# critical patch size")
                || text.contains("# epsilon = 3; critical patch size: 32"),
            "{text}"
        );
        // The runtime's default profile reads the same way.
        let default = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("runtime-cu/profiles/hopper-default.toml"),
        )
        .unwrap();
        let d = runtime_parse(&default);
        assert_eq!(seq(&d["sequence"]), seq("ld st2 ld"));
    }

    #[test]
    fn slugs() {
        assert_eq!(slug("NVIDIA H200"), "nvidia-h200");
        assert_eq!(
            slug("  NVIDIA GeForce GTX 980 (rev. 2) "),
            "nvidia-geforce-gtx-980-rev-2"
        );
        assert_eq!(slug("***"), "unknown-gpu");
    }

    #[test]
    fn human_counts() {
        assert_eq!(
            [342, 9_999, 10_000, 131_400, 9_999_000, 12_500_000].map(human),
            ["342", "9999", "10k", "131k", "9999k", "12.5M"]
        );
    }

    /// The CLI test's fixture is this generator's output; `WMFIX_UPDATE_FIXTURES=1` rewrites it.
    #[test]
    fn cli_fixture_is_current() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tune/titan.json");
        let mut raw = titan_raw(2, 64, 128);
        raw.params.gpu = "Synthetic Titan".into();
        raw.params.command = "generated by tune_analysis::tests::cli_fixture_is_current".into();
        let json = raw.to_json();
        if std::env::var_os("WMFIX_UPDATE_FIXTURES").is_some() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &json).unwrap();
        }
        let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            on_disk == json,
            "{} is stale; run with WMFIX_UPDATE_FIXTURES=1",
            path.display()
        );
    }
}

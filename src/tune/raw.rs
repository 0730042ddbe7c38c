//! The raw counts of `wmfix tune` (JSON): parameters and the patch, sequence and spread phases,
//! each optional, validated on load.

use crate::exit_code::{self, fail};
use crate::litmus::profile::{MAX_PATCH_SIZE, MAX_SPREAD};
use crate::litmus::vocabulary::{Access, PerTest, Sequence};
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The version of the raw-counts JSON; a file with another `format` is refused.
pub const FORMAT: u32 = 1;

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
    Sequence::new(vec![Access::St, Access::Ld]).expect("a valid sequence")
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

pub(crate) fn check_table(
    what: &str,
    rows: &[Vec<u64>],
    n_rows: usize,
    n_cols: usize,
) -> Result<(), String> {
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

pub(crate) fn check_patch_size(what: &str, p: usize) -> Result<(), String> {
    if p == 0 || p > MAX_PATCH_SIZE {
        return Err(format!("{what} = {p}: must be in 1..={MAX_PATCH_SIZE}"));
    }
    Ok(())
}

/// Puts every innermost array (one without arrays or objects inside) of pretty-printed JSON on
/// one line. Strings are copied as they are.
pub(crate) fn inline_flat_arrays(pretty: &str) -> String {
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

//! The races of one or more traces as a user reads them: one row per pair of places (the
//! fence sites after both accesses, with their file:line from `fences.json`), how often, an
//! example, and the fences that would order it; the set of fences suggested for all of them,
//! checked by detecting again on the same traces with those fences taken as enabled.

use super::detect::{self, Detection, Model, Options, PairKey, RaceKind, Stats};
use super::explain::{self, Explanation};
use super::trace::{Event, Op, Scope, Trace};
use crate::fences::id::{FenceId, Ids};
use crate::fences::record::FenceList;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// What a row reports (race.json's `class`, to filter by).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Class {
    /// A weak access, or strong ones whose scopes do not cover both threads, unordered.
    DataRace,
    /// Volatile loads and stores a message passed between without the fences that order it.
    RelaxedMessage,
    /// Two strong writes (not both read-modify-writes) that no synchronisation orders, or a
    /// strong access under a lock and another thread's outside it: no data race under PTX, but
    /// which write lands last, or what the read sees, is left to chance (a store that bypasses
    /// a lock, two blocks setting one word).
    UnorderedStrong,
}

impl Class {
    pub fn name(self) -> &'static str {
        match self {
            Class::DataRace => "data race",
            Class::RelaxedMessage => "relaxed message: both strong",
            Class::UnorderedStrong => {
                "unordered conflicting strong accesses: no synchronisation orders these writes"
            }
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub class: Class,
    /// The model under which this is a race (`--model`).
    pub model: Model,
    /// Where the other model would not report this row, why (a missing acquire or release
    /// that an atomic makes under scoped-hrf).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub other_model: Option<String>,
    pub kind: RaceKind,
    /// Both accesses strong (volatile or atomic): no data race under PTX (`class` says which
    /// other kind it is); kept for readers of earlier race.json files.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub strong: bool,
    pub first: Place,
    pub second: Place,
    /// Racing access pairs over all traces (an access pair counted once per trace).
    pub count: u64,
    /// Traces (runs) in which this pair raced.
    pub runs: usize,
    /// Which runs (0-based, as race.json's `runs` lists them): a kernel's verdict in one run is
    /// what the rows with that run say, whichever of two symmetric pairs a schedule showed.
    pub in_runs: Vec<usize>,
    pub example: Example,
    pub explanation: Explanation,
    pub suggested: Vec<FenceId>,
    /// Where an access of the pair is strong only at block scope (`atomicCAS_block`, a
    /// `.cta` access) while the other is in another block: the scope to widen, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub narrow_scope: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Place {
    pub site: Option<FenceId>,
    /// `file:line` from fences.json; "not instrumented" for an atomic of library code.
    pub location: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct Example {
    pub first: String,
    pub second: String,
    pub address: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The memory model races were found under (each row says it too).
    pub model: Model,
    pub rows: Vec<Row>,
    /// Traces (runs) checked.
    pub traces: usize,
    /// The union of every row's suggested fences.
    pub suggested: Vec<FenceId>,
    /// Races left when the suggested fences are taken as enabled on the same traces.
    pub left_with_suggested: u64,
    pub stats: Stats,
    /// Events the GPU could not record, over all traces: not checked.
    pub dropped: u64,
    /// Recorded events of launches a full buffer cut short, left out: not checked.
    #[serde(skip_serializing_if = "is_zero")]
    pub cut: u64,
    /// Runs whose records are not there at all, each with why: nothing of them was checked.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lost: Vec<String>,
    /// Launches after a run's trace was written (a `cudaDeviceReset`, then more kernels).
    #[serde(skip_serializing_if = "is_zero")]
    pub unrecorded_launches: u64,
    /// Every event of every launch of every run checked (and every read against every later
    /// write): only then is "no race" a verdict.
    pub complete: bool,
    /// The share of the runs' events that was checked, where the runs' traces say how many
    /// there were.
    pub checked_share: Option<f64>,
    /// Events checked (for `checked_share` when reports are added up).
    #[serde(skip)]
    pub checked: u64,
}

impl Report {
    pub fn races(&self) -> u64 {
        self.rows.iter().map(|r| r.count).sum()
    }

    /// The share of the events checked, where the traces say how many there were (none lost,
    /// no launch unrecorded).
    fn share_checked(&self) -> Option<f64> {
        let known = self.lost.is_empty() && self.unrecorded_launches == 0;
        let all = self.checked + self.cut + self.dropped;
        known.then(|| self.checked as f64 / all.max(1) as f64)
    }
}

fn place(site: Option<FenceId>, fences: Option<&FenceList>) -> Place {
    let location = match (site, fences) {
        (Some(s), Some(f)) => f
            .fences
            .get(s.0)
            .map(|r| r.location())
            .unwrap_or_else(|| format!("fence {s}")),
        (Some(s), None) => format!("fence {s}"),
        (None, _) => "not instrumented".to_string(),
    };
    Place { site, location }
}

/// Detects over every trace (each launch of each run: `launches::split`) with `opts`, on all
/// cores, then explains and checks the suggestion.
pub fn report(traces: &[Trace], opts: &Options, fences: Option<&FenceList>) -> Report {
    let mut rows: BTreeMap<(Class, PairKey), (Row, BTreeSet<usize>)> = BTreeMap::new();
    let mut stats = Stats::default();
    let mut racing = Vec::new();
    let each = crate::rewrite::parallel::map(traces.iter().collect(), |t| piece(t, opts, fences));
    for (trace, (piece_rows, d_stats, addresses)) in traces.iter().zip(each) {
        add_stats(&mut stats, &d_stats);
        if !addresses.is_empty() {
            racing.push((trace, addresses));
        }
        // Pieces merge in order: a row's example and first explanation are its first piece's.
        for (key, row) in piece_rows {
            match rows.get_mut(&key) {
                None => {
                    rows.insert(key, (row, BTreeSet::from([trace.run])));
                }
                Some((into, runs)) => {
                    into.count += row.count;
                    runs.insert(trace.run);
                    add_suggested(into, row.suggested);
                }
            }
        }
    }
    let rows: Vec<Row> = rows
        .into_values()
        .map(|(mut row, runs)| {
            row.runs = runs.len();
            row.in_runs = runs.into_iter().collect();
            row
        })
        .collect();
    let suggested: Ids = rows
        .iter()
        .flat_map(|r| r.suggested.iter().copied())
        .collect();
    let left_with_suggested = if suggested.is_empty() {
        rows.iter().map(|r| r.count).sum()
    } else {
        let mut with = opts.clone();
        with.fences.extend(suggested.iter().copied());
        // A trace without a race has none with more fences: only the others are checked,
        // slimmed.
        crate::rewrite::parallel::map(racing, |(t, addresses)| {
            let t = &super::slim::slim(t, &addresses);
            let d = detect::detect(t, &with);
            reported(t, &d).iter().map(|(_, p, _)| p.count).sum::<u64>()
        })
        .into_iter()
        .sum()
    };
    let dropped: u64 = traces.iter().map(|t| t.dropped).sum();
    let cut: u64 = traces.iter().map(|t| t.cut).sum();
    let lost: Vec<String> = traces.iter().filter_map(|t| t.lost.clone()).collect();
    let unrecorded_launches = traces.iter().map(|t| t.unrecorded_launches).sum();
    let checked = traces.iter().map(|t| t.events.len() as u64).sum::<u64>();
    let mut report = Report {
        model: opts.model,
        traces: super::launches::runs(traces),
        suggested: suggested.into_iter().collect(),
        left_with_suggested,
        complete: traces.iter().all(Trace::complete) && stats.reads_not_checked == 0,
        checked_share: None,
        checked,
        stats,
        dropped,
        cut,
        lost,
        unrecorded_launches,
        rows,
    };
    report.checked_share = report.share_checked();
    report
}

/// The report of runs checked one at a time, each on its own traces, where only the last may
/// have races (detection stops at the first run that shows one): the last run's report with
/// the other runs' figures added (runs, events, what was not checked).
pub fn with_clean_runs(mut each: Vec<Report>) -> Report {
    let mut out = each.pop().expect("a detection run");
    for r in each {
        debug_assert!(r.rows.is_empty(), "only the last run may race");
        out.traces += r.traces;
        add_stats(&mut out.stats, &r.stats);
        out.dropped += r.dropped;
        out.cut += r.cut;
        out.lost.extend(r.lost);
        out.unrecorded_launches += r.unrecorded_launches;
        out.complete &= r.complete;
        out.checked += r.checked;
    }
    out.checked_share = out.share_checked();
    out
}

/// One trace's rows (each with its count and the suggestions of all its examples), its
/// detection's figures and its racing addresses.
type Piece = (Vec<((Class, PairKey), Row)>, Stats, foldhash::HashSet<u64>);

fn piece(trace: &Trace, opts: &Options, fences: Option<&FenceList>) -> Piece {
    let d = detect::detect(trace, opts);
    let mut rows = Vec::new();
    for (key, pair, class) in reported(trace, &d) {
        let strong = class != Class::DataRace;
        // A strong pair's row shows an example a message explains.
        let explained = |&(a, b): &(u32, u32)| (a, b, explain::explain(trace, &d, a, b));
        let mut all = pair.examples.iter().map(explained);
        let first = all.next().expect("a pair has an example");
        let (a, b, explanation) = if strong && first.2.suggested().is_empty() {
            all.find(|e| !e.2.suggested().is_empty()).unwrap_or(first)
        } else {
            first
        };
        let mut row = new_row(trace, key, a, b, explanation, fences, class);
        row.model = opts.model;
        row.count = pair.count;
        add_explanations(trace, &d, pair, &mut row);
        rows.push(((class, key), row));
    }
    if opts.model == Model::Ptx && !rows.is_empty() {
        note_other_model(trace, &d, opts, &mut rows);
    }
    (rows, d.stats.clone(), d.addresses.clone())
}

/// Under ptx, the rows scoped-hrf would not report (its races are a subset: an atomic there
/// also acquires and releases), said with the fence ptx misses. Checked on the trace slimmed
/// to the racing addresses.
fn note_other_model(
    trace: &Trace,
    d: &Detection,
    opts: &Options,
    rows: &mut [((Class, PairKey), Row)],
) {
    let hrf = Options {
        model: Model::ScopedHrf,
        ..opts.clone()
    };
    let slim = super::slim::slim(trace, &d.addresses);
    let other = detect::detect(&slim, &hrf);
    let kept: BTreeSet<(Class, PairKey)> = reported(&slim, &other)
        .into_iter()
        .map(|(k, _, c)| (c, k))
        .collect();
    for (key, row) in rows.iter_mut() {
        if !kept.contains(key) {
            row.other_model = Some(other_model_words(&row.explanation));
        }
    }
}

fn other_model_words(e: &Explanation) -> String {
    let missing = match e {
        Explanation::Message {
            writer: None,
            reader: Some(_),
            relay: None,
            ..
        } => "a missing acquire: ",
        Explanation::Message {
            writer: Some(_),
            reader: None,
            relay: None,
            ..
        } => "a missing release: ",
        _ => "",
    };
    format!(
        "{missing}a race under ptx; scoped-hrf would not call it one (an atomic read acquires and an atomic write releases there)"
    )
}

/// The pairs a report shows: every data race; of the strong pairs (`Detection::strong_pairs`),
/// two writes not both read-modify-writes (`UnorderedStrong`), and volatile loads and stores
/// whose example a message explains with a side that needs a fence (`RelaxedMessage`); atomics
/// with each other are the synchronisation itself, not its data.
pub fn reported<'d>(trace: &Trace, d: &'d Detection) -> Vec<(PairKey, &'d detect::Pair, Class)> {
    let weak = d.pairs.iter().map(|(k, p)| (*k, p, Class::DataRace));
    let strong = d
        .strong_pairs
        .iter()
        .filter_map(|(k, p)| strong_class(trace, d, k, p).map(|c| (*k, p, c)));
    weak.chain(strong).collect()
}

fn strong_class(trace: &Trace, d: &Detection, k: &PairKey, p: &detect::Pair) -> Option<Class> {
    let atomic = |i: u32| matches!(trace.events[i as usize].op, Op::Rmw { .. });
    let writes = k.kind == RaceKind::WriteWrite;
    // Two atomics are the synchronisation; a lock taken from its releasing store is ordered.
    let ordered =
        |a: u32, b: u32| (atomic(a) && atomic(b)) || explain::took_in_order(trace, d, a, b);
    let unordered = |&(a, b): &(u32, u32)| !ordered(a, b);
    if writes && p.examples.iter().any(unordered) {
        return Some(Class::UnorderedStrong);
    }
    // A read outside the lock its writer holds (or under one the writer does not take).
    let breaks =
        |&(a, b): &(u32, u32)| !ordered(a, b) && super::locks::breaks_a_lock(trace, d, a, b);
    if p.examples.iter().any(breaks) {
        return Some(Class::UnorderedStrong);
    }
    let explained = p.examples.iter().any(|&(a, b)| {
        !atomic(a) && !atomic(b) && !explain::explain(trace, d, a, b).suggested().is_empty()
    });
    explained.then_some(Class::RelaxedMessage)
}

/// A pair's further examples may need other fences (another path to the same access): their
/// suggestions join the row's.
fn add_explanations(trace: &Trace, d: &Detection, pair: &detect::Pair, row: &mut Row) {
    for &(a, b) in &pair.examples {
        add_suggested(row, explain::explain(trace, d, a, b).suggested());
    }
}

/// `fences` joined to the row's suggestion, each once, in order.
fn add_suggested(row: &mut Row, fences: impl IntoIterator<Item = FenceId>) {
    for s in fences {
        if !row.suggested.contains(&s) {
            row.suggested.push(s);
        }
    }
}

fn new_row(
    trace: &Trace,
    key: PairKey,
    a: u32,
    b: u32,
    explanation: Explanation,
    fences: Option<&FenceList>,
    class: Class,
) -> Row {
    let (ea, eb) = (&trace.events[a as usize], &trace.events[b as usize]);
    let (first, second) = (place(key.first, fences), place(key.second, fences));
    let narrow_scope = narrow_scope(ea, eb, &first, &second);
    Row {
        class,
        model: Model::Ptx,
        other_model: None,
        kind: key.kind,
        strong: class != Class::DataRace,
        first,
        second,
        count: 0,
        runs: 0,
        in_runs: Vec::new(),
        example: Example {
            first: ea.thread.to_string(),
            second: eb.thread.to_string(),
            address: trace.addr_name(ea.addr),
        },
        suggested: explanation.suggested(),
        explanation,
        narrow_scope,
    }
}

/// The accesses of a pair strong only at block scope while the threads are in different
/// blocks: no scope covers both, so they race as plain ones would; widening the scope orders
/// (or makes atomic) what the block scope left out.
fn narrow_scope(ea: &Event, eb: &Event, first: &Place, second: &Place) -> Option<String> {
    if ea.thread.block == eb.thread.block {
        return None;
    }
    let at = |e: &Event, p: &Place| {
        (e.op.strong() == Some(Scope::Block)).then(|| format!("{} ({})", p.location, what(&e.op)))
    };
    let narrow: Vec<String> = [at(ea, first), at(eb, second)]
        .into_iter()
        .flatten()
        .collect();
    (!narrow.is_empty()).then(|| {
        format!(
            "of block scope across blocks: {}; widen to device scope (drop the `_block` suffix)",
            narrow.join(" and ")
        )
    })
}

fn what(op: &Op) -> &'static str {
    match op {
        Op::Rmw { .. } => "an atomic",
        Op::Read { .. } => "a strong read",
        _ => "a strong write",
    }
}

fn add_stats(into: &mut Stats, s: &Stats) {
    into.events += s.events;
    into.accesses += s.accesses;
    into.threads += s.threads;
    into.addresses += s.addresses;
    into.reads_not_checked += s.reads_not_checked;
    into.reads_from_unknown += s.reads_from_unknown;
    into.waits_broken += s.waits_broken;
    into.barrier_acquires += s.barrier_acquires;
    into.clock_entries = into.clock_entries.max(s.clock_entries);
}

/// The terminal table.
pub fn table(r: &Report) -> String {
    let mut out = String::new();
    if r.rows.is_empty() && r.complete {
        out.push_str(&format!(
            "no race in {} run(s) under {} (every event checked: {} accesses)\n",
            r.traces,
            r.model.name(),
            r.stats.accesses
        ));
    }
    for row in &r.rows {
        out.push_str(&format!(
            "race ({}{}): {} -> {}: {} pair(s) in {} of {} run(s); e.g. {} then {} at {}; under {}\n",
            row.kind.name(),
            match row.class {
                Class::DataRace => String::new(),
                c => format!(", {}", c.name()),
            },
            row.first.location,
            row.second.location,
            row.count,
            row.runs,
            r.traces,
            row.example.first,
            row.example.second,
            row.example.address,
            row.model.name()
        ));
        out.push_str(&format!("  {}\n", describe(&row.explanation)));
        if let Some(narrow) = &row.narrow_scope {
            out.push_str(&format!("  {narrow}\n"));
        }
        if let Some(other) = &row.other_model {
            out.push_str(&format!("  {other}\n"));
        }
    }
    if !r.suggested.is_empty() {
        let ids: Vec<String> = r.suggested.iter().map(|f| f.to_string()).collect();
        out.push_str(&format!(
            "fences that order them: {} ({} race(s) left with them enabled, on these runs)\n",
            ids.join(","),
            r.left_with_suggested
        ));
    }
    out.push_str(&unchecked(r));
    out
}

/// What was not checked, and what that makes of the verdict; nothing when all was.
fn unchecked(r: &Report) -> String {
    if r.complete {
        return String::new();
    }
    let mut out = String::new();
    if r.dropped > 0 || r.cut > 0 {
        out.push_str(&format!(
            "not checked: {} event(s) the trace buffer could not hold and {} recorded event(s) of the launch it cut short (give the trace more device memory: --trace-memory, --events)\n",
            r.dropped, r.cut
        ));
    }
    if r.stats.reads_not_checked > 0 {
        out.push_str(&format!(
            "not checked: {} read(s) beyond the per-address list\n",
            r.stats.reads_not_checked
        ));
    }
    if r.unrecorded_launches > 0 {
        out.push_str(&format!(
            "not checked: {} launch(es) after the trace was written (the program reset its device, then launched again)\n",
            r.unrecorded_launches
        ));
    }
    for why in &r.lost {
        out.push_str(&format!("not checked: {why}\n"));
    }
    let share = r.checked_share.map_or("an unknown share".to_string(), |s| {
        format!("{:.2}%", 100.0 * s)
    });
    let verdict = if r.rows.is_empty() {
        "INCONCLUSIVE: no race in what was checked, but not everything was"
    } else {
        "the races above stand; others may be in what was not checked"
    };
    out.push_str(&format!("{verdict} ({share} of the events checked)\n"));
    out
}

fn describe(e: &Explanation) -> String {
    let ids = |s: &explain::Side| {
        let v: Vec<String> = s.sites.iter().map(|f| f.to_string()).collect();
        format!("fence {}", v.join(" or "))
    };
    match e {
        Explanation::NoMessage => {
            "no fence orders them: nothing the later thread read was written after the earlier access".to_string()
        }
        Explanation::Message {
            writer,
            reader,
            relay,
            ..
        } => {
            let mut parts = Vec::new();
            for (name, side) in [("writer", writer), ("relay", relay), ("reader", reader)] {
                let Some(s) = side else { continue };
                parts.push(match (s.sites.is_empty(), s.block_scope_fence) {
                    (false, true) => format!(
                        "{name} side needs {} (its fence is of block scope, device scope needed)",
                        ids(s)
                    ),
                    (false, false) => format!("{name} side needs {}", ids(s)),
                    (true, true) => format!(
                        "{name} side needs its fence of block scope widened to device scope (no instrumented site between)"
                    ),
                    (true, false) => {
                        format!("{name} side needs a fence before its write, where no site is instrumented")
                    }
                });
            }
            if parts.is_empty() {
                "ordered on both sides in this explanation".to_string()
            } else {
                parts.join("; ")
            }
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

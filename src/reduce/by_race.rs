//! `reduce --oracle race`: the fences that order every race a fence can order, decided on
//! recorded detection traces (`race`), so that no check needs runs; then handed to the stress
//! reduction as its first set, whose stability check confirms them (and whose add-back finds a
//! fence the traces did not show).
//!
//! A set passes when the races left with it enabled are only those left with every fence: a
//! race no fence orders (stores no message orders, say) is not a reason to keep any.

use crate::app::config::App;
use crate::fences::id::{FenceId, Ids};
use crate::fences::set::FenceSet;
use crate::out_dir::OutDir;
use crate::race::detect::{self, Options, PairKey, Prepared};
use crate::race::explain;
use crate::race::report;
use crate::race::runs;
use crate::race::slim;
use crate::race::store_load;
use crate::race::trace::Trace;
use crate::run::environment::TestEnv;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// How the detection runs go (`--race-runs`, `--race-events`, `--race-trace-memory`).
#[derive(Clone, Copy, Debug)]
pub struct RaceRuns {
    pub runs: usize,
    pub trace: runs::TraceSize,
    pub seed: u64,
    /// PTX strictly (`race --strict`): a `__syncthreads` after a strong read does not complete
    /// its acquire, so the reader side needs its own fence.
    pub strict: bool,
    /// The memory model the traces are checked under (`--model`).
    pub model: detect::Model,
}

impl RaceRuns {
    /// What the detections take from the options: `fence_scope` that of wmfix's fences.
    pub fn detect_options(&self, fence_scope: crate::race::scope::Scope) -> Options {
        Options {
            fence_scope,
            barrier_acquires: !self.strict,
            model: self.model,
            ..Options::default()
        }
    }

    /// The model as the journal's header names it: only when not the default, so that
    /// journals written before there was a choice still resume.
    pub fn model_in_journal(self) -> Option<&'static str> {
        (self.model != detect::Model::Ptx).then(|| self.model.name())
    }
}

/// The start set of `out`'s reduction: read back on a resume (the traces of another run could
/// decide otherwise, and the journal's requests follow from it), else found by detection runs
/// of the race build (natively, wmfix's fences off) and kept.
pub fn start(
    app: &App,
    out: &OutDir,
    original: &Path,
    how: RaceRuns,
    opts: &Options,
    all: &Ids,
    resume: bool,
) -> Result<RaceStart> {
    let kept = out.reduce().race_start();
    if resume && let Ok(text) = std::fs::read_to_string(&kept) {
        return serde_json::from_str(&text).with_context(|| format!("reading {}", kept.display()));
    }
    let app = &detection_app(app)?;
    runs::build(app, out)?;
    let run_opts = runs::Options {
        runs: how.runs,
        env: TestEnv {
            stress: crate::run::environment::Stress::No,
            randomise: false,
        },
        remap_later: false,
        seed: how.seed,
        fences: FenceSet::Ids(Ids::new()),
        trace: how.trace,
    };
    let done = runs::run(app, out, &run_opts, original, |_| runs::After::KEEP_ALL)?;
    let mut found = minimise(&done.traces, opts, all);
    found.dropped = done.traces.iter().map(|t| t.dropped + t.cut).sum();
    found.run_seconds = done.info.iter().map(|r| r.seconds).sum();
    std::fs::write(&kept, serde_json::to_string_pretty(&found)? + "\n")?;
    Ok(found)
}

/// One step a run: a race shows in one execution (the stress checks keep the config's).
fn detection_app(app: &App) -> Result<App> {
    app.clone().with_steps(Some(1))
}

/// Builds the detection variant `start` runs, unless a resume reads the start set back. Its own
/// call so that it can build (on the CPU) while the checks before the runs use the GPU; `start`
/// then finds it up to date.
pub fn build(app: &App, out: &OutDir, resume: bool) -> Result<()> {
    if resume && out.reduce().race_start().is_file() {
        return Ok(());
    }
    runs::build(&detection_app(app)?, out)
}

/// What the traces decided, kept in `reduce.json` and, for a resume, in `reduce/race.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RaceStart {
    /// The set the stress reduction starts from.
    pub fences: Ids,
    /// The fences the report named for the races (the first set tried).
    pub named: Ids,
    /// Fences between a store and a later flag load, which no race shows (`store_load`): in
    /// `fences` whatever the search kept.
    #[serde(default)]
    pub store_load: Ids,
    /// Racing place pairs without wmfix's fences, and of those the ones every fence leaves.
    pub races: usize,
    pub unordered_by_any_fence: usize,
    /// Detection runs (each launch of each is checked as a trace of its own).
    pub traces: usize,
    pub events: usize,
    /// Events of the slimmed traces the candidate sets were checked on (`slim`).
    #[serde(default)]
    pub checked_events: usize,
    /// Events the GPU could not record, and those of a launch a full buffer cut short: not
    /// checked.
    #[serde(default)]
    pub dropped: u64,
    /// The detection runs' seconds, and the detections' (`seconds`).
    #[serde(default)]
    pub run_seconds: f64,
    /// Detections over the traces, each with one candidate set taken as enabled.
    pub detections: usize,
    pub seconds: f64,
    pub note: String,
    /// For each fence of the set but the store-load ones, a race its absence leaves and the
    /// run that showed it: what proves it needed, whatever stress later shows.
    #[serde(default)]
    pub proofs: BTreeMap<FenceId, RaceProof>,
    /// Every event of every detection run was checked (`race::report::Report::complete`).
    #[serde(default = "yes")]
    pub complete: bool,
    /// The memory model the races were found under (earlier files: ptx).
    #[serde(default)]
    pub model: detect::Model,
}

fn yes() -> bool {
    true
}

/// A race between two places (their fence sites) that a fence's absence leaves, seen in `run`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RaceProof {
    pub first: Option<FenceId>,
    pub second: Option<FenceId>,
    /// `write-read`, `write-write` or `read-write`.
    pub kind: String,
    /// Both accesses strong: a message passed through relaxed accesses.
    #[serde(default)]
    pub strong: bool,
    /// The detection run (0 the first).
    pub run: usize,
}

impl RaceStart {
    /// The fences of the set that order an observed race: kept whatever stress shows.
    pub fn proven(&self) -> Ids {
        self.proofs.keys().copied().collect()
    }
}

/// The racing place pairs the report shows, each with its count of racing access pairs. A
/// place pair can race both where a fence would order it and where none would (a work-stealing
/// thief's slot read before a failed claim, and before a successful one): its count tells them
/// apart.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Left(BTreeMap<(report::Class, PairKey), u64>);

impl Left {
    /// Nothing races more than it does with every fence (`floor`).
    fn within(&self, floor: &Left) -> bool {
        self.0
            .iter()
            .all(|(k, n)| floor.0.get(k).is_some_and(|f| n <= f))
    }

    /// The place pairs racing more than with every fence.
    fn orderable(&self, floor: &Left) -> usize {
        self.0
            .iter()
            .filter(|(k, n)| floor.0.get(k).is_none_or(|f| *n > f))
            .count()
    }
}

/// Detections at once, at most: each holds its own clocks and shadow cells (what the traces
/// share is made once, `Prepared`).
const MAX_AT_ONCE: usize = 16;

/// `f` of each item, as many at once as the machine has cores (up to `MAX_AT_ONCE`).
fn par_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let mut out = Vec::with_capacity(items.len());
    for chunk in items.chunks(width()) {
        std::thread::scope(|s| {
            let f = &f;
            let handles: Vec<_> = chunk.iter().map(|x| s.spawn(move || f(x))).collect();
            out.extend(
                handles
                    .into_iter()
                    .map(|h| h.join().expect("a detection panicked")),
            );
        });
    }
    out
}

/// Traces with what their detections share, made once for the search's dozens of detections.
struct Prepped<'a>(Vec<(&'a Trace, Arc<Prepared>)>);

impl<'a> Prepped<'a> {
    fn of(traces: &'a [Trace]) -> Prepped<'a> {
        let preps = par_map(traces, |t| Arc::new(Prepared::of(t)));
        Prepped(traces.iter().zip(preps).collect())
    }

    /// Each trace's slim form where it is much smaller; else the trace itself, already
    /// prepared (cub-scan-nf's slim trace keeps 96% of events: preparing it again costs more
    /// than checking it saves).
    fn slimmed<'b>(&self, slims: &'b [Trace]) -> Prepped<'b>
    where
        'a: 'b,
    {
        let worth = |(t, s): &(&(&Trace, Arc<Prepared>), &Trace)| {
            s.events.len() * SLIM_WORTH.1 < t.0.events.len() * SLIM_WORTH.0
        };
        let pairs: Vec<_> = self.0.iter().zip(slims).collect();
        let slim: Vec<&Trace> = pairs.iter().filter(|p| worth(p)).map(|p| p.1).collect();
        let mut preps = par_map(&slim, |t| Arc::new(Prepared::of(t))).into_iter();
        Prepped(
            pairs
                .iter()
                .map(|p| match worth(p) {
                    true => (p.1, preps.next().expect("one a slim trace")),
                    false => (p.0.0, p.0.1.clone()),
                })
                .collect(),
        )
    }
}

/// A slim trace is checked instead of its whole one below this fraction of its events.
const SLIM_WORTH: (usize, usize) = (4, 5);

/// The racing place pairs the report shows with `fences` taken as enabled.
fn left(traces: &Prepped, opts: &Options, fences: &Ids) -> Left {
    detect_all(traces, opts, fences, false, false).0
}

/// What the traces without wmfix's fences show: the racing pairs, the fences their examples'
/// messages name, each trace slimmed to what a check of more fences needs (`slim`), and the
/// store-load fences (`store_load`).
struct Unfenced {
    left: Left,
    named: Ids,
    slims: Vec<Trace>,
    store_load: Ids,
}

fn unfenced(traces: &Prepped, opts: &Options) -> Unfenced {
    let (left, named, slims, store_load) = detect_all(traces, opts, &Ids::new(), true, true);
    Unfenced {
        left,
        named,
        slims,
        store_load,
    }
}

/// One detection of each trace with `fences` taken as enabled: the racing pairs, with `name`
/// the fences their examples' messages name, with `slims` each trace slimmed and its
/// store-load fences.
fn detect_all(
    traces: &Prepped,
    opts: &Options,
    fences: &Ids,
    name: bool,
    slims: bool,
) -> (Left, Ids, Vec<Trace>, Ids) {
    let mut with = opts.clone();
    with.fences = fences.clone();
    // The traces at once (several detection runs: `--race-runs`).
    let each = par_map(&traces.0, |(t, prep)| {
        let d = detect::detect_prepared(t, prep, &with);
        let (mut left, mut named) = (Left::default(), Ids::new());
        for (k, pair, class) in report::reported(t, &d) {
            *left.0.entry((class, k)).or_default() += pair.count;
            if name {
                for &(a, b) in &pair.examples {
                    named.extend(explain::explain(t, &d, a, b).suggested());
                }
            }
        }
        let more = slims.then(|| (slim::slim(t, &d.addresses), store_load::fences(t, &d)));
        (left, named, more)
    });
    let (mut out, mut named, mut slimmed, mut store) =
        (Left::default(), Ids::new(), Vec::new(), Ids::new());
    for (left, n, more) in each {
        for (k, count) in left.0 {
            *out.0.entry(k).or_default() += count;
        }
        named.extend(n);
        if let Some((slim, sl)) = more {
            slimmed.push(slim);
            store.extend(sl);
        }
    }
    (out, named, slimmed, store)
}

struct Search<'a> {
    traces: &'a Prepped<'a>,
    opts: &'a Options,
    /// What every fence leaves: not orderable by fences.
    floor: Left,
    detections: usize,
    /// Each set's racing pairs, and where asked the fences their messages name: detected
    /// several at once, some ahead of need (`ahead`).
    known: HashMap<Ids, (Left, Option<Ids>)>,
    /// Removals checked ahead at once.
    width: usize,
}

/// Detections at once on this machine.
fn width() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(MAX_AT_ONCE)
}

/// Rounds of naming: with the named fences enabled, the races left name more.
const NAMING_ROUNDS: usize = 4;

impl<'a> Search<'a> {
    /// A search on `traces` whose `floor` is what every fence leaves.
    fn new(traces: &'a Prepped<'a>, opts: &'a Options, floor: Left, width: usize) -> Search<'a> {
        Search {
            traces,
            opts,
            floor,
            detections: 0,
            known: HashMap::new(),
            width,
        }
    }

    /// Detects the sets not yet known (with the named fences where `.1`), all at once.
    fn detect(&mut self, sets: &[(Ids, bool)]) {
        let mut todo: Vec<(Ids, bool)> = Vec::new();
        for (set, name) in sets {
            let known = self
                .known
                .get(set)
                .is_some_and(|(_, named)| named.is_some() || !name);
            if !known && !todo.iter().any(|(s, _)| s == set) {
                todo.push((set.clone(), *name));
            }
        }
        self.detections += todo.len();
        let (traces, opts) = (self.traces, self.opts);
        let found = par_map(&todo, |(set, name)| {
            let (left, named, _, _) = detect_all(traces, opts, set, *name, false);
            (left, name.then_some(named))
        });
        self.known
            .extend(todo.into_iter().map(|(s, _)| s).zip(found));
    }

    /// Whether each set leaves only the floor, detected all at once.
    fn pass_each(&mut self, sets: &[Ids]) -> Vec<bool> {
        let asked: Vec<(Ids, bool)> = sets.iter().map(|s| (s.clone(), false)).collect();
        self.detect(&asked);
        sets.iter()
            .map(|s| self.known[s].0.within(&self.floor))
            .collect()
    }

    fn passes(&mut self, fences: &Ids) -> bool {
        self.pass_each(std::slice::from_ref(fences))[0]
    }

    /// `named` grown by the fences the races left with it enabled name, until it leaves only
    /// the floor (`Some`), names nothing new, or the rounds run out (`None`): a few detections
    /// where reducing from every fence takes one a fence.
    fn named_closure(&mut self, named: Ids, all: &Ids) -> Option<Ids> {
        let mut set = named;
        for _ in 0..NAMING_ROUNDS {
            self.detect(&[(set.clone(), true)]);
            let (left, more) = &self.known[&set];
            if left.within(&self.floor) {
                return Some(set);
            }
            let more = more.clone().unwrap_or_default();
            let before = set.len();
            set.extend(more.into_iter().filter(|f| all.contains(f)));
            if set.len() == before {
                return None;
            }
        }
        None
    }

    /// Drops the fences of `set` whose absence leaves no orderable race: each one's absence
    /// checked at once, then all those that passed alone together; where that fails, one at a
    /// time, as in order, each step checking ahead as many sets as run at once.
    fn reduce(&mut self, set: Ids) -> Ids {
        let alone = self.pass_each(&without_each(&set));
        let removable: Vec<FenceId> = set
            .iter()
            .zip(alone)
            .filter(|(_, passed)| *passed)
            .map(|(f, _)| *f)
            .collect();
        if removable.is_empty() {
            return set;
        }
        let all_out: Ids = set
            .difference(&removable.iter().copied().collect())
            .copied()
            .collect();
        if removable.len() == 1 || self.passes(&all_out) {
            return all_out;
        }
        let mut set = set;
        let mut rest: Vec<FenceId> = removable.into_iter().rev().collect();
        while !rest.is_empty() {
            // The sets one removal after another would try if each passed: the first that
            // fails keeps its fence, and what follows it was checked on a wrong guess.
            let ahead: Vec<Ids> = rest
                .iter()
                .take(self.width)
                .scan(set.clone(), |s, f| {
                    s.remove(f);
                    Some(s.clone())
                })
                .collect();
            let passed = self
                .pass_each(&ahead)
                .into_iter()
                .take_while(|p| *p)
                .count();
            if passed > 0 {
                set = ahead[passed - 1].clone();
            }
            // The passed ones, and the one that failed where one did.
            rest.drain(..(passed + 1).min(ahead.len()));
        }
        set
    }
}

/// `set` less each of its fences in turn.
fn without_each(set: &Ids) -> Vec<Ids> {
    set.iter()
        .map(|f| set.iter().filter(|g| *g != f).copied().collect())
        .collect()
}

/// The least set of `all` (each fence's removal tried) that leaves on `traces` no race that
/// enabling every fence would order; from the fences the races' messages name when they do.
pub fn minimise(traces: &[Trace], opts: &Options, all: &Ids) -> RaceStart {
    let t0 = Instant::now();
    let full = Prepped::of(traces);
    // The detection without fences and the one with every fence, at once: a slim trace leaves
    // the same races as the whole one for every set (tests below).
    let (none, floor) = std::thread::scope(|s| {
        let floor = s.spawn(|| left(&full, opts, all));
        let none = unfenced(&full, opts);
        (none, floor.join().expect("a detection panicked"))
    });
    let named: Ids = none
        .named
        .iter()
        .filter(|f| all.contains(f))
        .copied()
        .collect();
    let store_load: Ids = none.store_load.intersection(all).copied().collect();
    let prepped = full.slimmed(&none.slims);
    drop(full);
    let mut search = Search::new(&prepped, opts, floor, width());
    search.detections = 2;
    let orderable = none.left.orderable(&search.floor);
    if orderable > 0 {
        // The named set and each of its fences' removal at once: where the named set leaves
        // only the floor (most often), its reduction starts with those.
        let mut ahead = vec![(named.clone(), true)];
        ahead.extend(without_each(&named).into_iter().map(|s| (s, false)));
        search.detect(&ahead);
    }
    let (fences, note) = if orderable == 0 {
        let note = if none.left.0.is_empty() {
            "no race in the traces: no fence named"
        } else {
            "no race in the traces that a fence orders: no fence named"
        };
        (Ids::new(), note.to_string())
    } else if let Some(set) = search.named_closure(named.clone(), all) {
        let note = if set.len() > named.len() {
            "the named fences left races, which named more".to_string()
        } else {
            String::new()
        };
        (search.reduce(set), note)
    } else {
        let note = "the named fences left races: reduced from every fence".to_string();
        (search.reduce(all.clone()), note)
    };
    let proofs = proofs(&prepped, opts, &fences);
    RaceStart {
        proofs,
        complete: traces.iter().all(Trace::complete),
        fences: fences.union(&store_load).copied().collect(),
        named,
        store_load,
        races: none.left.0.len(),
        unordered_by_any_fence: search.floor.0.len(),
        traces: crate::race::launches::runs(traces),
        events: traces.iter().map(|t| t.events.len()).sum(),
        checked_events: prepped.0.iter().map(|(t, _)| t.events.len()).sum(),
        dropped: 0,
        run_seconds: 0.0,
        detections: search.detections,
        seconds: t0.elapsed().as_secs_f64(),
        note,
        model: opts.model,
    }
}

/// For each fence of `set`, the first run whose trace, with the rest of `set` taken as
/// enabled, shows a place pair racing more often than with all of `set`.
fn proofs(traces: &Prepped, opts: &Options, set: &Ids) -> BTreeMap<FenceId, RaceProof> {
    let mut asked: Vec<(usize, Option<FenceId>)> = Vec::new();
    for run in 0..traces.0.len() {
        asked.push((run, None));
        asked.extend(set.iter().map(|f| (run, Some(*f))));
    }
    let found = par_map(&asked, |&(run, without)| {
        let one = Prepped(vec![traces.0[run].clone()]);
        let mut fences = set.clone();
        if let Some(f) = without {
            fences.remove(&f);
        }
        left(&one, opts, &fences)
    });
    let lefts: HashMap<(usize, Option<FenceId>), Left> = asked.into_iter().zip(found).collect();
    let mut out = BTreeMap::new();
    for f in set {
        for run in 0..traces.0.len() {
            let (with, without) = (&lefts[&(run, None)], &lefts[&(run, Some(*f))]);
            let more = without
                .0
                .iter()
                .find(|(k, n)| with.0.get(k).is_none_or(|w| *n > w));
            if let Some(((class, key), _)) = more {
                out.insert(
                    *f,
                    RaceProof {
                        first: key.first,
                        second: key.second,
                        kind: key.kind.name().to_string(),
                        strong: *class != report::Class::DataRace,
                        run: traces.0[run].0.run,
                    },
                );
                break;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[usize]) -> Ids {
        v.iter().map(|&i| FenceId(i)).collect()
    }

    fn trace(text: &str) -> Trace {
        Trace::parse_text(text).unwrap()
    }

    // Message passing: the data store's fence (site 1) and the flag read's (site 3) order it;
    // sites 0 and 2 (after the flag store and the data read) order nothing.
    const MP: &str = "\
b0.t0 st data 1 @1
b0.t0 st.volatile flag 1 @0
b1.t0 ld.volatile flag 1 @3
b1.t0 ld data 1 @2
";

    #[test]
    fn strictly_a_last_blocks_barrier_completes_no_acquire_so_the_reader_needs_its_fence() {
        // threadFenceReduction: block 0 publishes its partial sum and takes a ticket; the last
        // block's thread 0 takes the next, the block meets at a barrier, thread 1 reads the sum.
        let t = trace(
            "b0.t0 st p 5 @1\nb0.t0 atom count 0 1 @2\nb1.t0 atom count 1 2 @3\nb1.t0 bar\nb1.t1 bar\nb1.t1 ld p 5 @4\n",
        );
        let all = ids(&[1, 2, 3, 4]);
        let relaxed = minimise(std::slice::from_ref(&t), &Options::default(), &all);
        assert_eq!(relaxed.fences, ids(&[1]), "{relaxed:?}");
        let strict = Options {
            barrier_acquires: false,
            ..Options::default()
        };
        let strict = minimise(&[t], &strict, &all);
        assert_eq!(strict.fences, ids(&[1, 3]), "{strict:?}");
        assert_eq!(strict.proven(), ids(&[1, 3]));
    }

    #[test]
    fn message_passing_keeps_the_writer_and_the_reader_fence() {
        let r = minimise(&[trace(MP)], &Options::default(), &ids(&[0, 1, 2, 3]));
        assert_eq!(r.fences, ids(&[1, 3]), "{r:?}");
        assert!(r.races > 0 && r.unordered_by_any_fence == 0, "{r:?}");
        // Each is proven by the data's write-read race, in the one run.
        assert_eq!(r.proven(), ids(&[1, 3]));
        let p = &r.proofs[&FenceId(1)];
        assert_eq!(
            (p.first, p.second, p.kind.as_str(), p.run),
            (Some(FenceId(1)), Some(FenceId(2)), "write-read", 0)
        );
    }

    #[test]
    fn of_two_fences_that_each_order_the_message_one_is_kept() {
        // Sites 1 (after the data store) and 4 (a mark before the flag store) each release it.
        let t = trace(
            "b0.t0 st data 1 @1\nb0.t0 mark @4\nb0.t0 st.volatile flag 1 @0\nb1.t0 ld.volatile flag 1 @3\nb1.t0 ld data 1 @2\n",
        );
        let traces = [t];
        let prepped = Prepped::of(&traces);
        let opts = Options::default();
        let all = ids(&[0, 1, 2, 3, 4]);
        let mut search = Search::new(&prepped, &opts, left(&prepped, &opts, &all), 2);
        let kept = search.reduce(ids(&[1, 3, 4]));
        assert_eq!(kept.len(), 2, "{kept:?}");
        assert!(kept.contains(&FenceId(3)), "{kept:?}");
    }

    #[test]
    fn removals_checked_ahead_keep_what_one_removal_after_another_keeps() {
        // Sites 1 (after the data store) and marks 4-7 (before the flag store) each release the
        // message: each alone can go, not all. One removal after another, from the last, keeps
        // 1 and the reader's 3, whatever the number of removals checked at once.
        let t = trace(
            "b0.t0 st data 1 @1\nb0.t0 mark @4\nb0.t0 mark @5\nb0.t0 mark @6\nb0.t0 mark @7\n\
             b0.t0 st.volatile flag 1 @0\nb1.t0 ld.volatile flag 1 @3\nb1.t0 ld data 1 @2\n",
        );
        let traces = [t];
        let prepped = Prepped::of(&traces);
        let opts = Options::default();
        let all = ids(&[0, 1, 2, 3, 4, 5, 6, 7]);
        for width in 1..=6 {
            let mut search = Search::new(&prepped, &opts, left(&prepped, &opts, &all), width);
            assert_eq!(
                search.reduce(ids(&[1, 3, 4, 5, 6, 7])),
                ids(&[1, 3]),
                "{width}"
            );
        }
    }

    /// Every subset of the trace's sites (up to 2^9) leaves the same races on the slim trace as
    /// on the whole one.
    fn slim_agrees(name: &str, t: &Trace) {
        let opts = Options::default();
        let whole = Prepped::of(std::slice::from_ref(t));
        let none = unfenced(&whole, &opts);
        let slims = Prepped::of(&none.slims);
        let sites: Vec<FenceId> = t
            .events
            .iter()
            .filter_map(|e| e.site)
            .collect::<Ids>()
            .into_iter()
            .take(9)
            .collect();
        assert_eq!(left(&slims, &opts, &Ids::new()), none.left, "{name}");
        for mask in 0u32..(1 << sites.len()) {
            let set: Ids = (0..sites.len())
                .filter(|k| mask >> k & 1 == 1)
                .map(|k| sites[k])
                .collect();
            assert_eq!(
                left(&slims, &opts, &set),
                left(&whole, &opts, &set),
                "{name} with {set:?}"
            );
        }
    }

    #[test]
    fn the_slim_trace_leaves_the_same_races_as_the_whole_one_for_every_fence_set() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/race");
        let mut n = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let t = trace(&std::fs::read_to_string(&path).unwrap());
            slim_agrees(&path.display().to_string(), &t);
            n += 1;
        }
        assert!(n >= 40, "{n} traces");
        // Plain accesses that race with nothing between the data store and the flag store:
        // their sites (4, 5) still release the message when enabled.
        let t = trace(
            "b0.t0 st data 1 @1\nb0.t0 ld other @4\nb0.t0 st other @5\nb0.t0 ld other @4\nb0.t0 st.volatile flag 1 @0\nb1.t0 ld.volatile flag 1 @3\nb1.t0 ld data 1 @2\n",
        );
        let none = unfenced(&Prepped::of(std::slice::from_ref(&t)), &Options::default());
        assert_eq!(
            none.slims[0].events.len(),
            t.events.len() - 1,
            "one mark a site"
        );
        slim_agrees("other accesses", &t);
    }

    #[test]
    fn a_race_no_fence_orders_names_no_fence() {
        // Two blocks store to one word with no message between them.
        let t = "b0.t0 st x 1 @0\nb1.t0 st x 2 @1\n";
        let r = minimise(&[trace(t)], &Options::default(), &ids(&[0, 1]));
        assert!(r.fences.is_empty(), "{r:?}");
        assert_eq!(r.unordered_by_any_fence, r.races);
        assert!(r.races > 0 && r.note.contains("no race in the traces that a fence orders"));
    }

    #[test]
    fn a_place_pair_racing_also_where_no_fence_orders_it_still_needs_its_fence() {
        // Two thieves read a deque slot that the owner refills: one's claim fails (no message:
        // no fence orders that read), the other's succeeds and the owner reads it, then
        // refills. Fence 1 (after the slot read) orders the second pair; the place pair
        // (1, 6) races with every fence too, once.
        let t = "b1.t0 ld slot 5 @1\nb1.t0 cas.fail.device head 7 @2\n\
                 b2.t0 ld slot 5 @1\nb2.t0 atom.device head 0 1 @2\n\
                 b0.t0 ld.volatile head 1 @3\nb0.t0 fence.device\nb0.t0 st slot 9 @6\n";
        let r = minimise(&[trace(t)], &Options::default(), &ids(&[1, 2, 3, 6]));
        assert_eq!(r.fences, ids(&[1]), "{r:?}");
    }

    #[test]
    fn a_trace_without_races_names_no_fence() {
        let t = "k0.b0.t0 st x 1 @0\nk1.b1.t0 ld x 1 @1\n";
        let r = minimise(&[trace(t)], &Options::default(), &ids(&[0, 1]));
        assert!(r.fences.is_empty() && r.races == 0, "{r:?}");
    }

    #[test]
    fn fences_the_races_left_by_the_named_ones_name_are_added_before_every_fence_is_tried() {
        // Three messages through fences 1 and 3 (a pair's examples), then a fourth with the same
        // data accesses whose reader acquires after another flag load (site 7): the first naming
        // misses 7, the races left with 1 and 3 name it.
        let mut t = String::new();
        for i in 0..3 {
            t += &format!(
                "b0.t{i} st d{i} 1 @1\nb0.t{i} st.volatile f{i} 1 @0\n\
                 b1.t{i} ld.volatile f{i} 1 @3\nb1.t{i} ld d{i} 1 @2\n"
            );
        }
        t += "b0.t9 st d9 1 @1\nb0.t9 mark @5\nb0.t9 st.volatile g 1 @6\n\
              b1.t9 ld.volatile g 1 @7\nb1.t9 mark @8\nb1.t9 ld d9 1 @2\n";
        let all: Ids = (0..9).map(FenceId).collect();
        let r = minimise(&[trace(&t)], &Options::default(), &all);
        assert_eq!(r.named, ids(&[1, 3]), "{r:?}");
        assert_eq!(r.fences, ids(&[1, 3, 7]), "{r:?}");
        assert!(r.note.contains("named more"), "{r:?}");
        // The unfenced detection, every fence, the named set with its two removals ahead, a
        // second naming round, three removals and their union: not nine removals and more.
        assert!(r.detections <= 10, "{r:?}");
    }
}

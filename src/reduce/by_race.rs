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
use crate::race::detect::{self, Options, PairKey};
use crate::race::explain;
use crate::race::report;
use crate::race::runs;
use crate::race::slim;
use crate::race::trace::Trace;
use crate::run::environment::TestEnv;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

/// How the detection runs go (`--race-runs`, `--race-events`).
#[derive(Clone, Copy, Debug)]
pub struct RaceRuns {
    pub runs: usize,
    pub events: u64,
    pub seed: u64,
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
    // One step a run: a race shows in one execution (the stress checks keep the config's).
    let app = &app.clone().with_steps(Some(1))?;
    runs::build(app, out)?;
    let run_opts = runs::Options {
        runs: how.runs,
        env: TestEnv {
            stress: crate::run::environment::Stress::No,
            randomise: false,
        },
        seed: how.seed,
        fences: FenceSet::Ids(Ids::new()),
        events: how.events,
    };
    let done = runs::run(app, out, &run_opts, original)?;
    let mut found = minimise(&done.traces, opts, all);
    found.dropped = done.traces.iter().map(|t| t.dropped + t.cut).sum();
    found.run_seconds = done.info.iter().map(|r| r.seconds).sum();
    std::fs::write(&kept, serde_json::to_string_pretty(&found)? + "\n")?;
    Ok(found)
}

/// What the traces decided, kept in `reduce.json` and, for a resume, in `reduce/race.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RaceStart {
    /// The set the stress reduction starts from.
    pub fences: Ids,
    /// The fences the report named for the races (the first set tried).
    pub named: Ids,
    /// Racing place pairs without wmfix's fences, and of those the ones every fence leaves.
    pub races: usize,
    pub unordered_by_any_fence: usize,
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
}

/// The racing place pairs the report shows, each with its count of racing access pairs. A
/// place pair can race both where a fence would order it and where none would (a work-stealing
/// thief's slot read before a failed claim, and before a successful one): its count tells them
/// apart.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Left(BTreeMap<(bool, PairKey), u64>);

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

/// Detections at once: each holds its own clocks, and the biggest traces take gigabytes.
const AT_ONCE: usize = 4;

/// The racing place pairs the report shows with `fences` taken as enabled.
fn left(traces: &[Trace], opts: &Options, fences: &Ids) -> Left {
    left_naming(traces, opts, fences, false).0
}

/// `left`, and with `name`, the fences the messages of the pairs' examples name.
fn left_naming(traces: &[Trace], opts: &Options, fences: &Ids, name: bool) -> (Left, Ids) {
    let (left, named, _) = detect_all(traces, opts, fences, name, false);
    (left, named)
}

/// The racing pairs without wmfix's fences, the fences their examples' messages name, and
/// each trace slimmed to what a check of more fences needs (`slim`).
fn unfenced(traces: &[Trace], opts: &Options) -> (Left, Ids, Vec<Trace>) {
    detect_all(traces, opts, &Ids::new(), true, true)
}

/// One detection of each trace with `fences` taken as enabled: the racing pairs, with `name`
/// the fences their examples' messages name, with `slims` each trace slimmed.
fn detect_all(
    traces: &[Trace],
    opts: &Options,
    fences: &Ids,
    name: bool,
    slims: bool,
) -> (Left, Ids, Vec<Trace>) {
    let mut with = opts.clone();
    with.fences = fences.clone();
    let (mut out, mut named, mut slimmed) = (Left::default(), Ids::new(), Vec::new());
    for t in traces {
        let d = detect::detect(t, &with);
        for (k, pair, strong) in report::reported(t, &d) {
            *out.0.entry((strong, k)).or_default() += pair.count;
            if name {
                for &(a, b) in &pair.examples {
                    named.extend(explain::explain(t, &d, a, b).suggested());
                }
            }
        }
        if slims {
            slimmed.push(slim::slim(t, &d.addresses));
        }
    }
    (out, named, slimmed)
}

/// `left` of each set, several at a time.
fn left_each(traces: &[Trace], opts: &Options, sets: &[Ids]) -> Vec<Left> {
    let mut out = Vec::with_capacity(sets.len());
    for chunk in sets.chunks(AT_ONCE) {
        std::thread::scope(|s| {
            let handles: Vec<_> = chunk
                .iter()
                .map(|set| s.spawn(move || left(traces, opts, set)))
                .collect();
            out.extend(
                handles
                    .into_iter()
                    .map(|h| h.join().expect("a detection panicked")),
            );
        });
    }
    out
}

struct Search<'a> {
    traces: &'a [Trace],
    opts: &'a Options,
    /// What every fence leaves: not orderable by fences.
    floor: Left,
    detections: usize,
}

/// Rounds of naming: with the named fences enabled, the races left name more.
const NAMING_ROUNDS: usize = 4;

impl Search<'_> {
    fn passes(&mut self, fences: &Ids) -> bool {
        self.detections += 1;
        left(self.traces, self.opts, fences).within(&self.floor)
    }

    /// `named` grown by the fences the races left with it enabled name, until it leaves only
    /// the floor (`Some`), names nothing new, or the rounds run out (`None`): a few detections
    /// where reducing from every fence takes one a fence.
    fn named_closure(&mut self, named: Ids, all: &Ids) -> Option<Ids> {
        let mut set = named;
        for _ in 0..NAMING_ROUNDS {
            self.detections += 1;
            let (left, more) = left_naming(self.traces, self.opts, &set, true);
            if left.within(&self.floor) {
                return Some(set);
            }
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
    /// time.
    fn reduce(&mut self, set: Ids) -> Ids {
        let singles: Vec<Ids> = set
            .iter()
            .map(|f| set.iter().filter(|g| *g != f).copied().collect())
            .collect();
        self.detections += singles.len();
        let lefts = left_each(self.traces, self.opts, &singles);
        let removable: Vec<FenceId> = set
            .iter()
            .zip(&lefts)
            .filter(|(_, l)| l.within(&self.floor))
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
        for f in removable.into_iter().rev() {
            let mut trial = set.clone();
            trial.remove(&f);
            if self.passes(&trial) {
                set = trial;
            }
        }
        set
    }
}

/// The least set of `all` (each fence's removal tried) that leaves on `traces` no race that
/// enabling every fence would order; from the fences the races' messages name when they do.
pub fn minimise(traces: &[Trace], opts: &Options, all: &Ids) -> RaceStart {
    let t0 = Instant::now();
    let (none, named, slims) = unfenced(traces, opts);
    let named: Ids = named.into_iter().filter(|f| all.contains(f)).collect();
    let mut search = Search {
        traces: &slims,
        opts,
        floor: left(&slims, opts, all),
        detections: 2,
    };
    let orderable = none.orderable(&search.floor);
    let (fences, note) = if orderable == 0 {
        let note = if none.0.is_empty() {
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
    RaceStart {
        fences,
        named,
        races: none.0.len(),
        unordered_by_any_fence: search.floor.0.len(),
        traces: traces.len(),
        events: traces.iter().map(|t| t.events.len()).sum(),
        checked_events: slims.iter().map(|t| t.events.len()).sum(),
        dropped: 0,
        run_seconds: 0.0,
        detections: search.detections,
        seconds: t0.elapsed().as_secs_f64(),
        note,
    }
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
    fn message_passing_keeps_the_writer_and_the_reader_fence() {
        let r = minimise(&[trace(MP)], &Options::default(), &ids(&[0, 1, 2, 3]));
        assert_eq!(r.fences, ids(&[1, 3]), "{r:?}");
        assert!(r.races > 0 && r.unordered_by_any_fence == 0, "{r:?}");
    }

    #[test]
    fn of_two_fences_that_each_order_the_message_one_is_kept() {
        // Sites 1 (after the data store) and 4 (a mark before the flag store) each release it.
        let t = trace(
            "b0.t0 st data 1 @1\nb0.t0 mark @4\nb0.t0 st.volatile flag 1 @0\nb1.t0 ld.volatile flag 1 @3\nb1.t0 ld data 1 @2\n",
        );
        let traces = [t];
        let opts = Options::default();
        let all = ids(&[0, 1, 2, 3, 4]);
        let mut search = Search {
            traces: &traces,
            opts: &opts,
            floor: left(&traces, &opts, &all),
            detections: 0,
        };
        let kept = search.reduce(ids(&[1, 3, 4]));
        assert_eq!(kept.len(), 2, "{kept:?}");
        assert!(kept.contains(&FenceId(3)), "{kept:?}");
    }

    /// Every subset of the trace's sites (up to 2^9) leaves the same races on the slim trace as
    /// on the whole one.
    fn slim_agrees(name: &str, t: &Trace) {
        let opts = Options::default();
        let (none, _, slims) = unfenced(std::slice::from_ref(t), &opts);
        let sites: Vec<FenceId> = t
            .events
            .iter()
            .filter_map(|e| e.site)
            .collect::<Ids>()
            .into_iter()
            .take(9)
            .collect();
        assert_eq!(left(&slims, &opts, &Ids::new()), none, "{name}");
        for mask in 0u32..(1 << sites.len()) {
            let set: Ids = (0..sites.len())
                .filter(|k| mask >> k & 1 == 1)
                .map(|k| sites[k])
                .collect();
            assert_eq!(
                left(&slims, &opts, &set),
                left(std::slice::from_ref(t), &opts, &set),
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
        let (_, _, slims) = unfenced(std::slice::from_ref(&t), &Options::default());
        assert_eq!(slims[0].events.len(), t.events.len() - 1, "one mark a site");
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
        // The unfenced detection, every fence, two naming rounds, three removals: not nine.
        assert!(r.detections <= 8, "{r:?}");
    }
}

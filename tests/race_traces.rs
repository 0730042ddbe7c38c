//! The race detector on hand-written traces with known verdicts (`tests/fixtures/race/`): each
//! file says which addresses race (`# expect: race x,y` or `none`) and, where a fence orders
//! them, which fence sites the report must suggest (`# suggests: 0,3`); with the suggested
//! fences taken as enabled, no race may be left. Under scoped-hrf the same races are expected
//! unless `# expect scoped-hrf:` says otherwise.

use std::collections::BTreeSet;
use std::path::Path;
use wmfix::race::detect::{self, Options};
use wmfix::race::report;
use wmfix::race::trace::Trace;

struct Expected {
    races: BTreeSet<String>,
    suggests: Option<BTreeSet<usize>>,
    /// `# expect scoped-hrf:`, where that model differs.
    hrf: Option<BTreeSet<String>>,
}

/// `race x,y` or `none`.
fn addresses(v: &str, line: &str) -> BTreeSet<String> {
    match v.strip_prefix("race ") {
        Some(list) => list.split(',').map(|s| s.trim().to_string()).collect(),
        None => {
            assert_eq!(v.trim(), "none", "bad expect line {line:?}");
            BTreeSet::new()
        }
    }
}

fn expected(text: &str) -> Expected {
    let mut e = Expected {
        races: BTreeSet::new(),
        suggests: None,
        hrf: None,
    };
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("# expect: ") {
            e.races = addresses(v, line);
        }
        if let Some(v) = line.strip_prefix("# expect scoped-hrf: ") {
            e.hrf = Some(addresses(v, line));
        }
        if let Some(v) = line.strip_prefix("# suggests: ") {
            e.suggests = Some(v.split(',').map(|s| s.trim().parse().unwrap()).collect());
        }
    }
    e
}

fn racing_addresses(trace: &Trace, opts: &Options) -> BTreeSet<String> {
    let d = detect::detect(trace, opts);
    report::reported(trace, &d)
        .into_iter()
        .flat_map(|(_, p, _)| p.examples.iter())
        .map(|&(a, _)| trace.addr_name(trace.events[a as usize].addr))
        .collect()
}

#[test]
fn every_ground_truth_trace_gets_its_verdict_and_its_fences() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/race");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "trace"))
        .collect();
    files.sort();
    assert!(files.len() >= 30, "the suite has {} traces", files.len());
    let mut wrong = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let want = expected(&text);
        let trace = Trace::parse_text(&text).unwrap();
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        let hrf = Options {
            model: detect::Model::ScopedHrf,
            ..Options::default()
        };
        let want_hrf = want.hrf.as_ref().unwrap_or(&want.races);
        let got_hrf = racing_addresses(&trace, &hrf);
        if &got_hrf != want_hrf {
            wrong.push(format!(
                "{name}: under scoped-hrf races on {got_hrf:?}, expected {want_hrf:?}"
            ));
        }
        let got = racing_addresses(&trace, &Options::default());
        if got != want.races {
            wrong.push(format!(
                "{name}: races on {got:?}, expected {:?}",
                want.races
            ));
            continue;
        }
        let r = report::report(std::slice::from_ref(&trace), &Options::default(), None);
        if let Some(s) = &want.suggests {
            let got: BTreeSet<usize> = r.suggested.iter().map(|f| f.0).collect();
            if &got != s {
                wrong.push(format!("{name}: suggests {got:?}, expected {s:?}"));
            }
            if r.left_with_suggested != 0 {
                wrong.push(format!(
                    "{name}: {} race(s) left with the suggested fences",
                    r.left_with_suggested
                ));
            }
        } else if !want.races.is_empty() && !r.suggested.is_empty() {
            wrong.push(format!(
                "{name}: suggests {:?} where no fence orders the race",
                r.suggested
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_barrier_relaxation_is_what_orders_threadfence_reductions_reader() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/race/ticket-barrier-reader.trace"),
    )
    .unwrap();
    let trace = Trace::parse_text(&text).unwrap();
    let strict = Options {
        barrier_acquires: false,
        ..Options::default()
    };
    assert!(detect::detect(&trace, &strict).race_count() > 0);
    let d = detect::detect(&trace, &Options::default());
    assert_eq!(d.race_count(), 0);
    assert!(d.stats.barrier_acquires > 0);
}

/// The race suite's trace from an H100 run (`results/2026-11-27b-race-...`, the suite unchanged
/// since): under ptx, rows in exactly the `race_*` kernels (as `scripts/race_suite.py` checks
/// race.json), now with the unordered-strong class; under scoped-hrf, none in an `ok_*`
/// kernel (its races are a subset).
#[test]
fn the_race_suites_gpu_trace_keeps_its_verdicts_under_both_models() {
    use wmfix::fences::record::FenceList;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("results/2026-11-27b-race-nvidia-h100-80gb-hbm3/race-suite");
    let fences = FenceList::load(&dir.join("fences.json")).unwrap();
    let kinds = wmfix::race::sites::site_kinds(&fences);
    let bytes = std::fs::read(dir.join("trace-0.bin")).unwrap();
    let traces = wmfix::race::launches::split(vec![Trace::from_bytes(&bytes, &kinds).unwrap()]);
    let source = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/race-suite/suite.cu"),
    )
    .unwrap();
    let kernels: Vec<&str> = source
        .lines()
        .filter_map(|l| l.strip_prefix("__global__ void "))
        .filter_map(|l| l.split('(').next())
        .collect();
    let racy = |model: detect::Model| -> BTreeSet<String> {
        let opts = Options {
            model,
            ..Options::default()
        };
        let r = report::report(&traces, &opts, Some(&fences));
        for row in &r.rows {
            println!(
                "{}: {:?} {} -> {} {}",
                model.name(),
                row.class,
                row.first.location,
                row.second.location,
                row.other_model.as_deref().unwrap_or("")
            );
        }
        r.rows
            .iter()
            .flat_map(|row| [row.first.site, row.second.site])
            .flatten()
            .filter_map(|s| fences.fences.get(s.0).map(|f| f.function.clone()))
            .filter(|f| kernels.contains(&f.as_str()))
            .collect()
    };
    let want: BTreeSet<String> = kernels
        .iter()
        .filter(|k| k.starts_with("race_"))
        .map(|k| k.to_string())
        .collect();
    assert_eq!(racy(detect::Model::Ptx), want);
    let hrf = racy(detect::Model::ScopedHrf);
    assert!(hrf.is_subset(&want), "{hrf:?}");
    println!("racy under scoped-hrf: {hrf:?}");
}

#[test]
fn block_scope_atomics_across_blocks_name_the_scope_to_widen() {
    // Two blocks claim one word with atomicCAS_block (ra-bfs's racy build): the row says which
    // accesses are of block scope; a pair of device-scope atomics is no race at all.
    let text = "b0.t0 atom.block v 0 1 @0\nb1.t0 cas.fail.block v 1 @1\n";
    let trace = Trace::parse_text(text).unwrap();
    let r = report::report(std::slice::from_ref(&trace), &Options::default(), None);
    assert_eq!(r.rows.len(), 1, "{}", report::table(&r));
    let narrow = r.rows[0].narrow_scope.as_deref().unwrap_or("");
    assert!(narrow.contains("of block scope across blocks"), "{narrow}");
    assert!(
        narrow.contains("an atomic") && narrow.contains("a strong read"),
        "{narrow}"
    );
    assert!(report::table(&r).contains("widen to device scope"));
    let device = Trace::parse_text(&text.replace(".block", ".device")).unwrap();
    let r = report::report(std::slice::from_ref(&device), &Options::default(), None);
    assert!(r.rows.is_empty(), "{}", report::table(&r));
    // One block: block scope covers both threads.
    let one = Trace::parse_text(&text.replace("b1.t0", "b0.t1")).unwrap();
    let r = report::report(std::slice::from_ref(&one), &Options::default(), None);
    assert!(r.rows.is_empty(), "{}", report::table(&r));
}

#[test]
fn a_row_names_the_runs_that_showed_it() {
    // Three runs; the same unsynchronised pair raced in runs 0 and 2, run 1 had no conflict.
    let racy = "b0.t0 st d 1 @0\nb1.t0 ld d 1 @1\n";
    let quiet = "b0.t0 st d 1 @0\nb1.t0 ld e 0 @1\n";
    let traces: Vec<Trace> = [racy, quiet, racy]
        .iter()
        .enumerate()
        .map(|(run, text)| {
            let mut t = Trace::parse_text(text).unwrap();
            t.run = run;
            t
        })
        .collect();
    let r = report::report(&traces, &Options::default(), None);
    assert_eq!(r.rows.len(), 1, "{}", report::table(&r));
    assert_eq!((r.rows[0].runs, r.rows[0].in_runs.clone()), (2, vec![0, 2]));
}

#[test]
fn runs_checked_one_at_a_time_add_up_to_one_report() {
    // `race` checks each run once it ends and lets its traces go: the report is the last
    // run's (the one that raced) with the clean runs' figures added.
    let trace = |run: usize, text: &str| {
        let mut t = Trace::parse_text(text).unwrap();
        t.run = run;
        t
    };
    let clean = trace(0, "b0.t0 st d 1 @0\nb1.t0 ld e 0 @1\n");
    let racy = trace(1, "b0.t0 st d 1 @0\nb1.t0 ld d 1 @1\n");
    let each = |t: &Trace| report::report(std::slice::from_ref(t), &Options::default(), None);
    let whole = report::report(&[clean.clone(), racy.clone()], &Options::default(), None);
    let added = report::with_clean_runs(vec![each(&clean), each(&racy)]);
    assert_eq!((added.traces, whole.traces), (2, 2));
    assert_eq!(added.stats.events, whole.stats.events);
    assert_eq!(added.stats.accesses, whole.stats.accesses);
    assert_eq!(added.rows.len(), 1);
    assert_eq!(added.rows[0].in_runs, vec![1]);
    assert_eq!(
        (added.complete, added.checked_share),
        (whole.complete, whole.checked_share)
    );
}

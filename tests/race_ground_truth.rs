//! The race detector against kernels labelled by construction (`ground_truth/`): every
//! schedule of every kernel, under both models, must get its label: no pair missed, none
//! false, per model and per kind. `--nocapture` prints the confusion table.

mod common;
mod ground_truth;

use ground_truth::{Class, Kernel, Label, Model, Var};
use std::collections::{BTreeMap, BTreeSet};
use wmfix::race::detect::{self, Options};
use wmfix::race::report::{self, Class as RowClass};
use wmfix::race::trace::Trace;

const CLASSES: [Class; 3] = [
    Class::DataRace,
    Class::RelaxedMessage,
    Class::UnorderedStrong,
];
const MODELS: [Model; 2] = [Model::Ptx, Model::ScopedHrf];

fn options(model: Model) -> Options {
    Options {
        model: match model {
            Model::Ptx => detect::Model::Ptx,
            Model::ScopedHrf => detect::Model::ScopedHrf,
        },
        ..Options::default()
    }
}

fn class_of(c: RowClass) -> Class {
    match c {
        RowClass::DataRace => Class::DataRace,
        RowClass::RelaxedMessage => Class::RelaxedMessage,
        RowClass::UnorderedStrong => Class::UnorderedStrong,
    }
}

/// The data is `d0`, `d1`; every other address is the synchronisation variable.
fn var_of(address: &str) -> Var {
    if address.starts_with('d') {
        Var::Data
    } else {
        Var::Sync
    }
}

/// What the detector reports on one trace under `model`, as a label.
fn found(text: &str, model: Model) -> Label {
    let trace = Trace::parse_text(text).expect("the generator writes valid traces");
    let r = report::report(std::slice::from_ref(&trace), &options(model), None);
    r.rows
        .iter()
        .map(|row| (var_of(&row.example.address), class_of(row.class)))
        .collect()
}

/// Per model and kind: true positives, false negatives, false positives, true negatives.
type Confusion = BTreeMap<(Model, Class), [u64; 4]>;

fn tally(table: &mut Confusion, model: Model, want: &Label, got: &Label) {
    for class in CLASSES {
        for var in [Var::Data, Var::Sync] {
            let (w, g) = (want.contains(&(var, class)), got.contains(&(var, class)));
            let cell = match (w, g) {
                (true, true) => 0,
                (true, false) => 1,
                (false, true) => 2,
                (false, false) => 3,
            };
            table.entry((model, class)).or_default()[cell] += 1;
        }
    }
}

fn render(table: &Confusion) -> String {
    let mut s = format!(
        "{:11} {:16} {:>6} {:>6} {:>6} {:>6}\n",
        "model", "kind", "TP", "FN", "FP", "TN"
    );
    for ((model, class), [tp, fn_, fp, tn]) in table {
        s.push_str(&format!(
            "{:11} {:16} {tp:>6} {fn_:>6} {fp:>6} {tn:>6}\n",
            format!("{model:?}"),
            format!("{class:?}")
        ));
    }
    s
}

#[test]
fn the_generator_makes_enough_distinct_kernels_with_every_label() {
    let kernels = ground_truth::kernels();
    let names: BTreeSet<String> = kernels.iter().map(Kernel::name).collect();
    assert!(kernels.len() >= 300, "{} kernels", kernels.len());
    assert_eq!(names.len(), kernels.len(), "kernel names repeat");
    let mut seen = BTreeSet::new();
    for k in &kernels {
        for m in MODELS {
            seen.extend(k.label(m).into_iter().map(|(v, c)| (m, v, c)));
        }
    }
    for m in MODELS {
        for c in CLASSES {
            assert!(
                seen.contains(&(m, Var::Data, c)),
                "no kernel labelled {m:?} {c:?}"
            );
        }
    }
    // Schedules differ (the verdict must not depend on which one ran).
    let k = kernels
        .iter()
        .find(|k| k.sync == ground_truth::Sync::FlagVolatile)
        .unwrap();
    let traces = k.traces();
    assert!(
        traces.iter().collect::<BTreeSet<_>>().len() > 1,
        "{traces:?}"
    );
}

#[test]
fn every_schedule_of_every_kernel_gets_its_label_under_both_models() {
    let mut table = Confusion::new();
    let mut wrong = Vec::new();
    let mut unstable = Vec::new();
    let kernels = ground_truth::kernels();
    let relayed = kernels.iter().filter(|k| k.relay.is_some()).count();
    println!(
        "{} kernels ({relayed} of three threads), {} schedules each, 2 models; per kernel, schedule and model, each kind on the data and on the synchronisation variable:",
        kernels.len(),
        kernels[0].traces().len()
    );
    for k in kernels {
        let traces = k.traces();
        for model in MODELS {
            let want = k.label(model);
            let mut verdicts = BTreeSet::new();
            for (n, text) in traces.iter().enumerate() {
                let got = found(text, model);
                tally(&mut table, model, &want, &got);
                if got != want {
                    wrong.push(format!(
                        "{} schedule {n} {model:?}: expected {want:?}, found {got:?}\n{text}",
                        k.name()
                    ));
                }
                verdicts.insert(got);
            }
            if verdicts.len() > 1 {
                unstable.push(format!("{} {model:?}: {verdicts:?}", k.name()));
            }
        }
    }
    let table = render(&table);
    println!("{table}");
    let shown: Vec<&String> = wrong.iter().take(12).collect();
    assert!(
        wrong.is_empty() && unstable.is_empty(),
        "{table}\n{} wrong verdicts, {} kernels whose verdict depends on the schedule:\n{}\n{}",
        wrong.len(),
        unstable.len(),
        unstable
            .iter()
            .take(12)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n"),
        shown
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// Writes the suite's files, its `wmfix.toml` and its labels into `dir`; the files.
fn write_suite(dir: &std::path::Path, kernels: &[Kernel]) -> Vec<(String, String)> {
    std::fs::create_dir_all(dir).unwrap();
    // An earlier suite's files would be built too.
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_some_and(|x| x == "cu") {
            std::fs::remove_file(path).unwrap();
        }
    }
    let files = ground_truth::suite(kernels);
    for (name, text) in &files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    std::fs::write(dir.join("wmfix.toml"), ground_truth::wmfix_toml(&files)).unwrap();
    std::fs::write(dir.join("labels.json"), ground_truth::labels_json(kernels)).unwrap();
    files
}

/// The suite of every 13th kernel builds (its parts and `main`) with its own build command.
#[test]
fn a_sample_of_the_kernels_compiles_with_nvcc() {
    let sample: Vec<Kernel> = ground_truth::kernels().into_iter().step_by(13).collect();
    let dir = tempfile::tempdir().unwrap();
    write_suite(dir.path(), &sample);
    let o = common::nvcc_command(dir.path())
        .arg("-c")
        .arg(ground_truth::BUILD)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(dir.path().join("suite").exists());
}

/// The suite for the GPU and its labels, written to `$WMFIX_GROUND_TRUTH_OUT` (default
/// `target/race-ground-truth`): each kernel defined, declared and launched once, each labelled
/// under both models.
#[test]
fn the_gpu_suite_and_its_labels_are_written() {
    let kernels = ground_truth::kernels();
    let out = std::env::var_os("WMFIX_GROUND_TRUTH_OUT").map_or_else(
        || common::repo().join("target/race-ground-truth"),
        std::path::PathBuf::from,
    );
    let files = write_suite(&out, &kernels);
    let names: Vec<String> = kernels.iter().map(Kernel::name).collect();
    let lines = |prefix: &str, parts: bool| -> Vec<String> {
        files
            .iter()
            .filter(|(n, _)| n.starts_with("part_") == parts)
            .flat_map(|(_, t)| t.lines())
            .filter_map(|l| l.trim().strip_prefix(prefix))
            .filter_map(|l| l.split(['(', '"']).next())
            .map(str::to_string)
            .collect()
    };
    assert_eq!(lines("__global__ void ", true), names, "defined");
    assert_eq!(lines("__global__ void ", false), names, "declared");
    assert_eq!(lines("{\"", false), names, "launched");
    let labels: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("labels.json")).unwrap()).unwrap();
    for name in &names {
        let label = &labels[name];
        assert!(
            label["ptx"].is_array() && label["scoped-hrf"].is_array(),
            "{name}"
        );
    }
}

/// `scripts/race_ground_truth.py` on a made-up `wmfix race` folder: rows find their kernel by
/// fences.json's function, their variable by the access; a missed pair is wrong (exit 1).
#[test]
fn the_gpu_checker_compares_race_json_with_the_labels() {
    let kernels = ground_truth::kernels();
    let k = kernels
        .iter()
        .find(|k| k.label(Model::Ptx) == Label::from([(Var::Data, Class::DataRace)]))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let labels = dir.path().join("labels.json");
    std::fs::write(&labels, ground_truth::labels_json(std::slice::from_ref(k))).unwrap();
    let fences = serde_json::json!({"fences": [
        {"id": 0, "function": k.name(), "access": "*(d + 0)"},
        {"id": 1, "function": k.name(), "access": "out[1]", "accesses": ["*(d + 0)"]},
    ]});
    std::fs::write(dir.path().join("fences.json"), fences.to_string()).unwrap();
    let check_runs = |rows: serde_json::Value, runs: usize| {
        let runs: Vec<serde_json::Value> =
            (0..runs).map(|r| serde_json::json!({"run": r})).collect();
        let race = serde_json::json!({"model": "ptx", "rows": rows, "runs": runs});
        std::fs::write(dir.path().join("race.json"), race.to_string()).unwrap();
        std::process::Command::new("python3")
            .arg(common::repo().join("scripts/race_ground_truth.py"))
            .arg(dir.path())
            .arg(&labels)
            .output()
            .unwrap()
    };
    let check = |rows| check_runs(rows, 1);
    let row = serde_json::json!({"class": "data-race", "first": {"site": 0, "location": "a"},
        "second": {"site": 1, "location": "b"}});
    let o = check(serde_json::json!([row]));
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(
        text.contains("data-race               1      0      0      1"),
        "{text}"
    );
    let o = check(serde_json::json!([]));
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(text.contains(&format!("WRONG {}", k.name())), "{text}");
    // Ten runs: the pair seen in all ten is one verdict; seen in seven, the verdict differed.
    let in_runs = |n: u64| {
        let mut r = row.clone();
        r["runs"] = n.into();
        serde_json::json!([r])
    };
    let o = check_runs(in_runs(10), 10);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(
        text.contains("the same verdict in all 10 runs: 1 of 1"),
        "{text}"
    );
    let o = check_runs(in_runs(7), 10);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(
        text.contains(&format!(
            "NOT IN EVERY RUN {}: data/data-race in 7 (rows: 7; race.json names no runs) of 10 runs",
            k.name()
        )),
        "{text}"
    );
    // Two symmetric rows (whichever thread a schedule made last), each in alternate runs:
    // every run shows the race, one verdict; with a run that shows neither, it differed.
    let split = |a: Vec<u64>, b: Vec<u64>| {
        let mut two = row.clone();
        two["second"]["location"] = "c".into();
        let (mut r, mut t) = (row.clone(), two);
        (r["runs"], r["in_runs"]) = (a.len().into(), a.into());
        (t["runs"], t["in_runs"]) = (b.len().into(), b.into());
        serde_json::json!([r, t])
    };
    let o = check_runs(split(vec![0, 2, 4, 6, 8], vec![1, 3, 5, 7, 9]), 10);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(
        text.contains("the same verdict in all 10 runs: 1 of 1"),
        "{text}"
    );
    let o = check_runs(split(vec![0, 2, 4, 6], vec![1, 3, 5, 7, 9]), 10);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(
        text.contains(&format!(
            "NOT IN EVERY RUN {}: data/data-race in 9 of 10 runs",
            k.name()
        )),
        "{text}"
    );
}

/// `scripts/race_ground_truth.py --racecheck` on made-up compute-sanitizer output: a kernel is
/// found when a race record names it; a race-free kernel named is a false report.
#[test]
fn the_racecheck_checker_counts_the_kernels_its_records_name() {
    let kernels = ground_truth::kernels();
    let racy = kernels
        .iter()
        .find(|k| k.label(Model::Ptx) == Label::from([(Var::Data, Class::DataRace)]))
        .unwrap();
    let free = kernels
        .iter()
        .find(|k| k.label(Model::Ptx).is_empty() && k.label(Model::ScopedHrf).is_empty())
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let labels = dir.path().join("labels.json");
    let both = [*racy, *free];
    std::fs::write(&labels, ground_truth::labels_json(&both)).unwrap();
    let output = dir.path().join("racecheck.txt");
    std::fs::write(
        &output,
        format!(
            "========= COMPUTE-SANITIZER\n\
             ========= Error: Race reported between Write access at {0}(int *, int *, int *)+0x1a0 in part_00.cu:12\n\
             =========     and Read access at {0}(int *, int *, int *)+0x2b0 in part_00.cu:15 [2 hazards]\n\
             ========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n",
            racy.name()
        ),
    )
    .unwrap();
    let o = std::process::Command::new("python3")
        .arg(common::repo().join("scripts/race_ground_truth.py"))
        .arg("--racecheck")
        .args([&output, &labels])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(text.contains("kernels data-race 1 1"), "{text}");
    assert!(text.contains("kernels race-free 1 0"), "{text}");
}

//! The race detector against kernels labelled by construction (`ground_truth/`): every
//! schedule of every kernel, under both models, must get its label: no pair missed, none
//! false, per model and per kind. `--nocapture` prints the confusion table.

mod common;
mod ground_truth;

use ground_truth::{Class, Kernel, Model, Var};
use std::collections::BTreeSet;

const CLASSES: [Class; 3] = [
    Class::DataRace,
    Class::RelaxedMessage,
    Class::UnorderedStrong,
];
const MODELS: [Model; 2] = [Model::Ptx, Model::ScopedHrf];

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
fn a_sample_of_the_kernels_compiles_with_nvcc() {
    let kernels = ground_truth::kernels();
    let mut src = String::from("// wmfix race ground truth (a sample)\n");
    for k in kernels.iter().step_by(7) {
        src.push_str(&ground_truth::cuda(k));
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("gt.cu"), &src).unwrap();
    let o = common::nvcc_command(dir.path())
        .arg("-c")
        .arg("nvcc -arch=sm_90 -c gt.cu -o gt.o")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

//! `scripts/results.py --check`: every generated table of the Markdown files (the output of
//! `scripts/results.py FOLDER TABLE` between `<!-- results.py FOLDER TABLE -->` and
//! `<!-- /results.py -->`) and every results folder's cost.svg is what the result files make now.
//! The repository passes; in a copy, a table edited by hand, a result file changed under its
//! table, a cost.svg edited and a broken marker each fail the check, named; `--write` rewrites.

mod common;
use common::*;
use std::path::Path;
use std::process::{Command, Output};

/// `python3 ROOT/scripts/results.py ARGS` (the check's root defaults to the script's parent).
fn results_py(root: &Path, args: &[&str]) -> Output {
    Command::new("python3")
        .arg(root.join("scripts/results.py"))
        .args(args)
        .current_dir(root)
        .output()
        .expect("python3 runs")
}

#[test]
fn the_committed_generated_tables_match_their_result_files() {
    let o = results_py(&repo(), &["--check"]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    let n: usize = err
        .split_once("results.py: ")
        .and_then(|(_, rest)| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count of tables in {err:?}"));
    // Two cost.svg files and the tables of three results folders' READMEs at least.
    assert!(n >= 6, "{err}");
}

/// An empty generated table (its text between the lines is missing).
const MARKERS: &str = "<!-- results.py results/2026-11-26-2gpu-nvidia-h100-80gb-hbm3 gpus -->\n<!-- /results.py -->\n";

/// A copy of what the check reads: the script, the profiles the stress table names, two results
/// folders (one with a cost.svg) and a Markdown file with an empty generated table, and the same
/// markers in a code block, which are an example, not a table.
fn copy() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("repo");
    std::fs::create_dir_all(root.join("scripts")).unwrap();
    std::fs::copy(
        repo().join("scripts/results.py"),
        root.join("scripts/results.py"),
    )
    .unwrap();
    copy_tree(
        &repo().join("runtime-cu/profiles"),
        &root.join("runtime-cu"),
    );
    for d in [
        "2026-11-26-2gpu-nvidia-h100-80gb-hbm3",
        "2026-11-24c-nvidia-h200",
    ] {
        copy_tree(&repo().join("results").join(d), &root.join("results"));
        // Its README's tables (if any) are the repository's test; here only the one below counts.
        let _ = std::fs::remove_file(root.join("results").join(d).join("README.md"));
    }
    std::fs::create_dir_all(root.join("docs")).unwrap();
    std::fs::write(
        root.join("docs/numbers.md"),
        format!("# Numbers\n\n{MARKERS}\nAfter.\n\n```text\n{MARKERS}```\n"),
    )
    .unwrap();
    (tmp, root)
}

fn edit(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{from:?} not in {}", path.display());
    std::fs::write(path, text.replacen(from, to, 1)).unwrap();
}

#[test]
fn a_table_that_its_result_files_no_longer_give_fails_the_check() {
    let (_tmp, root) = copy();
    let doc = root.join("docs/numbers.md");
    let table = "docs/numbers.md:3: table gpus of results/2026-11-26-2gpu-nvidia-h100-80gb-hbm3";

    // The empty table differs; --write fills it from the result files, and then it matches.
    let o = results_py(&root, &["--check"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains(table), "{}", stderr(&o));
    let o = results_py(&root, &["--write"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("3 generated tables, 2 rewritten"),
        "{}",
        stderr(&o)
    );
    let written = std::fs::read_to_string(&doc).unwrap();
    assert!(
        written.contains("\n| cbe-dot | 16,117 | 16,740 | x1.04 | 119 s | 111 s | x0.93 |\n"),
        "{written}"
    );
    assert!(written.starts_with("# Numbers\n\n<!-- results.py "));
    assert!(written.ends_with(&format!(
        "<!-- /results.py -->\n\nAfter.\n\n```text\n{MARKERS}```\n"
    )));
    let o = results_py(&root, &["--check"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("3 generated tables match their result files"),
        "{}",
        stderr(&o)
    );

    // A figure edited by hand: the check names the table and shows the line.
    edit(&doc, "| 16,117 |", "| 16,200 |");
    let o = results_py(&root, &["--check"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("{table} differs")), "{err}");
    assert!(err.contains("-| cbe-dot | 16,200 |"), "{err}");
    assert!(err.contains("+| cbe-dot | 16,117 |"), "{err}");
    assert!(err.contains("1 of 3 generated tables differ"), "{err}");
    std::fs::write(&doc, &written).unwrap();

    // The index of results folders names each with its citations: numbers.md cites the 2-GPU
    // folder, nothing cites the other; a new citation makes the index stale until --write.
    let index = std::fs::read_to_string(root.join("results/README.md")).unwrap();
    let section = |name: &str| {
        let at = index.find(&format!("## [{name}]")).unwrap();
        index[at..].split("\n## ").next().unwrap().to_string()
    };
    assert!(
        section("2026-11-26-2gpu-nvidia-h100-80gb-hbm3").contains("- `docs/numbers.md:3`"),
        "{index}"
    );
    assert!(
        section("2026-11-24c-nvidia-h200").contains("Cited nowhere outside results/"),
        "{index}"
    );
    let other = root.join("docs/other.md");
    std::fs::write(&other, "See results/2026-11-24c-nvidia-h200 for costs.\n").unwrap();
    let o = results_py(&root, &["--check"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("results/README.md: the index of results folders differs"));
    std::fs::remove_file(&other).unwrap();

    // A result file changed under its committed table (a run more in the one-GPU test).
    let summary =
        root.join("results/2026-11-26-2gpu-nvidia-h100-80gb-hbm3/gpus-1-test-cbe-dot/summary.json");
    let text = std::fs::read_to_string(&summary).unwrap();
    let mut doc_json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let runs = &mut doc_json["result"]["rows"][0]["runs"];
    *runs = (runs.as_u64().unwrap() + 100).into();
    std::fs::write(&summary, doc_json.to_string()).unwrap();
    let o = results_py(&root, &["--check"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains(&format!("{table} differs")));
    std::fs::write(&summary, text).unwrap();

    // cost.svg edited.
    let svg = root.join("results/2026-11-24c-nvidia-h200/cost.svg");
    edit(&svg, "reduced", "kept");
    let o = results_py(&root, &["--check"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("results/2026-11-24c-nvidia-h200/cost.svg: cost-svg of results/2026-11-24c-nvidia-h200 differs"),
        "{}",
        stderr(&o)
    );
    let o = results_py(&root, &["--write"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        std::fs::read(&svg).unwrap(),
        std::fs::read(repo().join("results/2026-11-24c-nvidia-h200/cost.svg")).unwrap()
    );

    // Broken markers: no end, an unknown table, a folder that is not there.
    for (marker, says) in [
        (
            "<!-- results.py results/2026-11-26-2gpu-nvidia-h100-80gb-hbm3 gpus -->\n",
            "has no `<!-- /results.py -->` after it",
        ),
        (
            "<!-- results.py results/2026-11-26-2gpu-nvidia-h100-80gb-hbm3 gpu -->\n<!-- /results.py -->\n",
            "unknown table gpu",
        ),
        (
            "<!-- results.py results/2026-11-26-3gpu gpus -->\n<!-- /results.py -->\n",
            "no results folder results/2026-11-26-3gpu",
        ),
    ] {
        std::fs::write(root.join("docs/broken.md"), format!("x\n{marker}")).unwrap();
        let o = results_py(&root, &["--check"]);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("docs/broken.md:2: ") && stderr(&o).contains(says),
            "{marker}: {}",
            stderr(&o)
        );
    }
}

/// The cost table says how many runs of each variant erred: a fence-less study's program as
/// written errs, and its ratios are over those runs (ct-octree's baseline erred in all 30 cost
/// runs on the H100, ls-bh-nf's in 5; issue 47).
#[test]
fn the_cost_table_has_each_variants_errors() {
    let o = results_py(
        &repo(),
        &["results/2026-11-27i-stress-nvidia-h100-80gb-hbm3", "cost"],
    );
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        out.contains("| study | variant | fences | errors | kernel ms"),
        "{out}"
    );
    assert!(
        out.contains("\n| ct-octree | none | 0 | 30 of 30 | "),
        "{out}"
    );
    assert!(
        out.contains("\n| ls-bh-nf | none | 0 | 5 of 30 | "),
        "{out}"
    );
    assert!(
        out.contains("\n| ls-bh-nf | all | 75 | 0 of 30 | "),
        "{out}"
    );
}

//! `wmfix report`: one self-contained HTML page of an output folder, or of the GPU script's
//! step folders (`--from`). On copies of the committed H100 results of each case study and on
//! an output folder wmfix itself made (a stand-in's test, reduction and cost): the page holds
//! the numbers of the files (error rates with their intervals, kept fence ids at file:line with
//! their source lines, wall seconds, the journal's requests, the cost means), fetches nothing,
//! and bad input fails with its exit code. The committed example page is what `wmfix report`
//! makes of its results now (`scripts/report-example.sh` remakes it).

mod common;
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The H100 results with a reduction, its cost and tests of each fence-less case study.
const H100: &str = "results/2026-11-25-nvidia-h100-80gb-hbm3";
const STUDIES: [&str; 7] = [
    "cbe-dot",
    "cbe-ht",
    "ct-octree",
    "cub-scan-nf",
    "ls-bh-nf",
    "sdk-red-nf",
    "tpo-tm",
];

/// A JSON file's value, unwrapped from the GPU script's `{"meta", "result"}`.
fn json(path: &Path) -> Value {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    match v.get("meta").and(v.get("result")) {
        Some(r) => r.clone(),
        None => v,
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

fn pct(p: f64) -> String {
    format!("{:.1}%", 100.0 * p)
}

fn commas(n: u64) -> String {
    let d = n.to_string();
    let mut out = String::new();
    for (i, c) in d.chars().enumerate() {
        if i > 0 && (d.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Copies the step folders `steps` of `results` into `dest`; their paths there.
fn copy_steps(results: &str, steps: &[String], dest: &Path) -> Vec<PathBuf> {
    steps
        .iter()
        .map(|s| copy_tree(&repo().join(results).join(s), dest))
        .collect()
}

/// `wmfix report` with `args` in `cwd`, which must succeed; the page it wrote.
/// The page `report STUDY --from STEP --out page` makes from the H100 results' STEP (copied).
fn report_of_step(step: &str, study: &str) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let dirs = copy_steps(H100, &[step.to_string()], tmp.path());
    let app = repo().join("case-studies").join(study);
    let from = dirs[0].to_str().unwrap();
    report_ok(
        tmp.path(),
        &[app.to_str().unwrap(), "--from", from, "--out", "page"],
    )
    .0
}

fn report_ok(cwd: &Path, args: &[&str]) -> (String, PathBuf) {
    let o = run(cwd, &[&["report"], args].concat());
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let path = stdout(&o)
        .trim()
        .strip_prefix("wmfix: report in ")
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("{}", stdout(&o)));
    (std::fs::read_to_string(&path).unwrap(), path)
}

/// Nothing on the page is fetched or run: no script, style sheet, import, url() or src, and
/// every link an anchor of the page itself; the only http is SVG's namespace.
fn self_contained(html: &str) {
    for bad in [
        "<script", "<link", "@import", "url(", " src=", "<iframe", "<object",
    ] {
        assert!(!html.contains(bad), "{bad} in the page");
    }
    for href in html.split(" href=\"").skip(1) {
        assert!(
            href.starts_with('#'),
            "a link out: {}",
            &href[..40.min(href.len())]
        );
    }
    let http = html.matches("http").count();
    let ns = html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count();
    assert_eq!(http, ns, "http outside SVG namespaces");
    assert!(html.starts_with("<!DOCTYPE html>") && html.ends_with("</html>\n"));
}

/// The test table holds each row of each summary: runs, errors, rate and Wilson interval.
fn has_test_rows(html: &str, summary: &Value) {
    for row in summary["rows"].as_array().unwrap() {
        let n = row["runs"].as_u64().unwrap();
        let errors = ["fail", "timeout", "crash"]
            .iter()
            .map(|k| row[k].as_u64().unwrap())
            .sum::<u64>();
        let (lo, hi) = wmfix::stats::wilson95(errors as usize, n as usize);
        let expect = format!(
            "<td><code>{}</code></td><td><code>{}</code></td><td class=\"num\">{}</td>",
            esc(summary["fences"].as_str().unwrap()),
            esc(row["env"].as_str().unwrap()),
            commas(n)
        );
        let at = html.find(&expect).unwrap_or_else(|| panic!("{expect}"));
        let line = &html[at..at + html[at..].find("</tr>").unwrap()];
        assert!(
            line.contains(&format!(">{}</span>", commas(errors))),
            "{line}"
        );
        let rate = pct(errors as f64 / n as f64);
        assert!(line.contains(&format!(">{rate}<")), "{rate}: {line}");
        let interval = format!("{} - {}", pct(lo), pct(hi));
        assert!(line.contains(&interval), "{interval}: {line}");
        assert!(line.contains("<svg"), "an interval bar: {line}");
    }
}

/// The reduction's numbers, each kept fence at its file:line with its access highlighted in
/// the source lines, and the model's completion.
fn has_reduction(html: &str, r: &Value) {
    let kept = r["kept"].as_array().unwrap();
    let headline = format!("{} &rarr; {} fences", r["initial_fences"], kept.len());
    assert!(html.contains(&headline), "{headline}");
    let wall = format!(">{:.1}<", r["wall_seconds"].as_f64().unwrap());
    assert!(html.contains(&wall), "wall seconds {wall}");
    let runs = format!(">{}<", commas(r["result"]["runs"].as_u64().unwrap()));
    assert!(html.contains(&runs), "runs {runs}");
    for k in kept {
        let id = k["id"].as_u64().unwrap();
        let card_at = html
            .find(&format!("id=\"fence-{id}\""))
            .unwrap_or_else(|| panic!("fence {id}"));
        let card = &html[card_at..card_at + html[card_at..].find("</div>").unwrap()];
        let location = k["location"].as_str().unwrap();
        assert!(
            card.contains(&format!("at <code>{}</code>", esc(location))),
            "{card}"
        );
        let access = k["access"].as_str().unwrap().lines().next().unwrap().trim();
        let fence_line = card
            .split("<span class=\"fence\">")
            .nth(1)
            .unwrap_or_else(|| panic!("no highlighted line: {card}"));
        let fence_line = &fence_line[..fence_line.find("</span>").unwrap()];
        assert!(fence_line.contains(&esc(access)), "{access}: {fence_line}");
    }
    for c in r["model"]["fences"].as_array().unwrap() {
        let line = format!(
            "Model completion:</strong> fence {} ({} on <code>{}</code>)",
            c["id"],
            c["side"].as_str().unwrap(),
            esc(c["variable"].as_str().unwrap())
        );
        assert!(html.contains(&line), "{line}");
    }
}

fn has_journal(html: &str, journal: &Path) {
    let requests = std::fs::read_to_string(journal).unwrap().lines().count() - 1;
    let line = format!("<strong>{requests} requests, ");
    assert!(html.contains(&line), "{line}");
    // Two charts of the requests, with a point per request each.
    let charts = html.split("<section id=\"reduce\">").nth(1).unwrap();
    let charts = &charts[..charts.find("</section>").unwrap()];
    assert_eq!(charts.matches("<circle").count(), 2 * requests);
}

fn has_cost(html: &str, cost: &Value) {
    for row in cost["rows"].as_array().unwrap() {
        let cells = format!(
            "<tr><td><code>{}</code></td><td class=\"num\">{}</td><td class=\"num\">{}</td>",
            esc(row["variant"].as_str().unwrap()),
            commas(row["fences"].as_u64().unwrap()),
            commas(row["runs"].as_u64().unwrap())
        );
        assert!(html.contains(&cells), "{cells}");
        if let Some(w) = row["wall_s"].as_object() {
            let mean = format!(
                "{:.4} &plusmn; {:.4}",
                w["mean"].as_f64().unwrap(),
                w["ci95"].as_f64().unwrap()
            );
            assert!(html.contains(&mean), "{mean}");
        }
    }
    assert!(html.contains("<section id=\"cost\">") && html.contains("wall time"));
}

#[test]
fn a_page_of_each_case_studys_committed_gpu_results() {
    for study in STUDIES {
        let tmp = tempfile::tempdir().unwrap();
        let steps: Vec<String> = [
            "stress-{}-no",
            "stress-{}-aim-shipped",
            "reduce-{}",
            "completed-{}",
            "cost-{}",
        ]
        .iter()
        .map(|s| s.replace("{}", study))
        .collect();
        let dirs = copy_steps(H100, &steps, tmp.path());
        let app = repo().join("case-studies").join(study);
        let mut args = vec![app.to_str().unwrap().to_string()];
        for d in &dirs {
            args.extend(["--from".to_string(), d.display().to_string()]);
        }
        args.extend(["--out".into(), "page".into()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (html, path) = report_ok(tmp.path(), &args);
        assert_eq!(
            path,
            tmp.path().join("page/report.html").canonicalize().unwrap()
        );
        self_contained(&html);
        assert!(html.contains(&format!("<title>wmfix report: {study}</title>")));
        for d in &dirs {
            if d.join("summary.json").is_file() {
                has_test_rows(&html, &json(&d.join("summary.json")));
            }
        }
        let reduce = tmp.path().join(format!("reduce-{study}"));
        has_reduction(&html, &json(&reduce.join("reduce.json")));
        if reduce.join("journal.jsonl").is_file() {
            has_journal(&html, &reduce.join("journal.jsonl"));
        } else {
            assert!(html.contains("No <code>journal.jsonl</code> beside the record"));
        }
        has_cost(
            &html,
            &json(&tmp.path().join(format!("cost-{study}/cost.json"))),
        );
        // Each file's GPU, as the GPU script kept it.
        assert!(
            html.contains("GPU NVIDIA H100 80GB HBM3; driver 580.159.04"),
            "{study}"
        );
    }
}

#[test]
fn a_cache_operator_calls_fence_is_after_a_load_store_call_not_an_atomic() {
    // ct-octree's reduction on the H100 kept fences after `__stcg(...)` and `__ldcg(...)`
    // statements, which its reduce.json (made before fences.json told calls apart) calls
    // atomics, and one after an `atomicCAS`.
    let html = report_of_step("reduce-ct-octree", "ct-octree");
    let card = |id: u32| {
        let at = html.find(&format!("id=\"fence-{id}\"")).unwrap();
        html[at..at + html[at..].find("</h3>").unwrap()].to_string()
    };
    for (id, says) in [
        (
            2,
            "after load/store call <code>__stcg(&amp;o.q_range[b * o.cap + tl], t.range);</code>",
        ),
        (
            13,
            "after load/store call <code>t.range = __ldcg(&amp;o.q_range[v * o.cap + top]);</code>",
        ),
        (
            10,
            "after atomic <code>(tl == top &amp;&amp; atomicCAS(&amp;o.head[b], old, reset) == old)</code>",
        ),
        (9, "after store <code>o.tail[b] = 0;</code>"),
    ] {
        assert!(card(id).contains(says), "fence {id}: {}", card(id));
    }
}

#[test]
fn a_page_of_the_other_case_studies_committed_results() {
    // The fenced studies' tests (warm, on an H100), the library study's test with every fence.
    let tests = [
        (
            "cub-scan",
            "results/2026-11-27c-warm-nvidia-h100-80gb-hbm3/warm-fenced-cub-scan",
        ),
        (
            "ls-bh",
            "results/2026-11-27c-warm-nvidia-h100-80gb-hbm3/warm-fenced-ls-bh",
        ),
        (
            "sdk-red",
            "results/2026-11-27c-warm-nvidia-h100-80gb-hbm3/warm-fenced-sdk-red",
        ),
        (
            "cub-scan-lib",
            "results/2026-11-25-nvidia-h100-80gb-hbm3/cub-scan-lib-sys-all",
        ),
    ];
    for (study, step) in tests {
        let tmp = tempfile::tempdir().unwrap();
        let copy = copy_tree(&repo().join(step), tmp.path());
        let app = repo().join("case-studies").join(study);
        let args = [
            app.to_str().unwrap(),
            "--from",
            copy.to_str().unwrap(),
            "--out",
            "p",
        ];
        let (html, _) = report_ok(tmp.path(), &args);
        self_contained(&html);
        has_test_rows(&html, &json(&copy.join("summary.json")));
        assert!(
            !html.contains("<section id=\"reduce\">"),
            "{study}: no reduction, no section"
        );
    }
    // The library study's reduction in preprocessed mode: its one fence is in CUB's header.
    let tmp = tempfile::tempdir().unwrap();
    let step = "results/2026-11-26b-nvidia-h100-80gb-hbm3/reduce-cub-scan-lib-nf";
    let copy = copy_tree(&repo().join(step), tmp.path());
    let app = repo().join("case-studies/cub-scan-lib-nf");
    let args = [
        app.to_str().unwrap(),
        "--from",
        copy.to_str().unwrap(),
        "--out",
        "p",
    ];
    let (html, _) = report_ok(tmp.path(), &args);
    assert!(html.contains("fence 784 at <code>cub/thread/thread_store.cuh:130:5</code>"));
    assert!(html.contains("In a library header, outside the application's folder"));
    has_journal(&html, &copy.join("journal.jsonl"));
    // sdk-red-tmpl's reduction dropped every fence: none was ever run on global memory.
    let step = "results/2026-11-26-nvidia-h100-80gb-hbm3/coverage-reduce-sdk-red-tmpl";
    let copy = copy_tree(&repo().join(step), tmp.path());
    let app = repo().join("case-studies/sdk-red-tmpl");
    let args = [
        app.to_str().unwrap(),
        "--from",
        copy.to_str().unwrap(),
        "--out",
        "q",
    ];
    let (html, _) = report_ok(tmp.path(), &args);
    assert!(html.contains("12 &rarr; 0 fences") && html.contains("The reduction kept no fence."));
}

/// `--from` without `--out` writes the page where `report` and every other command write
/// theirs: DIR/wmfix-out, DIR the application's folder or `.` (it needed --out; issue 47).
#[test]
fn from_without_out_writes_into_dirs_wmfix_out() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs = copy_steps(H100, &["reduce-ls-bh-nf".into()], tmp.path());
    let step = dirs[0].to_str().unwrap();
    let (html, path) = report_ok(tmp.path(), &["--from", step]);
    assert_eq!(
        path,
        tmp.path()
            .join("wmfix-out/report.html")
            .canonicalize()
            .unwrap()
    );
    assert!(html.contains("75 &rarr; 3 fences"), "{html}");
    let app = tmp.path().join("app");
    std::fs::create_dir(&app).unwrap();
    std::fs::copy(
        repo().join("case-studies/ls-bh-nf/bh.cu"),
        app.join("bh.cu"),
    )
    .unwrap();
    let (html, path) = report_ok(tmp.path(), &["app", "--from", step]);
    assert_eq!(
        path,
        app.join("wmfix-out/report.html").canonicalize().unwrap()
    );
    // The kept fences' source lines come from DIR.
    assert!(html.contains("<span class=\"fence\">"), "{html}");
}

#[test]
fn a_source_changed_since_the_reduction_shows_where_its_access_is_now() {
    // ls-bh-nf's bh.cu gained a line after this reduction: the access moved down by one.
    let tmp = tempfile::tempdir().unwrap();
    let dirs = copy_steps(H100, &["reduce-ls-bh-nf".into()], tmp.path());
    let app = repo().join("case-studies/ls-bh-nf");
    let from = dirs[0].to_str().unwrap();
    let (html, _) = report_ok(
        tmp.path(),
        &[app.to_str().unwrap(), "--from", from, "--out", "page"],
    );
    assert!(
        html.contains(
            "bh.cu changed since the reduction; the access is now at line 96 (recorded at 95)"
        ),
        "{html}"
    );
    // Without the application's folder, the sources are those the record names; where they
    // are not, the page says how to give them.
    let record = dirs[0].join("reduce.json");
    let text = std::fs::read_to_string(&record).unwrap();
    let moved = text.replace("\"app\": \"/work/main/", "\"app\": \"/nowhere/");
    assert_ne!(text, moved);
    std::fs::write(&record, moved).unwrap();
    let (html, _) = report_ok(
        tmp.path(),
        &["--from", dirs[0].to_str().unwrap(), "--out", "q"],
    );
    assert!(
        html.contains("give its folder (<code>wmfix report DIR</code>)"),
        "{html}"
    );
    assert!(!html.contains("<span class=\"fence\">"));
}

/// A stand-in's test, reduction and cost in its own output folder, made by wmfix.
fn standin_with_records() -> (tempfile::TempDir, PathBuf) {
    let (tmp, dir) = fixture("reduce-standin");
    let body: String = (0..10).map(|i| format!("  a[{i}] = {i};\n")).collect();
    std::fs::write(
        dir.join("kernel.cu"),
        format!("__global__ void k(int *a) {{\n{body}}}\n"),
    )
    .unwrap();
    let go = |args: &[&str]| {
        let o = wmfix()
            .current_dir(tmp.path())
            .args(args)
            .env("STANDIN_REQUIRED", "3,7")
            .env("STANDIN_PERCENT", "50")
            .output()
            .unwrap();
        assert!(
            o.status.code() == Some(0) || o.status.code() == Some(2),
            "{args:?}: {}",
            stderr(&o)
        );
    };
    go(&[
        "test",
        "reduce-standin",
        "--runs",
        "20",
        "--env",
        "sys-str+,no-str-",
    ]);
    go(&["reduce", "reduce-standin", "--hours", "1"]);
    go(&["cost", "reduce-standin", "--rounds", "2"]);
    (tmp, dir)
}

#[test]
fn a_page_of_an_output_folder_wmfix_made() {
    let (tmp, dir) = standin_with_records();
    let out = dir.join("wmfix-out");
    let before = snapshot_bytes(&out);
    let (html, path) = report_ok(tmp.path(), &["reduce-standin"]);
    assert_eq!(path, out.canonicalize().unwrap().join("report.html"));
    self_contained(&html);
    has_test_rows(&html, &json(&out.join("test/summary.json")));
    let r = json(&out.join("reduce/reduce.json"));
    assert_eq!(
        r["result"]["fences"],
        serde_json::json!([3, 7]),
        "the stand-in's fences"
    );
    has_reduction(&html, &r);
    has_journal(&html, &out.join("reduce/journal.jsonl"));
    has_cost(&html, &json(&out.join("cost/cost.json")));
    assert!(html.contains("kernel.cu:5:3") && html.contains("kernel.cu:9:3"));
    // Each kept fence says why: the check that erred without it.
    assert_eq!(
        html.matches("<p>Why: stress: erred without it in ").count(),
        2
    );
    // Only the page was written (and the lock file, which every command holds).
    let after: Vec<_> = snapshot_bytes(&out)
        .into_iter()
        .filter(|(p, _)| !p.ends_with("report.html") && !p.ends_with(".wmfix-lock"))
        .collect();
    let before: Vec<_> = before
        .into_iter()
        .filter(|(p, _)| !p.ends_with(".wmfix-lock"))
        .collect();
    assert_eq!(before, after);
    // The output folder itself, and the current folder by default, give the same page.
    let (again, _) = report_ok(tmp.path(), &[out.to_str().unwrap()]);
    let (here, _) = report_ok(&dir, &[]);
    assert_eq!(html, again);
    assert_eq!(html, here);
}

/// `wmfix report` with `args` in `cwd`, which must fail with `code` and say `says`.
fn fails(cwd: &Path, args: &[&str], code: i32, says: &str) {
    let o = run(cwd, &[&["report"], args].concat());
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(code), "{args:?}: {err}");
    assert!(err.contains(says), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn bad_input_fails_with_its_exit_code_naming_the_file() {
    let (tmp, dir) = standin_with_records();
    let t = tmp.path();
    fails(t, &["nowhere"], 66, "nowhere: no such folder");
    std::fs::create_dir(t.join("app-without-records")).unwrap();
    fails(
        t,
        &["app-without-records"],
        66,
        "no such output folder: nothing to report",
    );
    // A marked output folder with nothing to report in it.
    let empty = t.join("empty/wmfix-out");
    std::fs::create_dir_all(&empty).unwrap();
    std::fs::write(
        empty.join(".wmfix-output"),
        "wmfix output folder (format 1)\n",
    )
    .unwrap();
    fails(t, &["empty"], 66, "nothing to report in");
    assert!(!empty.join("report.html").exists());
    // A user's folder is not an output folder: refused, untouched.
    std::fs::write(t.join("notes.txt"), "mine").unwrap();
    fails(
        t,
        &["--from", "reduce-standin", "--out", "."],
        66,
        "nothing to report in",
    );
    let step = copy_steps(H100, &["reduce-cbe-dot".into()], t).remove(0);
    fails(
        t,
        &["--from", step.to_str().unwrap(), "--out", "."],
        73,
        "not made by wmfix",
    );
    assert!(!t.join("report.html").exists());
    // Two reductions are one too many.
    let two = [
        "--from",
        step.to_str().unwrap(),
        "--from",
        step.to_str().unwrap(),
        "--out",
        "p",
    ];
    fails(t, &two, 64, "a report shows one reduction");

    // Malformed files, each named.
    let out = dir.join("wmfix-out");
    let summary = out.join("test/summary.json");
    let good = std::fs::read_to_string(&summary).unwrap();
    std::fs::write(&summary, &good[..good.len() / 2]).unwrap();
    fails(
        t,
        &["reduce-standin"],
        65,
        "test/summary.json: not a readable test summary",
    );
    std::fs::write(&summary, r#"{"meta": {}, "result": {"rows": 3}}"#).unwrap();
    fails(
        t,
        &["reduce-standin"],
        65,
        "test/summary.json: not a readable test summary",
    );
    std::fs::write(&summary, good).unwrap();
    let journal = out.join("reduce/journal.jsonl");
    let text = std::fs::read_to_string(&journal).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[2] = "{\"nonce\": oops}";
    std::fs::write(&journal, lines.join("\n") + "\n").unwrap();
    fails(
        t,
        &["reduce-standin"],
        65,
        "reduce/journal.jsonl:3: not a readable journal line",
    );
    // A journal cut short by a kill loses only its last line.
    std::fs::write(&journal, &text[..text.len() - 10]).unwrap();
    let (html, _) = report_ok(t, &["reduce-standin"]);
    assert!(
        html.contains("Its last line was cut short"),
        "the torn line is said"
    );
    std::fs::write(out.join("cost/cost.json"), "[]").unwrap();
    fails(
        t,
        &["reduce-standin"],
        65,
        "cost/cost.json: not a readable cost record",
    );
}

#[test]
fn report_help_fits_a_screen_and_says_where_the_page_goes() {
    let o = wmfix().args(["report", "--help"]).output().unwrap();
    let text = stdout(&o);
    for words in ["report.html", "--from", "evidence.sh", "\"meta\""] {
        assert!(text.contains(words), "{words}:\n{text}");
    }
}

/// The step folders the committed example page is made of.
pub const EXAMPLE: [&str; 3] = [
    "results/2026-11-27-nvidia-h100-80gb-hbm3/stress-ls-bh-nf-sys-shipped",
    "results/2026-11-27-nvidia-h100-80gb-hbm3/reduce-ls-bh-nf",
    "results/2026-11-25-nvidia-h100-80gb-hbm3/cost-ls-bh-nf",
];

#[test]
fn the_committed_example_page_is_what_wmfix_report_makes_of_its_results() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("page");
    let mut args = vec!["report", "case-studies/ls-bh-nf"];
    for d in EXAMPLE {
        args.extend(["--from", d]);
    }
    args.extend(["--out", out.to_str().unwrap()]);
    let o = run(&repo(), &args);
    assert!(o.status.success(), "{}", stderr(&o));
    let made = std::fs::read_to_string(out.join("report.html")).unwrap();
    let committed = repo().join("docs/src/examples/report-ls-bh-nf.html");
    let committed = std::fs::read_to_string(&committed).unwrap_or_default();
    assert!(
        made == committed,
        "docs/src/examples/report-ls-bh-nf.html is not what wmfix report makes now: run scripts/report-example.sh"
    );
}

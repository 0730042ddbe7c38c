//! `wmfix report`: one self-contained HTML page of an output folder (`report/`), written into it
//! as `report.html`; or of the GPU script's step folders (`--from`), written into `--out`
//! (`DIR/wmfix-out` by default, as every command's output folder).

use crate::exit_code::{self, fail};
use crate::out_dir::{self, OutDir};
use crate::report::files::Found;
use crate::report::{self, Inputs};
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    /// The application's folder (its wmfix-out is read; the kept fences' source lines come from
    /// it), or an output folder itself [default: .].
    dir: Option<PathBuf>,
    /// The output folder to read, and to write report.html into [default: DIR/wmfix-out].
    #[arg(long, short)]
    out: Option<PathBuf>,
    /// Read a step folder of scripts/gpu/evidence.sh instead (summary.json, reduce.json,
    /// journal.jsonl or cost.json at its top level, each as wmfix wrote it or wrapped as
    /// {"meta", "result"}); repeat it for several: their test tables add up, one reduction and
    /// one cost record at most. The page goes to --out, as without --from (DIR/wmfix-out).
    #[arg(long, value_name = "STEP_DIR")]
    from: Vec<PathBuf>,
}

/// Where the page's files come from and where it goes.
struct Plan {
    out: PathBuf,
    /// The application's folder named on the command line.
    app: Option<PathBuf>,
}

fn plan(args: &Args) -> Plan {
    match (&args.dir, &args.out) {
        (dir, Some(out)) => Plan {
            out: out.clone(),
            app: dir.clone().filter(|d| !out_dir::is_output(d)),
        },
        (Some(dir), None) if out_dir::is_output(dir) => Plan {
            out: dir.clone(),
            app: None,
        },
        (dir, None) => {
            let d = dir.clone().unwrap_or_else(|| PathBuf::from("."));
            Plan {
                out: super::default_out(&d, None),
                app: dir.clone(),
            }
        }
    }
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let plan = plan(&args);
    if let Some(app) = plan.app.as_deref().filter(|a| !a.is_dir()) {
        return Err(fail(
            exit_code::NO_INPUT,
            format!("{}: no such folder", app.display()),
        ));
    }
    let inputs: Vec<PathBuf> = plan.app.iter().cloned().collect();
    let (out, found) = if args.from.is_empty() {
        let out = open(&plan.out, &inputs, OutDir::existing)?;
        let found = Found::in_output(&out)?;
        if found.is_empty() {
            return Err(nothing_in(&out));
        }
        (out, found)
    } else {
        let mut found = Found::default();
        for dir in &args.from {
            found = found.join(Found::in_step(dir)?)?;
        }
        (open(&plan.out, &inputs, OutDir::open)?, found)
    };
    let sources = report::sources_folder(plan.app.as_deref(), &found);
    let page = report::page(&Inputs { found, sources })?;
    let path = out.report_page();
    std::fs::write(&path, page).map_err(|e| {
        fail(
            exit_code::CANT_WRITE,
            format!("{}: cannot write: {e}", path.display()),
        )
    })?;
    println!("wmfix: report in {}", path.display());
    Ok(exit_code::OK)
}

/// The output folder, opened by `how`; a missing one says what makes it, a busy one to wait.
fn open(
    path: &Path,
    inputs: &[PathBuf],
    how: fn(&Path, &[PathBuf]) -> anyhow::Result<OutDir>,
) -> anyhow::Result<OutDir> {
    how(path, inputs).map_err(|e| match exit_code::code_of(&e) {
        exit_code::NO_INPUT => fail(
            exit_code::NO_INPUT,
            format!("{e}: nothing to report (run `wmfix test`, `reduce` or `cost` first, or give the application's folder)"),
        ),
        exit_code::BUSY => fail(
            exit_code::BUSY,
            format!(
                "{}: another wmfix is using this output folder; run `wmfix report` once it ends",
                path.display()
            ),
        ),
        _ => e,
    })
}

fn nothing_in(out: &OutDir) -> anyhow::Error {
    fail(
        exit_code::NO_INPUT,
        format!(
            "nothing to report in {}: no test/summary.json, reduce/reduce.json, reduce/journal.jsonl or cost/cost.json (run `wmfix test`, `reduce` or `cost` first)",
            out.root().display()
        ),
    )
}

#[cfg(test)]
mod tests {
    use crate::cmd::test::{Counts, Plan, Row, Summary};
    use crate::fences::set::FenceSet;
    use crate::report::test_table;

    #[test]
    fn the_page_reads_the_summary_wmfix_test_writes() {
        let row = Row {
            counts: Counts {
                env: "aim-str+".into(),
                runs: 40,
                pass: 30,
                fail: 8,
                timeout: 1,
                crash: 1,
            },
            seconds: 20.0,
            coverage: None,
        };
        let written = Summary {
            app: "/app".into(),
            fences: FenceSet::parse("0,3").unwrap(),
            seed: 1,
            jobs: 1,
            plan: Plan::default(),
            rows: vec![row],
            interrupted: true,
            resumed_runs: 0,
            profile: None,
            sanity: Default::default(),
            steps: 10,
            warm_check: None,
        };
        let text = serde_json::to_string(&written).unwrap();
        let read: test_table::Summary = serde_json::from_str(&text).unwrap();
        assert_eq!(read.app, written.app);
        assert_eq!(read.fences, written.fences);
        assert_eq!(read.steps, Some(10));
        assert!(read.interrupted);
        let r = &read.rows[0];
        assert_eq!(
            (r.counts.env.as_str(), r.counts.runs, r.counts.errors()),
            ("aim-str+", 40, 10)
        );
        assert_eq!(r.seconds, 20.0);
    }
}

//! Tests of `wmfix test`'s rows and table.

use super::*;

#[test]
fn a_row_is_written_and_shown_field_by_field_in_order() {
    let row = Row {
        counts: Counts {
            env: "sys-str+".into(),
            runs: 40,
            pass: 30,
            fail: 8,
            timeout: 1,
            crash: 1,
        },
        seconds: 20.0,
        coverage: None,
    };
    assert_eq!(
        serde_json::to_string(&row).unwrap(),
        r#"{"env":"sys-str+","runs":40,"pass":30,"fail":8,"timeout":1,"crash":1,"seconds":20.0}"#
    );
    let summary = Summary {
        app: "/app".into(),
        fences: FenceSet::All,
        seed: 1,
        jobs: 1,
        plan: Plan::default(),
        rows: vec![row],
        interrupted: false,
        resumed_runs: 0,
        profile: None,
        sanity: Default::default(),
        steps: 1,
        warm_check: None,
    };
    assert_eq!(
        serde_json::to_string(&table_rows(&summary)).unwrap(),
        r#"[{"env":"sys-str+","runs":40,"pass":30,"fail":8,"timeout":1,"crash":1,"errors":10,"error_rate":0.25,"ci95":[0.14187118639096302,0.40193961420768026],"effective":true,"runs_per_hour":7200.0,"seconds":20.0}]"#
    );
    assert_eq!(
        table(&summary),
        "env           runs   pass   fail timeout  crash  errors            95% CI effective    runs/h\n\
         sys-str+        40     30      8       1      1   25.0%    [14.2%, 40.2%]       yes      7200\n"
    );
    assert_eq!(status(&summary.rows[0]), "errors 10 (25.0%), 2.0 runs/s");
    // Ten steps a run: 25% of runs is 2.84% a step, were steps independent.
    let ten = Summary {
        steps: 10,
        ..summary
    };
    let rows = table_rows(&ten);
    assert!((rows[0].step_error_rate.unwrap() - 0.028_35).abs() < 1e-4);
    assert!(
        table(&ten)
            .ends_with("runs of 10 steps; errors a step, were steps independent: sys-str+ 2.84%\n"),
        "{}",
        table(&ten)
    );
}

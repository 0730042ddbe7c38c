//! What `wmfix litmus` prints: the outcome histogram and rates as text, or as one JSON object
//! (`--json`) for scripts such as the peer benchmark.

use crate::litmus::engine::{Counts, DeviceInfo, Job, Settings, weak_outcome};
use crate::litmus::vocabulary::Test;
use serde_json::{Value, json};

/// The outcomes summed over the job's distances: `[r0 r1 = 00, 01, 10, 11]`.
fn totals(c: &Counts) -> [u64; 4] {
    let mut t = [0u64; 4];
    for o in &c.outcomes {
        for k in 0..4 {
            t[k] += o[k];
        }
    }
    t
}

fn distances(job: &Job) -> String {
    if job.ndist > 1 {
        format!("{}..{}", job.d0, job.d0 + job.ndist - 1)
    } else {
        job.d0.to_string()
    }
}

/// The histogram and rates `wmfix litmus` prints.
pub fn report(test: Test, job: &Job, c: &Counts) -> String {
    let names = ["r0=0 r1=0", "r0=0 r1=1", "r0=1 r1=0", "r0=1 r1=1"];
    let weak_i = weak_outcome(test);
    let totals = totals(c);
    let mut out = format!(
        "{test} at distance{} {}: {} instances in {} launches, {:.3} s\n",
        if job.ndist > 1 { "s" } else { "" },
        distances(job),
        c.instances,
        c.launches,
        c.seconds
    );
    for (k, name) in names.iter().enumerate() {
        let tag = if k == weak_i { "  <- weak" } else { "" };
        out += &format!("  {name}: {:>14}{tag}\n", totals[k]);
    }
    if c.missing > 0 {
        out += &format!(
            "  missing: {:>12}  (instances that did not report)\n",
            c.missing
        );
    }
    let secs = c.seconds.max(1e-9);
    out += &format!(
        "  weak: {} ({:.3e} of instances); {:.3e} weak/s; {:.3e} instances/s\n",
        totals[weak_i],
        totals[weak_i] as f64 / c.instances.max(1) as f64,
        totals[weak_i] as f64 / secs,
        c.instances as f64 / secs
    );
    out
}

/// What one `wmfix litmus` measured, with everything needed to read it later.
pub struct Measured<'a> {
    pub test: Test,
    pub job: &'a Job,
    pub counts: &'a Counts,
    pub settings: &'a Settings,
    pub gpu: &'a DeviceInfo,
    /// `none`, `default` or the profile's path, as given to `--stress`.
    pub stress: String,
    pub command: String,
    pub date: String,
}

/// The `--json` object. `instances` is every instance run (launches x instances per launch),
/// each one execution of the test by its two threads; `weak` is how many of them ended in the
/// test's weak outcome (`weak_outcome`, `r0 r1` as two digits); `seconds` is the wall time from
/// the first timed launch until the histogram is back on the host (one untimed launch before it
/// keeps module loading and first-touch costs out), so the rates are per second of GPU work
/// including the evaluation kernel and the resets between launches.
pub fn json(m: &Measured) -> Value {
    let c = m.counts;
    let totals = totals(c);
    let weak_i = weak_outcome(m.test);
    let weak = totals[weak_i];
    let secs = c.seconds.max(1e-9);
    json!({
        "format": 1,
        "gpu": m.gpu.name,
        "driver": m.gpu.driver,
        "arch": m.gpu.arch,
        "multiprocessors": m.gpu.multiprocessors,
        "date": m.date,
        "command": m.command,
        "test": m.test,
        "distances": distances(m.job),
        "stress": m.stress,
        "sequence": m.job.sequence,
        "settings": m.settings,
        "launches": c.launches,
        "instances": c.instances,
        "seconds": c.seconds,
        "outcomes": {"00": totals[0], "01": totals[1], "10": totals[2], "11": totals[3]},
        "missing": c.missing,
        "weak_outcome": format!("{}{}", weak_i / 2, weak_i % 2),
        "weak": weak,
        "weak_fraction": weak as f64 / c.instances.max(1) as f64,
        "weak_per_s": weak as f64 / secs,
        "instances_per_s": c.instances as f64 / secs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::litmus::engine::Locations;
    use crate::litmus::vocabulary::Sequence;

    fn job() -> Job {
        Job {
            test: Test::Mp,
            d0: 64,
            ndist: 1,
            executions: 8,
            sequence: Sequence::parse("st ld").unwrap(),
            locations: Locations::None,
        }
    }

    fn counts() -> Counts {
        Counts {
            outcomes: vec![[3, 2, 1, 2]],
            missing: 0,
            instances: 8,
            launches: 1,
            seconds: 0.5,
        }
    }

    #[test]
    fn the_report_marks_the_weak_outcome() {
        let r = report(Test::Mp, &job(), &counts());
        assert!(r.contains("MP at distance 64: 8 instances"), "{r}");
        assert!(r.contains("r0=1 r1=0:              1  <- weak"), "{r}");
        assert!(
            r.contains("weak: 1 (1.250e-1 of instances); 2.000e0 weak/s; 1.600e1 instances/s"),
            "{r}"
        );
    }

    #[test]
    fn the_json_has_the_rates_and_how_they_were_measured() {
        let gpu = DeviceInfo {
            name: "NVIDIA H200".into(),
            driver: "580 (CUDA 13.0)".into(),
            arch: 90,
            multiprocessors: 132,
        };
        let settings = Settings {
            pack: 4,
            ..Settings::default()
        };
        let (j, c) = (job(), counts());
        let v = json(&Measured {
            test: Test::Lb,
            job: &j,
            counts: &c,
            settings: &settings,
            gpu: &gpu,
            stress: "none".into(),
            command: "wmfix litmus lb".into(),
            date: "2026-11-24T00:00:00Z".into(),
        });
        assert_eq!(v["test"], "LB");
        assert_eq!(v["weak_outcome"], "11");
        assert_eq!(v["weak"], 2);
        assert_eq!(v["weak_fraction"], 0.25);
        assert_eq!(v["weak_per_s"], 4.0);
        assert_eq!(v["instances_per_s"], 16.0);
        assert_eq!(v["outcomes"]["01"], 2);
        assert_eq!(v["settings"]["pack"], 4);
        assert_eq!(v["sequence"], "st ld");
        assert_eq!(v["gpu"], "NVIDIA H200");
    }
}

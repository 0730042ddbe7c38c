//! The paper's Alg. 1 against wmfix's improvements, on the same simulated applications: oracle
//! checks, runs and (simulated) run time. Run: `cargo bench --bench reduce_strategies`.
//!
//! Each application errs with probability p per run unless its required fences are enabled; a
//! run takes 0.175 s (cbe-dot on an H200 with 4 runs at a time: 20,537 runs/h). Results are
//! averaged over 5 seeds; "found" counts the seeds whose result is exactly the required set.

use wmfix::fences::id::{FenceId, Ids};
use wmfix::reduce::algorithm::{self, Settings, Split, Stability};
use wmfix::reduce::oracle::Simulated;

const RUN_SECONDS: f64 = 0.175;

struct Strategy {
    name: &'static str,
    split: Split,
    cache: bool,
    stability: Stability,
}

fn main() {
    let apps: [(&str, usize, &[usize]); 4] = [
        ("cbe-ht-like 10", 10, &[3, 4, 8, 9]),
        ("ct-octree-like 33", 33, &[17]),
        ("cub-scan-like 51", 51, &[5, 40]),
        ("ls-bh-like 90", 90, &[0, 31, 32, 89]),
    ];
    let strategies = [
        Strategy {
            name: "paper: halves, 60-min stability",
            split: Split::Halves,
            cache: false,
            stability: Stability::Minutes(60.0),
        },
        Strategy {
            name: "halves + cache + statistical",
            split: Split::Halves,
            cache: true,
            stability: Stability::Statistical { confidence: 0.99 },
        },
        Strategy {
            name: "ddmin + cache + statistical",
            split: Split::Ddmin,
            cache: true,
            stability: Stability::Statistical { confidence: 0.99 },
        },
    ];
    println!(
        "{:<18} {:>5} {:<34} {:>7} {:>9} {:>10} {:>6}",
        "application", "p", "strategy", "checks", "runs", "run time", "found"
    );
    for (name, n, required) in apps {
        for p in [1.0, 0.05] {
            for s in &strategies {
                let (mut checks, mut runs, mut seconds, mut found) = (0, 0, 0.0, 0);
                for seed in 0..5 {
                    let mut oracle = Simulated {
                        required: required.iter().copied().map(FenceId).collect(),
                        p,
                        run_seconds: RUN_SECONDS,
                        seed,
                        runs: 0,
                    };
                    let settings = Settings {
                        split: s.split,
                        iterations: 32,
                        stability: s.stability,
                        cache: s.cache,
                        budget_seconds: 48.0 * 3600.0,
                    };
                    let all: Ids = FenceId::all(n);
                    let r = algorithm::reduce(&mut oracle, &all, settings, &mut |_| {})
                        .expect("reduces");
                    checks += r.checks;
                    runs += r.runs;
                    seconds += r.seconds;
                    found += usize::from(
                        r.fences
                            .iter()
                            .copied()
                            .eq(required.iter().copied().map(FenceId)),
                    );
                }
                println!(
                    "{:<18} {:>5} {:<34} {:>7.1} {:>9.1} {:>9.1}m {:>4}/5",
                    name,
                    p,
                    s.name,
                    checks as f64 / 5.0,
                    runs as f64 / 5.0,
                    seconds / 5.0 / 60.0,
                    found
                );
            }
        }
    }
}

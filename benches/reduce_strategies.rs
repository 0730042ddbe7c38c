//! The paper's Alg. 1 against wmfix's improvements, on the same simulated applications: oracle
//! checks, runs and (simulated) run time. Run: `cargo bench --bench reduce_strategies`.
//!
//! Each application errs with probability p per run unless its required fences are enabled, and
//! the "+ rare" ones also with 1-2% per run for each of two more fences left off (as ct-octree's
//! and ls-bh-nf's reduced programs did on an H200: 1 error in 100 runs each), "+ medium" also
//! with 50% for one more (ct-octree on an H100: a 3-run check passed without its fence 3); a
//! run takes 0.175 s (cbe-dot on an H200 with 4 runs at a time: 20,537 runs/h). Results are
//! averaged over 5 seeds; "found" counts the seeds whose result is exactly the required set,
//! "missed" those whose result lacks a needed fence (unsafe; a superset is only slower).
//! Each application's fences sit in functions (kernels and device functions) of the sizes
//! given, with the required ones spread over some of them, as in the paper's studies; the
//! structure-aware split is told those functions.

use wmfix::fences::id::{FenceId, Ids};
use wmfix::reduce::algorithm::{self, Settings, Split, Stability};
use wmfix::reduce::checks::Checks;
use wmfix::reduce::oracle::Simulated;

const RUN_SECONDS: f64 = 0.175;

/// One simulated application under one strategy, over 5 seeds: summed checks, runs, seconds,
/// and the seeds that found exactly the needed fences and that missed one.
fn simulate(
    sizes: &[usize],
    required: &[usize],
    rare: &[(usize, f64)],
    p: f64,
    s: &Strategy,
    run_seconds: f64,
) -> (usize, usize, f64, usize, usize) {
    let expected: Ids = required
        .iter()
        .copied()
        .chain(rare.iter().map(|r| r.0))
        .map(FenceId)
        .collect();
    let n: usize = sizes.iter().sum();
    let mut groups: Vec<Ids> = vec![];
    for size in sizes {
        let start = groups.iter().map(|g| g.len()).sum::<usize>();
        groups.push(FenceId::all(start + size).split_off(&FenceId(start)));
    }
    let (mut checks, mut runs, mut seconds, mut found, mut missed) = (0, 0, 0.0, 0, 0);
    for seed in 0..5 {
        let mut oracle = Simulated {
            required: required.iter().copied().map(FenceId).collect(),
            p,
            rare: rare.iter().map(|&(id, q)| (FenceId(id), q)).collect(),
            timeout_p: 0.0,
            run_seconds,
            seed,
            runs: 0,
        };
        let settings = Settings {
            split: s.split,
            iterations: 32,
            checks: s.checks,
            stability: s.stability,
            rare_rate: s.rare_rate,
            cache: s.cache,
            budget_seconds: 48.0 * 3600.0,
        };
        let all: Ids = FenceId::all(n);
        let structure = algorithm::Structure {
            groups: groups.clone(),
            ..Default::default()
        };
        let r = algorithm::reduce_structured(&mut oracle, &all, &structure, settings, &mut |_| {})
            .expect("reduces");
        checks += r.checks;
        runs += r.runs;
        seconds += r.seconds;
        found += usize::from(r.fences == expected);
        // Unsafe: a needed fence left out (a superset is only slower).
        missed += usize::from(!expected.is_subset(&r.fences));
    }
    (checks, runs, seconds, found, missed)
}

/// (name, fences per function, required fences, rare fences: each left off errs at its rate)
type App = (
    &'static str,
    &'static [usize],
    &'static [usize],
    &'static [(usize, f64)],
);

#[derive(Clone, Copy)]
struct Strategy {
    name: &'static str,
    split: Split,
    checks: Checks,
    cache: bool,
    stability: Stability,
    rare_rate: Option<f64>,
}

fn main() {
    let apps: [App; 7] = [
        ("cbe-ht-like 10", &[3, 4, 3], &[3, 4, 8, 9], &[]),
        ("ct-octree-like 33", &[8, 6, 9, 10], &[17], &[]),
        (
            "ct-octree + rare",
            &[8, 6, 9, 10],
            &[17],
            &[(3, 0.02), (9, 0.01)],
        ),
        (
            "ct-octree + medium",
            &[8, 6, 9, 10],
            &[17],
            &[(0, 0.5), (3, 0.02), (9, 0.01)],
        ),
        ("cub-scan-like 51", &[10, 12, 9, 20], &[5, 40], &[]),
        ("ls-bh-like 90", &[15; 6], &[16, 20, 61, 70], &[]),
        (
            "ls-bh + rare",
            &[15; 6],
            &[16, 20, 61, 70],
            &[(36, 0.01), (54, 0.02)],
        ),
    ];
    let statistical = Stability::Statistical { confidence: 0.99 };
    let adaptive = Checks::Adaptive { confidence: 0.99 };
    let strategy = |name, split, checks, cache, stability| Strategy {
        name,
        split,
        checks,
        cache,
        stability,
        rare_rate: None,
    };
    let strategies = [
        strategy(
            "paper: halves, 60-min stability",
            Split::Halves,
            Checks::Fixed,
            false,
            Stability::Minutes(60.0),
        ),
        strategy(
            "halves + cache + statistical",
            Split::Halves,
            Checks::Fixed,
            true,
            statistical,
        ),
        strategy(
            "ddmin + cache + statistical",
            Split::Ddmin,
            Checks::Fixed,
            true,
            statistical,
        ),
        strategy(
            "structure + cache + statistical",
            Split::Structure,
            Checks::Fixed,
            true,
            statistical,
        ),
        strategy(
            "halves + adaptive",
            Split::Halves,
            adaptive,
            true,
            statistical,
        ),
        strategy(
            "structure + adaptive",
            Split::Structure,
            adaptive,
            true,
            statistical,
        ),
        Strategy {
            rare_rate: Some(0.01),
            ..strategy(
                "structure + adaptive + 1% (default)",
                Split::Structure,
                adaptive,
                true,
                statistical,
            )
        },
    ];
    println!(
        "{:<18} {:>5} {:<36} {:>7} {:>9} {:>10} {:>6} {:>6}",
        "application", "p", "strategy", "checks", "runs", "run time", "found", "missed"
    );
    for (name, sizes, required, rare) in apps {
        for p in [1.0, 0.05, 0.02] {
            for s in &strategies {
                let (checks, runs, seconds, found, missed) =
                    simulate(sizes, required, rare, p, s, RUN_SECONDS);
                println!(
                    "{:<18} {:>5} {:<36} {:>7.1} {:>9.1} {:>9.1}m {:>4}/5 {:>4}/5",
                    name,
                    p,
                    s.name,
                    checks as f64 / 5.0,
                    runs as f64 / 5.0,
                    seconds / 5.0 / 60.0,
                    found,
                    missed
                );
            }
        }
    }
    builds_a_run(&apps, strategies.last().expect("the default"));
}

/// B builds (steps) a run, as ct-octree's and ls-bh-nf's harnesses allow: each rate q becomes
/// 1 - (1 - q)^B, and a run costs H100_RUN + (B - 1) * EXTRA_BUILD seconds. Both are
/// assumptions until the GPU measures them (evidence.sh `builds-*`, `reduce-*-b10`): one run
/// at a time took 0.19 s on an H100 with 8 at a time making about 5.5 a second (0.18 s each),
/// and an extra build adds its kernel (0.3-1 ms) and the host's reset and check (a few ms).
fn builds_a_run(apps: &[App], default: &Strategy) {
    const H100_RUN: f64 = 0.18;
    const EXTRA_BUILD: f64 = 0.01;
    println!(
        "\n# Builds a run, {} but `rare` as --rare-rate (run time = runs x (0.18 + (B-1) x 0.01) s, assumed):",
        default.name
    );
    println!(
        "{:<18} {:>5} {:>3} {:>6} {:>7} {:>9} {:>10} {:>6} {:>6}",
        "application", "p", "B", "rare", "checks", "runs", "run time", "found", "missed"
    );
    for (name, sizes, required, rare) in apps.iter().filter(|a| !a.3.is_empty()) {
        for p in [1.0, 0.05] {
            // B = 10 with the default --rare-rate (1% a run), and with --rare-rate for 1% a build.
            for (b, per_build) in [(1, false), (10, false), (10, true)] {
                let per = |q: f64| 1.0 - (1.0 - q).powi(b);
                let rare: Vec<(usize, f64)> = rare.iter().map(|&(id, q)| (id, per(q))).collect();
                let run = H100_RUN + f64::from(b - 1) * EXTRA_BUILD;
                let strategy = Strategy {
                    rare_rate: if per_build {
                        default.rare_rate.map(per)
                    } else {
                        default.rare_rate
                    },
                    ..*default
                };
                let (checks, runs, seconds, found, missed) =
                    simulate(sizes, required, &rare, per(p), &strategy, run);
                let rate = strategy.rare_rate.unwrap_or(0.0);
                println!(
                    "{:<18} {:>5} {:>3} {:>6.3} {:>7.1} {:>9.1} {:>9.1}m {:>4}/5 {:>4}/5",
                    name,
                    p,
                    b,
                    rate,
                    checks as f64 / 5.0,
                    runs as f64 / 5.0,
                    seconds / 5.0 / 60.0,
                    found,
                    missed
                );
            }
        }
    }
}

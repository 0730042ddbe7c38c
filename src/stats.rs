//! Error rates with honest uncertainty.

/// The Wilson score interval for `errors` out of `runs` at 95% confidence: unlike the normal
/// approximation it stays inside [0, 1] and is sensible at 0 errors.
pub fn wilson95(errors: usize, runs: usize) -> (f64, f64) {
    if runs == 0 {
        return (0.0, 1.0);
    }
    let z = 1.959_963_984_540_054_f64;
    let n = runs as f64;
    let p = errors as f64 / n;
    let denom = 1.0 + z * z / n;
    let centre = (p + z * z / (2.0 * n)) / denom;
    let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / denom;
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// A run of `steps` steps errs when any step does: the rate a run of a rate a step, were
/// steps independent (measured on the H100 for ct-octree and ls-bh-nf: case-studies/README.md).
pub fn rate_a_run(rate_a_step: f64, steps: u32) -> f64 {
    // One step is the rate itself, exactly (1 - (1 - r) is not r in floating point).
    if steps <= 1 {
        return rate_a_step;
    }
    1.0 - (1.0 - rate_a_step).powi(steps as i32)
}

/// The inverse of `rate_a_run`.
pub fn rate_a_step(rate_a_run: f64, steps: u32) -> f64 {
    if steps <= 1 {
        return rate_a_run;
    }
    1.0 - (1.0 - rate_a_run).powf(1.0 / f64::from(steps))
}

/// The paper's threshold: an environment is effective when more than 5% of runs err.
pub fn effective(errors: usize, runs: usize) -> bool {
    runs > 0 && errors as f64 > 0.05 * runs as f64
}

/// A sample's mean with its 95% confidence half-width (Student's t), and its median.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Spread {
    pub n: usize,
    pub mean: f64,
    /// Half-width of the 95% confidence interval of the mean; 0 for a single value.
    pub ci95: f64,
    pub median: f64,
    /// Sample standard deviation.
    pub sd: f64,
}

pub fn spread(xs: &[f64]) -> Option<Spread> {
    let n = xs.len();
    if n == 0 {
        return None;
    }
    let mean = xs.iter().sum::<f64>() / n as f64;
    let sd = if n > 1 {
        (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
    } else {
        0.0
    };
    let ci95 = if n > 1 {
        t975(n - 1) * sd / (n as f64).sqrt()
    } else {
        0.0
    };
    let mut sorted = xs.to_vec();
    sorted.sort_by(f64::total_cmp);
    let median = if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    };
    Some(Spread {
        n,
        mean,
        ci95,
        median,
        sd,
    })
}

/// The ratio of two means and its 95% half-width (delta method, independent samples).
pub fn ratio(a: &Spread, b: &Spread) -> Option<(f64, f64)> {
    if b.mean == 0.0 || a.n < 2 || b.n < 2 {
        return None;
    }
    let r = a.mean / b.mean;
    let rel = |s: &Spread| (s.sd / s.mean).powi(2) / s.n as f64;
    let se = r.abs() * (rel(a) + rel(b)).sqrt();
    // Welch-Satterthwaite would give the degrees of freedom; the smaller sample's is cautious.
    Some((r, t975(a.n.min(b.n) - 1) * se))
}

/// The 0.975 quantile of Student's t with `df` degrees of freedom.
pub fn t975(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => TABLE[df - 1],
        _ => {
            // Cornish-Fisher expansion around the normal quantile; within 1e-3 for df > 30.
            let z = 1.959_963_984_540_054_f64;
            let v = df as f64;
            z + (z.powi(3) + z) / (4.0 * v)
                + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * v * v)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_a_step_is_a_rate_a_run_and_back() {
        // 1% a step is 9.56% of ten-step runs: the stability check needs 46 runs, not 459.
        assert!((rate_a_run(0.01, 10) - 0.0956).abs() < 1e-4);
        assert_eq!(rate_a_run(0.01, 1), 0.01);
        assert!((rate_a_step(rate_a_run(0.003, 100), 100) - 0.003).abs() < 1e-12);
    }

    #[test]
    fn spread_and_ratio_match_hand_computed_values() {
        let s = spread(&[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!((s.n, s.mean, s.median), (4, 2.5, 2.5));
        assert!((s.sd - 1.290_994).abs() < 1e-6, "{s:?}");
        // t(3) = 3.182; 3.182 * 1.291 / 2
        assert!((s.ci95 - 2.054).abs() < 1e-3, "{s:?}");
        assert_eq!(spread(&[5.0]).unwrap().ci95, 0.0);
        assert!(spread(&[]).is_none());
        let b = spread(&[2.0, 2.0, 2.0, 2.0]).unwrap();
        let (r, h) = ratio(&s, &b).unwrap();
        assert_eq!(r, 1.25);
        // se = 1.25 * sqrt((1.291/2.5)^2 / 4) = 0.3227; times t(3)
        assert!((h - 1.027).abs() < 1e-3, "{h}");
        // The expansion meets the table where they overlap, and tends to z.
        assert!((t975(31) - 2.040).abs() < 1e-3 && (t975(100) - 1.984).abs() < 1e-3);
        assert!((t975(1_000_000) - 1.96).abs() < 1e-3);
    }

    #[test]
    fn wilson_matches_known_values() {
        // Reference values computed with the closed form (e.g. statsmodels proportion_confint, method="wilson").
        let (lo, hi) = wilson95(10, 100);
        assert!(
            (lo - 0.0552).abs() < 1e-3 && (hi - 0.1744).abs() < 1e-3,
            "{lo} {hi}"
        );
        let (lo, hi) = wilson95(0, 200);
        assert!(lo.abs() < 1e-12, "{lo}");
        assert!((hi - 0.01885).abs() < 1e-4, "{hi}");
        assert!(effective(11, 200) && !effective(10, 200));
    }
}

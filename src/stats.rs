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

/// The paper's threshold: an environment is effective when more than 5% of runs err.
pub fn effective(errors: usize, runs: usize) -> bool {
    runs > 0 && errors as f64 > 0.05 * runs as f64
}

#[cfg(test)]
mod tests {
    use super::*;

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

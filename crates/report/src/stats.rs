//! The statistics behind run comparisons: Welch's unequal-variance t-test on two samples
//! (or on two summaries: mean, standard deviation, count), per-second series counted by
//! their effective sample size, and Student's t distribution from `statrs`.

/// Mean, sample standard deviation and size of a sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (n − 1 in the denominator).
    pub sd: f64,
    /// Sample size.
    pub n: f64,
}

impl Summary {
    /// Summarises a sample; `None` when it is empty.
    pub fn of(xs: &[f64]) -> Option<Summary> {
        use statrs::statistics::Statistics;
        if xs.is_empty() {
            return None;
        }
        let sd = if xs.len() > 1 {
            xs.iter().std_dev()
        } else {
            0.0
        };
        Some(Summary {
            mean: xs.iter().mean(),
            sd,
            n: xs.len() as f64,
        })
    }

    /// Summarises a time series with its effective sample size, as latte corrects its
    /// per-second samples: `n · (1 − ρ) / (1 + ρ)` for a lag-1 autocorrelation ρ > 0
    /// (never below 2 while there are 2 samples; ρ ≤ 0 leaves `n` alone).
    pub fn of_series(xs: &[f64]) -> Option<Summary> {
        let mut s = Self::of(xs)?;
        let rho = lag1_autocorrelation(xs).clamp(0.0, 0.99);
        if rho > 0.0 {
            s.n = (s.n * (1.0 - rho) / (1.0 + rho)).max(s.n.min(2.0));
        }
        Some(s)
    }
}

/// The outcome of Welch's t-test of `b` against `a`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Welch {
    /// t statistic of `b.mean − a.mean`.
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// Two-sided p-value.
    pub p: f64,
}

/// Welch's t-test on two summaries. `None` when either side has fewer than two samples
/// (no variance estimate, no test). Two samples without any variance give p = 0 when the
/// means differ and p = 1 when they are equal.
pub fn welch(a: &Summary, b: &Summary) -> Option<Welch> {
    if a.n < 2.0 || b.n < 2.0 {
        return None;
    }
    let va = a.sd * a.sd / a.n;
    let vb = b.sd * b.sd / b.n;
    let se = (va + vb).sqrt();
    let diff = b.mean - a.mean;
    if se == 0.0 || !se.is_finite() {
        let p = if diff == 0.0 { 1.0 } else { 0.0 };
        return Some(Welch {
            t: if diff == 0.0 {
                0.0
            } else {
                f64::INFINITY * diff.signum()
            },
            df: a.n + b.n - 2.0,
            p,
        });
    }
    let t = diff / se;
    let df = (va + vb).powi(2)
        / (va * va / (a.n - 1.0).max(1.0) + vb * vb / (b.n - 1.0).max(1.0)).max(f64::MIN_POSITIVE);
    Some(Welch {
        t,
        df,
        p: student_t_two_sided(t, df),
    })
}

/// Welch's t-test on two raw samples.
pub fn welch_samples(a: &[f64], b: &[f64]) -> Option<Welch> {
    welch(&Summary::of(a)?, &Summary::of(b)?)
}

/// Welch's t-test on two time series (per-second samples of a window), each counted by its
/// effective sample size ([`Summary::of_series`]): neighbouring seconds of one run are not
/// independent, and counting them as if they were would call noise significant.
pub fn welch_series(a: &[f64], b: &[f64]) -> Option<Welch> {
    welch(&Summary::of_series(a)?, &Summary::of_series(b)?)
}

/// Two-sided tail probability `P(|T| ≥ |t|)` of Student's t with `df` degrees of freedom.
pub fn student_t_two_sided(t: f64, df: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    if !t.is_finite() {
        return 0.0;
    }
    match StudentsT::new(0.0, 1.0, df) {
        Ok(dist) => (2.0 * dist.sf(t.abs())).clamp(0.0, 1.0),
        Err(_) => 1.0,
    }
}

/// Lag-1 autocorrelation of a series (0 when it cannot be estimated).
pub fn lag1_autocorrelation(xs: &[f64]) -> f64 {
    use statrs::statistics::Statistics;
    if xs.len() < 3 {
        return 0.0;
    }
    let mean = xs.iter().mean();
    let var: f64 = xs.iter().map(|x| (x - mean).powi(2)).sum();
    if var == 0.0 || !var.is_finite() {
        return 0.0;
    }
    let cov: f64 = xs.windows(2).map(|w| (w[0] - mean) * (w[1] - mean)).sum();
    cov / var
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn t_distribution_matches_tables() {
        // Two-sided critical values of Student's t at 5 %: df 1 → 12.706, df 10 →
        // 2.228, df 30 → 2.042; large df approaches the normal 1.960.
        assert!(close(student_t_two_sided(12.706, 1.0), 0.05, 1e-4));
        assert!(close(student_t_two_sided(2.228, 10.0), 0.05, 1e-4));
        assert!(close(student_t_two_sided(2.042, 30.0), 0.05, 1e-4));
        assert!(close(student_t_two_sided(1.960, 1e6), 0.05, 1e-4));
        assert!(close(student_t_two_sided(0.0, 5.0), 1.0, 1e-12));
        // At 1 %, df 5 → 4.032.
        assert!(close(student_t_two_sided(4.032, 5.0), 0.01, 1e-4));
    }

    #[test]
    fn autocorrelated_series_count_fewer_samples() {
        // A slow drift: each second close to the one before.
        let drift: Vec<f64> = (0..20).map(|i| 100.0 + i as f64).collect();
        assert!(lag1_autocorrelation(&drift) > 0.8);
        let s = Summary::of_series(&drift).unwrap();
        assert!(s.n < 3.0, "{s:?}");
        // Alternating seconds: negatively correlated, counted as they are.
        let alternating: Vec<f64> = (0..20).map(|i| 100.0 + (i % 2) as f64).collect();
        assert_eq!(Summary::of_series(&alternating).unwrap().n, 20.0);
        // The same shift is significant between independent samples, not between drifts.
        let shifted: Vec<f64> = drift.iter().map(|x| x + 5.0).collect();
        assert!(welch_series(&drift, &shifted).unwrap().p > 0.05);
    }

    #[test]
    fn welch_matches_a_worked_example() {
        // The first worked example of Welch's test on Wikipedia (A1 against A2):
        // t = −2.46, df ≈ 24.9, p = 0.021.
        let a = [
            27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7,
            21.4,
        ];
        let b = [
            27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5,
            24.4,
        ];
        let w = welch_samples(&b, &a).unwrap();
        assert!(close(w.t, -2.46, 0.01), "{w:?}");
        assert!(close(w.df, 24.99, 0.05), "{w:?}");
        assert!(close(w.p, 0.021, 0.001), "{w:?}");
        assert!(welch_samples(&[1.0], &[2.0, 3.0]).is_none());
        let same = welch_samples(&[5.0, 5.0], &[5.0, 5.0]).unwrap();
        assert_eq!(same.p, 1.0);
        let differ = welch_samples(&[5.0, 5.0], &[6.0, 6.0]).unwrap();
        assert_eq!(differ.p, 0.0);
    }
}

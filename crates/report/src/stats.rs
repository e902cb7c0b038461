//! The statistics behind run comparisons: Welch's unequal-variance t-test on two samples
//! (or on two summaries: mean, standard deviation, count) and the Student t distribution
//! it needs, with no dependency beyond `f64`.

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
        if xs.is_empty() {
            return None;
        }
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<f64>() / n;
        let var = if xs.len() > 1 {
            xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
        } else {
            0.0
        };
        Some(Summary {
            mean,
            sd: var.sqrt(),
            n,
        })
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

/// Two-sided tail probability `P(|T| ≥ |t|)` of Student's t with `df` degrees of freedom.
pub fn student_t_two_sided(t: f64, df: f64) -> f64 {
    if !t.is_finite() {
        return 0.0;
    }
    let x = df / (df + t * t);
    incomplete_beta(df / 2.0, 0.5, x).clamp(0.0, 1.0)
}

/// Regularised incomplete beta function `I_x(a, b)` (continued fraction, Numerical
/// Recipes §6.4).
pub fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    let front = ln_front.exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_cf(a, b, x) / a
    } else {
        1.0 - front * beta_cf(b, a, 1.0 - x) / b
    }
}

fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..300 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// `ln Γ(x)` for x > 0 (Lanczos approximation, g = 7).
pub fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = G[0];
    let t = x + 7.5;
    for (i, g) in G.iter().enumerate().skip(1) {
        a += g / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn gamma_and_t_distribution_match_tables() {
        // Γ(5) = 24, Γ(0.5) = √π.
        assert!(close(ln_gamma(5.0), 24f64.ln(), 1e-10));
        assert!(close(
            ln_gamma(0.5),
            std::f64::consts::PI.sqrt().ln(),
            1e-10
        ));
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

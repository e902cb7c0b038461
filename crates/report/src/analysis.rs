//! Where an engine saturates: peak, knee, latency limit, plateau, and a Universal
//! Scalability Law fit of throughput against concurrency.

use serde::{Deserialize, Serialize};

/// Share of the peak at which the knee is placed.
pub const KNEE_SHARE: f64 = 0.95;

/// One measured level: clients and throughput (and p99, µs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// Concurrent clients.
    pub clients: u32,
    /// Operations per second.
    pub ops_per_s: f64,
    /// 99th percentile latency, µs.
    pub p99_us: f64,
}

/// Saturation figures of one operation across a sweep.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Saturation {
    /// Highest throughput measured, ops/s.
    pub peak_ops_per_s: f64,
    /// Clients at the peak.
    pub peak_clients: u32,
    /// Smallest level reaching ≥ 95 % of the peak.
    pub knee_clients: u32,
    /// First level whose p99 exceeded the limit, if a limit was given and crossed.
    pub p99_limit_clients: Option<u32>,
    /// The USL fit, when there are enough levels.
    pub usl: Option<UslFit>,
}

/// `X(N) = λN / (1 + σ(N−1) + κN(N−1))`, fitted by least squares.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UslFit {
    /// Throughput of one client, ops/s.
    pub lambda: f64,
    /// Contention (serial fraction).
    pub sigma: f64,
    /// Coherency (crosstalk) penalty.
    pub kappa: f64,
    /// Clients at the predicted peak (`sqrt((1−σ)/κ)`); none when κ = 0.
    pub peak_clients: Option<f64>,
    /// Predicted peak throughput, ops/s (the asymptote λ/σ when κ = 0); none when the fit
    /// predicts unbounded growth.
    pub peak_ops_per_s: Option<f64>,
    /// Coefficient of determination of the fit.
    pub r2: f64,
}

impl UslFit {
    /// Predicted throughput at `n` clients.
    pub fn predict(&self, n: f64) -> f64 {
        self.lambda * n / (1.0 + self.sigma * (n - 1.0) + self.kappa * n * (n - 1.0))
    }
}

/// Smallest level whose throughput reaches `share` of the peak.
pub fn knee(points: &[Point], share: f64) -> Option<u32> {
    let peak = points.iter().map(|p| p.ops_per_s).fold(f64::NAN, f64::max);
    points
        .iter()
        .filter(|p| p.ops_per_s >= share * peak)
        .map(|p| p.clients)
        .min()
}

/// Whether the last `window + 1` levels show no growth of at least `min_growth`
/// (e.g. 0.05) level over level — the `--until-plateau` rule with `window = 2`.
pub fn plateaued(points: &[Point], min_growth: f64, window: usize) -> bool {
    if points.len() < window + 1 {
        return false;
    }
    let tail = &points[points.len() - window - 1..];
    let best_before = points[..points.len() - window]
        .iter()
        .map(|p| p.ops_per_s)
        .fold(0.0, f64::max);
    tail[1..]
        .iter()
        .all(|p| p.ops_per_s < best_before * (1.0 + min_growth))
}

fn usl_shape(n: f64, sigma: f64, kappa: f64) -> f64 {
    n / (1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0))
}

/// Sum of squared errors for σ, κ with the best λ for them (closed form).
fn usl_sse(points: &[Point], sigma: f64, kappa: f64) -> (f64, f64) {
    let (mut xf, mut ff) = (0.0, 0.0);
    for p in points {
        let f = usl_shape(p.clients as f64, sigma, kappa);
        xf += p.ops_per_s * f;
        ff += f * f;
    }
    let lambda = if ff > 0.0 { xf / ff } else { 0.0 };
    let sse = points
        .iter()
        .map(|p| (p.ops_per_s - lambda * usl_shape(p.clients as f64, sigma, kappa)).powi(2))
        .sum();
    (sse, lambda)
}

/// Fits the USL to at least three levels with distinct client counts.
pub fn fit_usl(points: &[Point]) -> Option<UslFit> {
    let mut distinct: Vec<u32> = points.iter().map(|p| p.clients).collect();
    distinct.dedup();
    if distinct.len() < 3 || points.iter().any(|p| !p.ops_per_s.is_finite()) {
        return None;
    }
    // Coarse grid in σ ∈ [0,1] and log-spaced κ, then a shrinking local search.
    let mut best = (f64::INFINITY, 0.0, 0.0);
    for si in 0..=50 {
        let sigma = si as f64 / 50.0;
        for ki in 0..=60 {
            let kappa = if ki == 0 {
                0.0
            } else {
                10f64.powf(-8.0 + ki as f64 * 0.1)
            };
            let (sse, _) = usl_sse(points, sigma, kappa);
            if sse < best.0 {
                best = (sse, sigma, kappa);
            }
        }
    }
    let (mut ds, mut dk) = (0.02, best.2.max(1e-8));
    for _ in 0..200 {
        let (_, s0, k0) = best;
        let mut improved = false;
        for (s, k) in [
            (s0 + ds, k0),
            (s0 - ds, k0),
            (s0, k0 + dk),
            (s0, (k0 - dk).max(0.0)),
        ] {
            let s = s.clamp(0.0, 1.0);
            let (sse, _) = usl_sse(points, s, k);
            if sse < best.0 {
                best = (sse, s, k);
                improved = true;
            }
        }
        if !improved {
            ds /= 2.0;
            dk /= 2.0;
        }
    }
    let (sse, sigma, kappa) = best;
    let (_, lambda) = usl_sse(points, sigma, kappa);
    let mean = points.iter().map(|p| p.ops_per_s).sum::<f64>() / points.len() as f64;
    let sst: f64 = points.iter().map(|p| (p.ops_per_s - mean).powi(2)).sum();
    let peak_clients = if kappa > 0.0 {
        ((1.0 - sigma) / kappa).sqrt().max(1.0)
    } else {
        f64::INFINITY
    };
    let peak_ops_per_s = if peak_clients.is_finite() {
        lambda * usl_shape(peak_clients, sigma, kappa)
    } else if sigma > 0.0 {
        lambda / sigma
    } else {
        f64::INFINITY
    };
    Some(UslFit {
        lambda,
        sigma,
        kappa,
        peak_clients: Some(peak_clients).filter(|p| p.is_finite()),
        peak_ops_per_s: Some(peak_ops_per_s).filter(|p| p.is_finite()),
        r2: if sst > 0.0 { 1.0 - sse / sst } else { 1.0 },
    })
}

/// All saturation figures of one operation.
pub fn saturation(points: &[Point], p99_limit_us: Option<f64>) -> Saturation {
    let peak = points
        .iter()
        .copied()
        .max_by(|a, b| a.ops_per_s.total_cmp(&b.ops_per_s));
    Saturation {
        peak_ops_per_s: peak.map_or(0.0, |p| p.ops_per_s),
        peak_clients: peak.map_or(0, |p| p.clients),
        knee_clients: knee(points, KNEE_SHARE).unwrap_or(0),
        p99_limit_clients: p99_limit_us
            .and_then(|limit| points.iter().find(|p| p.p99_us > limit).map(|p| p.clients)),
        usl: fit_usl(points),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn curve(levels: impl IntoIterator<Item = u32>, f: impl Fn(f64) -> f64) -> Vec<Point> {
        levels
            .into_iter()
            .map(|n| Point {
                clients: n,
                ops_per_s: f(n as f64),
                p99_us: 100.0 * n as f64,
            })
            .collect()
    }

    #[test]
    fn a_plateau_at_80_is_found_at_80() {
        let pts = curve((8..=128).step_by(8), |n| n.min(80.0) * 1000.0);
        let s = saturation(&pts, Some(5000.0));
        assert_eq!(s.knee_clients, 80);
        assert_eq!(s.peak_ops_per_s, 80_000.0);
        assert_eq!(s.p99_limit_clients, Some(56));
        assert!(plateaued(&pts[..12], 0.05, 2)); // 88 and 96 add nothing over 80
        assert!(!plateaued(&pts[..10], 0.05, 2)); // still growing at 80
    }

    #[test]
    fn usl_recovers_known_parameters() {
        let truth = UslFit {
            lambda: 1000.0,
            sigma: 0.05,
            kappa: 0.0002,
            ..Default::default()
        };
        let pts = curve([1, 2, 4, 8, 16, 32, 64, 128, 256], |n| truth.predict(n));
        let fit = fit_usl(&pts).unwrap();
        assert!((fit.lambda - 1000.0).abs() < 20.0, "{fit:?}");
        assert!((fit.sigma - 0.05).abs() < 0.01, "{fit:?}");
        assert!((fit.kappa - 0.0002).abs() < 0.0001, "{fit:?}");
        assert!(fit.r2 > 0.999);
        // Predicted peak near sqrt(0.95/0.0002) ≈ 69 clients.
        assert!((fit.peak_clients.unwrap() - 68.9).abs() < 8.0, "{fit:?}");
        assert!(fit_usl(&pts[..2]).is_none());
    }

    #[test]
    fn linear_scaling_has_no_finite_peak() {
        let pts = curve([1, 2, 4, 8], |n| 500.0 * n);
        let fit = fit_usl(&pts).unwrap();
        assert!(fit.sigma < 0.01 && fit.kappa < 1e-6, "{fit:?}");
        assert!(
            fit.peak_clients.is_none() || fit.peak_clients.unwrap() > 100.0,
            "{fit:?}"
        );
        assert!(knee(&pts, 0.95) == Some(8));
    }
}

//! The latency figures of a histogram of successful calls, shared by `ops` and `sweep`
//! results.

use serde::{Deserialize, Serialize};

/// The latency figures every output shows of a histogram of successful calls.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Calls recorded.
    pub count: u64,
    /// Mean, µs.
    pub mean_us: f64,
    /// Median, µs.
    pub p50_us: f64,
    /// 90th percentile, µs.
    pub p90_us: f64,
    /// 99th percentile, µs.
    pub p99_us: f64,
    /// 99.9th percentile, µs.
    pub p999_us: f64,
    /// Slowest call, µs.
    pub max_us: f64,
    /// The histogram (HdrHistogram V2, base64); `None` when it is empty.
    pub histogram: Option<String>,
}

impl Latency {
    /// Summarises `h`, whose values are nanoseconds (all zeros when it is empty).
    pub fn of(h: &hdrhistogram::Histogram<u64>) -> Self {
        if h.is_empty() {
            return Self::default();
        }
        let us = |ns: u64| ns as f64 / 1000.0;
        Self {
            count: h.len(),
            mean_us: h.mean() / 1000.0,
            p50_us: us(h.value_at_quantile(0.50)),
            p90_us: us(h.value_at_quantile(0.90)),
            p99_us: us(h.value_at_quantile(0.99)),
            p999_us: us(h.value_at_quantile(0.999)),
            max_us: us(h.max()),
            histogram: Some(crate::histogram::encode(h)),
        }
    }
}

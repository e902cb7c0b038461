//! The floor: the engine's null round trip, measured on a client's own session through
//! the same path as the timed operations, so a reader sees how much of each operation's
//! cost is transport and the engine's request loop.

use crate::stats::histogram;
use metabench_engine::{Meta, MetaError, Result};
use metabench_report::Floor;
use metabench_report::Latency;
use std::time::{Duration, Instant};

/// Null round trips measured at most.
pub const FLOOR_CALLS: u64 = 2000;
/// Time spent measuring at most.
pub const FLOOR_BUDGET: Duration = Duration::from_millis(300);

/// Measures the engine's null round trip on `meta` ([`Meta::null_round_trip`]): up to
/// [`FLOOR_CALLS`] calls or [`FLOOR_BUDGET`], whichever ends first, after a few untimed
/// ones. `None` when the session has no null round trip.
pub async fn measure_floor(meta: &mut dyn Meta) -> Result<Option<Floor>> {
    let request = match meta.null_round_trip().await {
        Ok(r) => r,
        Err(MetaError::NotSupported) => return Ok(None),
        Err(e) => return Err(e),
    };
    for _ in 0..10 {
        meta.null_round_trip().await?;
    }
    let mut hist = histogram();
    let until = Instant::now() + FLOOR_BUDGET;
    while hist.len() < FLOOR_CALLS && Instant::now() < until {
        let t0 = Instant::now();
        meta.null_round_trip().await?;
        let _ = hist.record(t0.elapsed().as_nanos() as u64);
    }
    let s = Latency::of(&hist);
    Ok(Some(Floor {
        request: request.to_owned(),
        count: s.count,
        mean_us: s.mean_us,
        p50_us: s.p50_us,
        p99_us: s.p99_us,
    }))
}

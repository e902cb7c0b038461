//! Latency histograms (HdrHistogram, nanoseconds, 3 significant digits) and their
//! portable form: the V2 serialization, base64-encoded, so runs can be merged later.

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::Histogram;

/// A new latency histogram: nanoseconds, 3 significant digits, growing as values need
/// (a stall of any length is recorded, never clipped).
pub fn new_latency_histogram() -> Histogram<u64> {
    Histogram::new(3).expect("3 significant digits is valid")
}

/// Serializes a histogram as base64 of its V2 encoding.
pub fn encode(h: &Histogram<u64>) -> String {
    let mut buf = Vec::new();
    V2Serializer::new()
        .serialize(h, &mut buf)
        .expect("serializing into memory cannot fail");
    base64::engine::general_purpose::STANDARD.encode(buf)
}

/// Decodes a histogram written by [`encode`].
pub fn decode(s: &str) -> Result<Histogram<u64>, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(s)
        .map_err(|e| format!("bad histogram base64: {e}"))?;
    let mut h: Histogram<u64> = Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| format!("bad histogram: {e:?}"))?;
    // Like the histograms the runs record: merging a larger one into it grows it.
    h.auto(true);
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_merge() {
        let mut a = new_latency_histogram();
        let mut b = new_latency_histogram();
        for v in 1..=1000u64 {
            a.record(v * 1000).unwrap();
            b.record(v * 2000).unwrap();
        }
        let a2 = decode(&encode(&a)).unwrap();
        assert_eq!(a2.len(), 1000);
        assert_eq!(a2.value_at_quantile(0.5), a.value_at_quantile(0.5));
        let mut merged = a2;
        merged.add(decode(&encode(&b)).unwrap()).unwrap();
        assert_eq!(merged.len(), 2000);
        assert!(merged.max() >= 1_999_000);
        assert!(decode("not base64!").is_err());
    }
}

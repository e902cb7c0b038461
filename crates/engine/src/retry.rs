//! JuiceFS's retry policy for conflicting transactions.

use std::time::Duration;

/// Attempts before a transaction is given up (`txn` loops in `redis.go`, `sql.go`, `tkv.go`).
pub const MAX_TRIES: u32 = 50;

/// Redis and TKV: a random sleep of 0..(i+1)² ms after failed attempt `i` (0-based).
pub fn backoff_random_square(i: u32) -> Duration {
    let max_ms = ((i + 1) * (i + 1)) as u64;
    Duration::from_micros(rand::random_range(0..max_ms * 1000))
}

/// SQL: a sleep of i² ms after failed attempt `i` (0-based).
pub fn backoff_square(i: u32) -> Duration {
    Duration::from_millis((i * i) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds() {
        for i in 0..10 {
            assert!(backoff_random_square(i) < Duration::from_millis(((i + 1) * (i + 1)) as u64));
        }
        assert_eq!(backoff_square(3), Duration::from_millis(9));
    }
}

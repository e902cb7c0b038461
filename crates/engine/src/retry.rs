//! JuiceFS's retry policy for conflicting transactions.

use crate::MetaError;
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

/// The conversions a transaction error type (Redis and TKV's [`TxErr`], SQL's in
/// `sql::session::txn`) takes from an operation's logic: an errno, or a record that does
/// not decode, ends the attempt with that error, as its `Meta` variant.
macro_rules! from_meta_errors {
    ($t:ty) => {
        impl From<$crate::MetaError> for $t {
            fn from(e: $crate::MetaError) -> Self {
                Self::Meta(e)
            }
        }

        impl From<metabench_schema::DecodeError> for $t {
            fn from(e: metabench_schema::DecodeError) -> Self {
                Self::Meta(e.into())
            }
        }
    };
}

pub(crate) use from_meta_errors;

/// Why an attempt of a Redis or TKV transaction stopped: a conflict (a nil EXEC, a
/// compare that failed, a write conflict, or a server state JuiceFS's `shouldRetry`
/// retries) or a final error.
#[derive(Debug)]
pub(crate) enum TxErr {
    /// Run the whole transaction again (the message says why, for the last error).
    Retry(String),
    /// Give up with this error.
    Meta(MetaError),
}

from_meta_errors!(TxErr);

impl From<TxErr> for MetaError {
    fn from(e: TxErr) -> Self {
        match e {
            TxErr::Retry(msg) => MetaError::Engine(msg),
            TxErr::Meta(e) => e,
        }
    }
}

/// The step after attempt `*attempt` of a Redis or TKV transaction failed with a conflict
/// (`redisMeta.txn`, `kvMeta.txn`): sleeps a random 0..(i+1)² ms and counts the attempt;
/// after [`MAX_TRIES`] it gives up with [`MetaError::Conflict`] instead.
pub(crate) async fn after_conflict(
    attempt: &mut u32,
    engine: &str,
    msg: &str,
) -> Result<(), MetaError> {
    tokio::time::sleep(backoff_random_square(*attempt)).await;
    *attempt += 1;
    if *attempt >= MAX_TRIES {
        tracing::warn!("{engine} transaction gave up after {attempt} tries: {msg}");
        return Err(MetaError::Conflict(*attempt));
    }
    Ok(())
}

/// The retry waste of an attempt that conflicted and was retried: ns from `*tried` (when
/// the attempt started) to now, the backoff sleep after it included; `*tried` becomes now,
/// the next attempt's start.
pub(crate) fn wasted_since(tried: &mut std::time::Instant) -> u64 {
    let now = std::time::Instant::now();
    let wasted = now.duration_since(*tried).as_nanos() as u64;
    *tried = now;
    wasted
}

/// Decodes an attribute read inside a Redis or TKV transaction.
pub(crate) fn decode_attr(buf: &[u8]) -> Result<metabench_schema::Attr, TxErr> {
    Ok(metabench_schema::Attr::decode(buf)?)
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

//! [`SqlSession`]: one JuiceFS client on an SQL engine, sending exactly the statements of
//! `pkg/meta/sql.go` in the same transactions.
//!
//! Transactions follow `dbMeta.txn` (write: BEGIN … COMMIT, ROLLBACK on error, up to 50
//! attempts with an i² ms sleep on retryable errors), `dbMeta.roTxn` (a read-only,
//! repeatable-read transaction that always ends with ROLLBACK) and `dbMeta.simpleTxn`
//! (one autocommit statement, retried the same way). What the Go client does in the
//! background — dir-stat and volume-counter flushes, freeing deleted files' data — is
//! buffered here and done by [`crate::Meta::flush`].
//!
//! - `sql_session`: the session's state and opening it; `storage`: its [`crate::Storage`]
//!   steps, each a transaction written beside its concern (`namespace`, `attrs`,
//!   `chunks`, `background`, `registered`);
//! - `txn`: the transaction plumbing (`txn!`, `ro_txn!`, `simple!`, the shared
//!   statements), `tx_err`: why an attempt failed; `rows`: the tables' rows as values.

mod attrs;
mod background;
mod chunks;
mod fill;
mod namespace;
mod registered;
mod rows;
mod sql_session;
mod storage;
mod tx_err;
mod txn;

pub(crate) use fill::SqlBulk;
pub(crate) use rows::node_args;
pub use sql_session::SqlSession;

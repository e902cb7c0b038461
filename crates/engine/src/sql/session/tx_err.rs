//! Why an attempt of an SQL transaction failed, and what the operation returns after its
//! last attempt (`dbMeta.txn`'s retry rule in `pkg/meta/sql.go`).

use crate::retry::MAX_TRIES;
use crate::sql::conn::{DbError, ErrKind};
use crate::MetaError;

/// Why a transaction attempt failed.
pub(crate) enum TxErr {
    /// An errno from the operation's logic: rolled back, not retried.
    Meta(MetaError),
    /// A parent update matched no row on MySQL (`syscall.EBUSY`): retried.
    Busy,
    /// A statement failed.
    Db(DbError),
    /// COMMIT failed.
    Commit(DbError),
}

crate::retry::from_meta_errors!(TxErr);

impl From<DbError> for TxErr {
    fn from(e: DbError) -> Self {
        TxErr::Db(e)
    }
}

impl TxErr {
    /// Whether an autocommit statement (`simpleTxn`) that failed so may be retried: any
    /// database error that is not fatal.
    pub(crate) fn retryable_outside_txn(&self) -> bool {
        matches!(self, TxErr::Db(d) if d.kind != ErrKind::Fatal)
    }
}

/// The error an operation returns after its last attempt.
pub(crate) fn final_error(e: TxErr, retryable: bool) -> MetaError {
    match e {
        TxErr::Meta(m) => m,
        TxErr::Busy => MetaError::Conflict(MAX_TRIES),
        TxErr::Db(d) | TxErr::Commit(d) if retryable => {
            tracing::debug!("giving up after {MAX_TRIES} tries: {}", d.msg);
            MetaError::Conflict(MAX_TRIES)
        }
        TxErr::Db(d) | TxErr::Commit(d) => MetaError::Engine(d.msg),
    }
}

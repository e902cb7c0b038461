//! A registered session on SQL (`NewSession(true)`): `doNewSession`, `doRefreshSession`
//! and `doCleanStaleSession` of `pkg/meta/sql.go`, statement for statement, except the
//! `syncTable` checks `doNewSession` makes first (see the family's fidelity notes).

use super::sql_session::SqlSession;
use super::tx_err::TxErr;
use super::txn::{simple, txn};
use crate::base::{session_expire, session_info, SessionSteps};
use crate::sql::conn::Arg;
use crate::{MetaError, Result};
use metabench_schema::sql::Dialect;

impl SessionSteps for SqlSession {
    /// `doNewSession`: the `session2` row, in a transaction; EEXIST when another client
    /// holds the id (a duplicate key), for the caller to take the next one.
    async fn do_new_session(&mut self, info: &[u8]) -> Result<()> {
        let st = self.st.clone();
        let sid = Arg::I64(self.base.sid() as i64);
        txn!(self, {
            self.exec(
                &st.session2_insert,
                &[sid, Arg::I64(session_expire()), Arg::Bytes(info)],
            )
            .await
            .map_err(|d| {
                if d.duplicate {
                    TxErr::Meta(MetaError::Exists)
                } else {
                    TxErr::Db(d)
                }
            })?;
        })
    }

    /// `doRefreshSession`: the row's expiry moved on, or the row written back when
    /// another client cleaned the session up as stale meanwhile.
    async fn do_refresh_session(&mut self) -> Result<()> {
        let st = self.st.clone();
        let sid = self.base.sid() as i64;
        txn!(self, {
            let d = self
                .exec(
                    &st.session2_update_expire,
                    &[Arg::I64(session_expire()), Arg::I64(sid)],
                )
                .await?;
            if d.rows_affected == 0 {
                tracing::warn!(
                    "session {sid} was stale and cleaned up, but now it comes back again"
                );
                let info = session_info();
                self.exec(
                    &st.session2_insert,
                    &[Arg::I64(sid), Arg::I64(session_expire()), Arg::Bytes(&info)],
                )
                .await?;
            }
        })
    }

    /// `doCleanStaleSession`: the session's locks released (one transaction), its
    /// sustained inodes listed (metabench makes none and frees none: any is an error),
    /// then its `session2` row removed, with the legacy `session` table's row when that
    /// table exists.
    async fn do_clean_stale_session(&mut self, sid: u64) -> Result<()> {
        let st = self.st.clone();
        let id = Arg::I64(sid as i64);
        txn!(self, {
            self.exec(&st.flock_delete_sid, &[id]).await?;
            self.exec(&st.plock_delete_sid, &[id]).await?;
        })?;
        let open = simple!(self, {
            self.fetch(&st.sustained_of_sid, &[id]).await?.len()
        })?;
        if open > 0 {
            return Err(MetaError::Engine(format!(
                "session {sid} keeps {open} deleted files open; metabench does not free them, \
                 a juicefs client will once the session expires"
            )));
        }
        let legacy = format!("{}session", st.prefix);
        txn!(self, {
            self.exec(&st.session2_delete, &[id]).await?;
            let exists = match st.dialect {
                Dialect::Sqlite => self.fetch(&st.table_exists, &[Arg::Str(&legacy)]).await?,
                _ => {
                    self.fetch(
                        &st.table_exists,
                        &[Arg::Str(&st.table_schema), Arg::Str(&legacy)],
                    )
                    .await?
                }
            };
            if !exists.is_empty() {
                self.exec(&st.legacy_session_delete, &[id]).await?;
            }
        })
    }
}

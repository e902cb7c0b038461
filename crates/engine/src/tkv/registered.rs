//! A registered session on the TKV family (`NewSession(true)`): `doNewSession`,
//! `doRefreshSession` and `doCleanStaleSession` of `pkg/meta/tkv.go` (for a volume without
//! a change log), call for call.

use super::kv::{txn, KeyRange};
use super::session::TkvSession;
use crate::base::{session_expire, session_info, SessionSteps};
use crate::{MetaError, Result};
use metabench_schema::tkv::TkvKeys;

impl SessionSteps for TkvSession {
    /// `doNewSession`: the session's expiry, then its info, each set in a transaction of
    /// its own (`setValue`).
    async fn do_new_session(&mut self, info: &[u8]) -> Result<()> {
        let sid = self.base.sid();
        let (expiry, key_info) = (self.keys.session(sid), self.keys.session_info(sid));
        txn!(self, |tx| {
            tx.set(&expiry, &session_expire().to_be_bytes()).await?;
            Ok(())
        })?;
        txn!(self, |tx| {
            tx.set(&key_info, info).await?;
            Ok(())
        })
    }

    /// `doRefreshSession`: the expiry read and moved on; the info written back when
    /// another client cleaned the session up as stale meanwhile.
    async fn do_refresh_session(&mut self) -> Result<()> {
        let sid = self.base.sid();
        let (expiry, key_info) = (self.keys.session(sid), self.keys.session_info(sid));
        txn!(self, |tx| {
            if tx.get(&expiry).await?.is_none() {
                tracing::warn!(
                    "session {sid} was stale and cleaned up, but now it comes back again"
                );
                tx.set(&key_info, &session_info()).await?;
            }
            tx.set(&expiry, &session_expire().to_be_bytes()).await?;
            Ok(())
        })
    }

    /// `doCleanStaleSession`: the lock records scanned (`F`, `P`; metabench takes no
    /// locks, so none is its own to release), the sustained inodes scanned (metabench
    /// makes none and frees none: any is an error), then the expiry, legacy and info keys
    /// deleted in one transaction.
    async fn do_clean_stale_session(&mut self, sid: u64) -> Result<()> {
        let keys = self.keys.clone();
        for prefix in keys.lock_prefixes() {
            txn!(self, |tx| {
                tx.scan(KeyRange::new(&prefix, &TkvKeys::prefix_end(&prefix)))
                    .await?;
                Ok(())
            })?;
        }
        let sustained = keys.sustained_prefix(sid);
        let open = txn!(self, |tx| {
            let rows = tx
                .scan(KeyRange::new(&sustained, &TkvKeys::prefix_end(&sustained)).keys_only())
                .await?;
            Ok(rows.len())
        })?;
        if open > 0 {
            return Err(MetaError::Engine(format!(
                "session {sid} keeps {open} deleted files open; metabench does not free them, \
                 a juicefs client will once the session expires"
            )));
        }
        txn!(self, |tx| {
            tx.delete(&keys.session(sid));
            tx.delete(&keys.legacy_session(sid));
            tx.delete(&keys.session_info(sid));
            Ok(())
        })
    }
}

//! [`SqlSession`]: the state of one JuiceFS client on an SQL engine, and opening it
//! (`NewClient` → `Load`: the volume's format read first).

use crate::base::ClientState;
use crate::sql::conn::{Arg, Conn};
use crate::sql::dialect::Stmts;
use crate::sql::target::Target;
use crate::{MetaError, Result, SessionOptions, SessionStats};
use metabench_schema::sql::Dialect;
use metabench_schema::{Format, Ino};
use std::sync::Arc;
use tokio::sync::Mutex;

/// One JuiceFS client on an SQL engine, with its own connection.
pub struct SqlSession {
    pub(super) st: Arc<Stmts>,
    pub(super) target: Arc<Target>,
    /// The engine's shared connection, used for the background inode prefetch.
    pub(super) bg: Arc<Mutex<Option<Conn>>>,
    pub(super) conn: Option<Conn>,
    pub(super) stats: SessionStats,
    /// `Format.TrashDays`: deleted entries move to the trash when > 0.
    pub(super) trash_days: i64,
    /// The trash sub-directory of the current hour (`subTrash`).
    pub(super) sub_trash: Option<(String, Ino)>,
    /// What the client keeps between calls (`baseMeta`'s fields).
    pub(super) base: ClientState,
}

impl SqlSession {
    pub(crate) async fn open(
        target: Arc<Target>,
        st: Arc<Stmts>,
        bg: Arc<Mutex<Option<Conn>>>,
        opts: SessionOptions,
        client: Option<&ClientState>,
    ) -> Result<Self> {
        let mut conn = target.connect().await?;
        // NewClient loads the format first.
        let rows = conn
            .fetch(&st.setting_get, &[Arg::Str("format")])
            .await
            .map_err(|e| MetaError::Engine(e.msg))?;
        let format = match rows.first() {
            Some(r) => Format::from_json(r.bytes(1).map_err(|e| MetaError::Engine(e.msg))?)
                .map_err(MetaError::Corrupt)?,
            None => {
                conn.close().await;
                return Err(MetaError::Engine(format!(
                    "no JuiceFS volume with table prefix {} in {} (format it first)",
                    st.prefix,
                    target.url.redacted()
                )));
            }
        };
        format.check_version().map_err(MetaError::Engine)?;
        let base = match client {
            Some(c) => c.add_worker(),
            None => ClientState::new(format.dir_stats, &opts),
        };
        if st.dialect == Dialect::Sqlite {
            base.always_lock();
        }
        Ok(Self {
            st,
            target,
            bg,
            conn: Some(conn),
            stats: SessionStats::default(),
            trash_days: if opts.skip_trash {
                0
            } else {
                format.trash_days
            },
            sub_trash: None,
            base,
        })
    }
}

//! [`TestEngine`]: the engine a test body of [`engine_matrix!`](crate::engine_matrix) runs on.

use crate::Kind;

/// An engine a test body runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestEngine {
    /// The in-memory KV store, in the test process.
    Memkv,
    /// etcd 3.5 (`METABENCH_ETCD_URL`).
    Etcd,
    /// etcd 3.4 (`METABENCH_ETCD34_URL`, Debian's etcd-server).
    Etcd34,
    /// PD + the unistore stand-in (`METABENCH_TIKV_URL`).
    Tikv,
    /// A database of [`crate::fresh_database`]: Redis, SQLite, MariaDB or PostgreSQL.
    Db(Kind),
    /// A private three-primary Redis Cluster ([`crate::RedisCluster`]), reached through its
    /// seed list.
    RedisCluster,
}

/// A body written for databases only takes the database's [`Kind`].
impl From<TestEngine> for Kind {
    fn from(engine: TestEngine) -> Kind {
        match engine {
            TestEngine::Db(kind) => kind,
            other => panic!("{other:?} is not a database of fresh_database"),
        }
    }
}

//! One engine matrix for every engine test: [`TestEngine`] names an engine a test body runs
//! on, and [`engine_matrix!`](crate::engine_matrix) writes one `#[tokio::test]` per engine
//! and body.

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
}

impl TestEngine {
    /// The engine a module of [`engine_matrix!`](crate::engine_matrix) is named after.
    pub fn named(module: &str) -> Self {
        match module {
            "memkv" => Self::Memkv,
            "etcd" => Self::Etcd,
            "etcd34" => Self::Etcd34,
            "tikv" => Self::Tikv,
            "redis" => Self::Db(Kind::Redis),
            "sqlite" => Self::Db(Kind::Sqlite),
            "mysql" => Self::Db(Kind::Mysql),
            "postgres" => Self::Db(Kind::Postgres),
            other => panic!("engine_matrix!: no test engine named '{other}'"),
        }
    }
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

/// Runs each test body on each engine: `engine_matrix!([redis, sqlite] => a, b)` writes
/// `mod redis { #[tokio::test] async fn a() { super::a(TestEngine::named("redis").into()) … } }`
/// and so on, so one body serves every engine and the test names say which engine failed.
/// A body takes a [`TestEngine`] or, for databases only, a [`Kind`]. The etcd and TiKV
/// modules exist only with the test crate's `etcd` and `tikv` features.
#[macro_export]
macro_rules! engine_matrix {
    ([$($engine:ident),* $(,)?] => $($name:ident),* $(,)?) => {
        $crate::engine_matrix!(@each [$($engine),*] [$($name),*]);
    };
    (@each [] $names:tt) => {};
    (@each [$first:ident $(, $rest:ident)*] $names:tt) => {
        $crate::engine_matrix!(@engine $first $names);
        $crate::engine_matrix!(@each [$($rest),*] $names);
    };
    (@engine etcd $names:tt) => {
        #[cfg(feature = "etcd")]
        $crate::engine_matrix!(@module etcd $names);
    };
    (@engine etcd34 $names:tt) => {
        #[cfg(feature = "etcd")]
        $crate::engine_matrix!(@module etcd34 $names);
    };
    (@engine tikv $names:tt) => {
        #[cfg(feature = "tikv")]
        $crate::engine_matrix!(@module tikv $names);
    };
    (@engine $engine:ident $names:tt) => {
        $crate::engine_matrix!(@module $engine $names);
    };
    (@module $engine:ident [$($name:ident),*]) => {
        mod $engine {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name($crate::TestEngine::named(stringify!($engine)).into()).await
                }
            )*
        }
    };
}

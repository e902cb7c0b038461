//! One engine matrix for every engine test: [`engine_matrix!`](crate::engine_matrix)
//! writes one `#[tokio::test]` per engine and body, each passing the body a
//! [`TestEngine`](crate::TestEngine).

/// Runs each test body on each engine: `engine_matrix!([redis, sqlite] => a, b)` writes
/// `mod redis { #[tokio::test] async fn a() { super::a(TestEngine::Db(Kind::Redis).into()) … } }`
/// and so on, so one body serves every engine and the test names say which engine failed.
/// A body takes a [`TestEngine`](crate::TestEngine) or, for databases only, a
/// [`Kind`](crate::Kind). The etcd and TiKV modules exist only with the test crate's `etcd`
/// and `tikv` features; an engine name the macro does not know is a compile error.
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
                    super::$name($crate::engine_matrix!(@value $engine).into()).await
                }
            )*
        }
    };
    // The engine each module name stands for; any other name does not compile.
    (@value memkv) => { $crate::TestEngine::Memkv };
    (@value etcd) => { $crate::TestEngine::Etcd };
    (@value etcd34) => { $crate::TestEngine::Etcd34 };
    (@value tikv) => { $crate::TestEngine::Tikv };
    (@value redis) => { $crate::TestEngine::Db($crate::Kind::Redis) };
    (@value redis_cluster) => { $crate::TestEngine::RedisCluster };
    (@value sqlite) => { $crate::TestEngine::Db($crate::Kind::Sqlite) };
    (@value mysql) => { $crate::TestEngine::Db($crate::Kind::Mysql) };
    (@value postgres) => { $crate::TestEngine::Db($crate::Kind::Postgres) };
    (@value $other:ident) => {
        compile_error!(concat!("engine_matrix!: no test engine named '", stringify!($other), "'"))
    };
}

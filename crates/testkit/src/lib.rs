//! Test support for metabench (a dev-dependency only; never published).
//!
//! Tests run through `scripts/test.sh`, which starts a private MariaDB, PostgreSQL and
//! Redis on 127.0.0.1 and exports where they are:
//!
//! | variable | value |
//! |---|---|
//! | `METABENCH_MYSQL_URL` | `mysql://metabench:metabench-test-pw@(127.0.0.1:13306)/` (append a database) |
//! | `METABENCH_PG_URL` | `postgres://metabench:metabench-test-pw@127.0.0.1:15432/` (append a database) |
//! | `METABENCH_PG_LOG` | PostgreSQL's log: `log_statement=all`, `log_line_prefix='%d\|%p\|'` |
//! | `METABENCH_REDIS_URL` | `redis://:metabench-test-pw@127.0.0.1:16379/` (append a db number) |
//! | `METABENCH_JUICEFS` | the juicefs 1.4.x binary |
//! | `METABENCH_ENGINES_DIR` | the engines' data dir; temp dirs of this crate go under its `tmp/` |
//!
//! What this crate gives:
//!
//! - [`metabench_command`], [`run_metabench`] and [`output_text`]: the binary with a clean
//!   environment, as the integration tests run it.
//! - [`RedisServer`]: a private `redis-server` per test, so `INFO commandstats` deltas are
//!   exact ([`RedisServer::commandstats`]).
//! - [`fresh_database`]: an empty database with a unique name on the shared MySQL or
//!   PostgreSQL server, a temp SQLite file, or a private Redis, dropped with the
//!   [`TestDb`]. A missing variable panics with a hint: tests never skip silently.
//! - Server-side statement logs: [`pg_statements`] (from `METABENCH_PG_LOG`) and
//!   [`mysql_general_log`] (MariaDB's general log as a table), to count round trips.
//! - [`engine_matrix!`] and [`TestEngine`]: one test body run on each engine, one
//!   `#[tokio::test]` per engine and body.
//! - The real `juicefs` binary as an oracle: [`juicefs_format`], [`juicefs_dump`],
//!   [`juicefs_fsck`], [`juicefs_mdtest`], [`juicefs_load`], [`juicefs_status`], and
//!   [`dump_tree`], which
//!   flattens a dump into `path -> DumpNode` for comparisons.

#![deny(missing_docs)]

mod cli;
mod db;
mod dump;
mod etcd;
mod jfs;
mod logs;
mod matrix;
mod password;
mod redis;
mod test_engine;
mod tls;
mod util;

pub use cli::{confine_to_cpus, metabench_command, output_text, run_metabench};
pub use db::{fresh_database, Kind, TestDb};
pub use dump::{dump_tree, dump_tree_at, unescape, DumpChunk, DumpNode, DumpSlice};
pub use etcd::EtcdServer;
pub use jfs::{
    fsck_problems, juicefs, juicefs_bin, juicefs_dump, juicefs_dump_with, juicefs_format,
    juicefs_format_with, juicefs_fsck, juicefs_fsck_dir_stats, juicefs_load, juicefs_mdtest,
    juicefs_status, write_slice_blocks,
};
pub use logs::{
    mysql_general_log, mysql_general_log_enable, pg_log_entries, pg_log_entries_since, pg_log_path,
    pg_log_position, pg_statements, pg_statements_since, PgLogEntry,
};
pub use password::PASSWORD;
pub use redis::{RedisCluster, RedisServer, Resp, SentinelSet, SENTINEL_MASTER};
pub use test_engine::TestEngine;
pub use tls::TestCerts;
pub use util::{temp_dir, unique_name};

//! The engine crate's integration tests, in one binary as ripgrep keeps its own: the engine
//! clients are linked once, and every module runs against the engines `scripts/test.sh`
//! starts.

mod common;
mod conformance;
mod conformance_sessions;
mod kv_interop;
mod redis_cluster;
mod redis_monitor;
mod redis_round_trips;
mod redis_semantics;
mod redis_volume;
mod sql_admin;
mod sql_common;
mod sql_interop;
mod sql_semantics;
mod sql_statements;
mod tkv_calls;
mod tkv_volume;
mod url_forms;

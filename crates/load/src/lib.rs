//! Load generation: the operation catalogue and the runners that drive engine sessions.
//!
//! [`catalog`] knows, for every operation of JuiceFS's Go benchmark, its untimed setup,
//! its untimed per-call preparation and its timed call. [`ops`] runs them one after the
//! other on one client, the way `go test -bench` does, and measures each.

pub mod catalog;
pub mod ops;

pub use catalog::Op;
pub use ops::{run_ops, Budget, OpsConfig, StopFlag};

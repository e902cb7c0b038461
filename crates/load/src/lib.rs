//! Load generation: the operation catalogue and the runners that drive engine sessions.
//!
//! [`catalog`] knows, for every operation of JuiceFS's Go benchmark, its untimed setup,
//! its untimed per-call preparation and its timed call. [`ops`] runs them one after the
//! other on one client, the way `go test -bench` does, and measures each; [`sweep`] runs
//! a [`workload`] at each concurrency level of a [`spec`] until the engine saturates.

pub mod catalog;
pub mod client;
pub mod dist;
pub mod exec;
pub mod floor;
pub mod ops;
pub mod placement;
pub mod population;
mod ready_wait;
pub mod spec;
pub mod stats;
pub mod stop;
pub mod sweep;
pub mod target;
pub mod team;
pub mod timing;
pub mod workload;

pub use catalog::Op;
pub use dist::{KeyDist, KeySampler};
pub use exec::{Exec, Idle};
pub use floor::measure_floor;
pub use ops::{run_ops, Budget, OpsConfig, OpsOutcome};
pub use population::{Population, TreeSpec};
pub use spec::{ConcSpec, RateSpec};
pub use stop::StopFlag;
pub use sweep::{run_sweep, Arrivals, Live, OpenLoop, SweepConfig, SweepOutcome};
pub use target::{Session, Target};
pub use team::{Solo, Team};
pub use workload::{Phase, Workload};

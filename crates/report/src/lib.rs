//! Results of metabench runs and how people read them.
//!
//! [`model`] is the versioned JSON every run writes; [`histogram`] stores latency
//! histograms inside it; [`table`] renders terminal tables in the layout of the JuiceFS
//! docs, with an optional "(×N)" column against a baseline run. Nothing here knows how an
//! engine is reached.

pub mod analysis;
pub mod compare;
pub mod cross;
pub mod histogram;
mod labeled_run;
pub mod model;
pub mod plot;
pub mod scale;
pub mod stats;
pub mod table;

pub use model::{cpu_list, kind_of, read_results_of};
pub use model::{
    AnyResults, BackgroundWork, Breakdown, ClientCheck, ClientLag, Disruption, EngineCheck,
    EngineInfo, Floor, Footprint, HostInfo, IntervalSample, Latency, Level, LevelOp, MpiRun,
    OpResult, OpsPlan, OpsResults, RankLevel, ReachRecord, ReadsFrom, RunFailure, RunHeader,
    ServiceTime, SweepPlan, SweepResults, BREAKDOWN_PARTS, SCHEMA_VERSION,
};

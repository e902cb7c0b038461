//! The arguments of `metabench sweep`, and the sweep they ask for.

use crate::args::{parse_duration, parse_duration_or_zero, ClientArgs};
use crate::volume::VolumeArgs;
use metabench_engine::SessionOptions;
use metabench_load::{Arrivals, ConcSpec, Op, OpenLoop, RateSpec, SweepConfig, Workload};
use std::path::PathBuf;
use std::time::Duration;

/// Arguments of `metabench sweep`.
#[derive(Debug, clap::Args)]
pub struct SweepArgs {
    #[command(flatten)]
    pub(super) volume: VolumeArgs,

    /// Concurrency levels: 1..128 (doubling), 1,8,64 (list), 8..64:+8 (step),
    /// 1..1024:x2 (factor); 1..128 when not given. With --rate: one number, the fixed
    /// client pool; when not given, a pool large enough for the highest rate at the
    /// floor's latency is picked and said.
    #[arg(long, value_name = "SPEC")]
    pub(super) conc: Option<ConcSpec>,

    /// Open loop: offered rates in calls per second over all clients, one level each
    /// (20000, 1000..64000:x2, 5000..50000:+5000). Calls arrive on a schedule whatever
    /// the engine does; latency runs from each call's intended start (no coordinated
    /// omission) and service time is kept beside it. The sweep stops at the first rate
    /// achieved below 95% of offered, or whose p99 passes --p99-limit.
    #[arg(long, value_name = "SPEC", conflicts_with = "until_plateau")]
    pub(super) rate: Option<RateSpec>,

    /// Open loop: how arrivals are spaced, constant or poisson.
    #[arg(
        long,
        value_name = "SCHEDULE",
        default_value = "constant",
        requires = "rate"
    )]
    pub(super) arrivals: Arrivals,

    /// Operations, each run as its own phase at every level (default: create,getattr).
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "OP,...",
        conflicts_with = "workload"
    )]
    pub(super) ops: Vec<Op>,

    /// A workload instead of --ops: golang (every operation of JuiceFS's Go benchmark),
    /// nnbench (create+write, open, rename, delete), or a mix from configs/workloads/NAME.toml
    /// or a TOML file path.
    #[arg(long, value_name = "NAME")]
    pub(super) workload: Option<String>,

    /// Discarded warm-up before each timed window (0 for none).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_duration_or_zero)]
    pub(super) warmup: Duration,

    /// Timed window per level and phase.
    #[arg(long, value_name = "DURATION", default_value = "3s", value_parser = parse_duration)]
    pub(super) duration: Duration,

    /// Make all clients work in one hot directory instead of one directory each.
    #[arg(long)]
    pub(super) shared_dir: bool,

    /// Do not read the engine's own counters (Redis INFO, pg_stat_*, SHOW GLOBAL STATUS,
    /// etcd /metrics) at each window's start and end: no engine check, and the latency
    /// breakdown's engine part is unknown. What reading them costs is this run against
    /// one with them.
    #[arg(long)]
    pub(super) no_engine_counters: bool,

    /// Group each level's workers (--conc counts them) into JuiceFS clients of this many,
    /// as the threads of one mount: the workers of a client share its state (id batches,
    /// buffers, caches), its registered session (under the mount profile) and JuiceFS's
    /// process-local transaction locks; each has a connection of its own (TKV engines:
    /// the process's one engine client, as in JuiceFS). `--conc 12 --threads-per-client 4`
    /// is 12 threads on 3 mounts. Default 1: every worker is a client of its own.
    #[arg(long, value_name = "K", default_value = "1", value_parser = clap::value_parser!(u32).range(1..))]
    pub(super) threads_per_client: u32,

    /// Report the first level whose p99 exceeds this latency, e.g. 10ms (with --rate:
    /// stop there).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub(super) p99_limit: Option<Duration>,

    /// Stop when throughput has not grown by 5% for two consecutive levels.
    #[arg(long)]
    pub(super) until_plateau: bool,

    #[command(flatten)]
    pub(super) client: ClientArgs,

    #[command(flatten)]
    pub(super) tree: crate::tree::TreeArgs,

    /// Write the results (versioned JSON with histograms) to this file.
    #[arg(long, value_name = "FILE")]
    pub(super) json: Option<PathBuf>,

    /// Write one CSV row per level and operation to this file.
    #[arg(long, value_name = "FILE")]
    pub(super) csv: Option<PathBuf>,

    /// Write an HdrHistogram interval log per level (1 s intervals, tagged by operation)
    /// into this directory.
    #[arg(long, value_name = "DIR")]
    pub(super) hdr_dir: Option<PathBuf>,
}

/// The concurrency levels of a closed loop when `--conc` is not given.
const DEFAULT_CONC: &str = "1..128";

impl SweepArgs {
    /// The concurrency levels asked for: `--conc`, else [`DEFAULT_CONC`] (a closed loop);
    /// `None` for an open loop without `--conc`, whose pool is picked from the floor
    /// ([`super::plan::open_loop_pool`]).
    pub(super) fn conc(&self) -> Option<ConcSpec> {
        match (&self.conc, &self.rate) {
            (Some(conc), _) => Some(conc.clone()),
            (None, None) => Some(DEFAULT_CONC.parse().expect("the default parses")),
            (None, Some(_)) => None,
        }
    }

    /// The open loop `--rate` asks for, if it does.
    pub(super) fn open_loop(&self) -> Option<OpenLoop> {
        self.rate.as_ref().map(|rate| OpenLoop {
            rates: rate.rates().to_vec(),
            arrivals: self.arrivals,
            p99_limit: self.p99_limit,
        })
    }

    /// The sweep these arguments ask for: `levels` of `workload`, the windows, the open
    /// loop, and sessions of `session` whose clients have `threads_per_client` workers.
    pub(super) fn config(
        &self,
        levels: Vec<u32>,
        workload: &Workload,
        session: SessionOptions,
        background_in_window: bool,
        threads_per_client: u32,
    ) -> SweepConfig {
        SweepConfig {
            levels,
            workload: workload.clone(),
            warmup: self.warmup,
            duration: self.duration,
            shared_dir: self.shared_dir,
            until_plateau: self.until_plateau,
            session,
            background_in_window,
            op_timeout: self.client.op_timeout,
            threads_per_client,
            open_loop: self.open_loop(),
            tree: None,
            engine_counters: !self.no_engine_counters,
        }
    }
}

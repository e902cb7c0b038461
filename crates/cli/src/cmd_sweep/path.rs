//! `metabench sweep` on a system beside JuiceFS, at a path-level URL:
//! `hdfs://host:port/path` (HDFS) or `s3://bucket/prefix?endpoint=…&region=…` (S3),
//! with the same levels, windows, timing and results as on a JuiceFS engine, so
//! `matrix` and `report` put them on the same axes.
//!
//! The run works only in a directory (HDFS) or prefix (S3) of its own,
//! `PATH/metabench-<run>`, removed afterwards, also after Ctrl-C or a failure. A path that
//! holds data is refused unless `--existing`. Credentials for S3 come from the usual
//! environment variables and are never printed.

use super::args::SweepArgs;
use super::output::{publish, results, show_level, Progress};
use super::plan::{prepare, Prepared};
use crate::args::watch_ctrl_c;
use crate::error::{input, CliError};
use crate::lifecycle::{
    after_cleanup, exit_code, git_commit, record_client_threads, say_client_threads,
};
use crate::target::new_run_id;
use metabench_engine::SessionOptions;
use metabench_hdfs::{HdfsTarget, HdfsUrl};
use metabench_load::team::launched_by_mpi;
use metabench_load::{run_sweep, Live, Op, Solo, StopFlag};
use metabench_pathfs::{PathSystem, PathTarget};
use metabench_report::table::Detail;
use metabench_report::{EngineInfo, RunHeader};
use metabench_s3::{S3Target, S3Url};
use std::sync::Arc;

/// A path-level system's URL.
pub(crate) enum PathUrl {
    /// `hdfs://host:port/path`.
    Hdfs(HdfsUrl),
    /// `s3://bucket/prefix?…`.
    S3(S3Url),
}

impl PathUrl {
    /// The path-level URL `text` names; `None` when it is not one (a JuiceFS meta URL).
    pub(crate) fn parse(text: &str) -> Option<Result<Self, CliError>> {
        let bad = |e: metabench_mount::MountError| input(e.to_string());
        if text.starts_with("hdfs://") {
            Some(HdfsUrl::parse(text).map(Self::Hdfs).map_err(bad))
        } else if text.starts_with("s3://") {
            Some(S3Url::parse(text).map(Self::S3).map_err(bad))
        } else {
            None
        }
    }
}

/// A path-level system opened for a run: its URL checked, its run directory made.
pub(crate) enum Opened {
    /// HDFS.
    Hdfs(HdfsTarget),
    /// S3.
    S3(S3Target),
}

impl PathUrl {
    /// Opens the system for run `run_id` (see [`HdfsTarget::open`], [`S3Target::open`]):
    /// nothing is written when it refuses, and the refusal is one line.
    pub(crate) async fn open(self, run_id: &str, existing: bool) -> Result<Opened, CliError> {
        let opened = match self {
            Self::Hdfs(url) => HdfsTarget::open(&url, run_id, existing)
                .await
                .map(Opened::Hdfs),
            Self::S3(url) => S3Target::open(&url, None, run_id, existing)
                .await
                .map(Opened::S3),
        };
        opened.map_err(|e| CliError::Io(e.to_string()))
    }
}

/// Runs `metabench sweep` on a path-level system: checks the arguments, opens the
/// system (nothing is written when it refuses), sweeps, cleans up, writes the results.
pub(crate) async fn run(args: SweepArgs, url: PathUrl, detail: Detail) -> Result<i32, CliError> {
    if launched_by_mpi() {
        return Err(input(
            "HDFS and S3 are swept from one process: run metabench without mpirun",
        ));
    }
    if args.threads_per_client > 1 {
        return Err(input(
            "--threads-per-client groups workers into JuiceFS clients; HDFS and S3 have none",
        ));
    }
    let prepared = prepare(&args, true)?;
    if prepared.levels.is_empty() {
        return Err(input(
            "with --rate on HDFS or S3, give --conc (the fixed client pool, e.g. --conc 64): \
             they have no null round trip to size one by",
        ));
    }
    let foreign: Vec<&str> = prepared
        .workload
        .phases
        .iter()
        .flat_map(|p| &p.ops)
        .map(|(op, _)| *op)
        .filter(|op| !Op::NNBENCH.contains(op))
        .map(Op::name)
        .collect();
    if !foreign.is_empty() {
        return Err(input(format!(
            "HDFS and S3 have no call of their own for the JuiceFS operation(s) {}: use \
             --workload nnbench, or some of create_write, open, rename and unlink",
            foreign.join(", "),
        )));
    }
    let stop = StopFlag::default();
    let watcher = watch_ctrl_c(
        stop.clone(),
        "dropping the level in progress and cleaning up",
    );
    let run_id = new_run_id();
    let started_at = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let swept = match url.open(&run_id, args.target.existing).await {
        Ok(Opened::Hdfs(system)) => {
            sweep_on(system, &args, prepared, &stop, started_at, detail).await
        }
        Ok(Opened::S3(system)) => {
            sweep_on(system, &args, prepared, &stop, started_at, detail).await
        }
        Err(e) => Err(e),
    };
    watcher.abort();
    swept
}

/// The sweep on an opened system, its cleanup, and its results.
async fn sweep_on<P: PathSystem>(
    system: P,
    args: &SweepArgs,
    prepared: Prepared,
    stop: &StopFlag,
    started_at: String,
    detail: Detail,
) -> Result<i32, CliError> {
    let Prepared {
        exec,
        threads_why,
        workload,
        levels,
        plan,
        ..
    } = prepared;
    let engine = EngineInfo {
        kind: system.name().to_owned(),
        url: system.url(),
        version: String::new(),
        durability: Default::default(),
        formatted_by_metabench: false,
        client_profile: system.client().to_owned(),
        client_settings: Default::default(),
        fidelity_notes: system
            .fidelity_notes()
            .into_iter()
            .chain([metabench_load::timing::timing_note()])
            .collect(),
    };
    say!(
        "metabench sweep on {} ({}): levels {levels:?}, workload {}",
        engine.kind,
        engine.url,
        workload.name
    );
    say_client_threads(&exec, &threads_why);
    let config = args.config(levels, &workload, SessionOptions::default(), false, 1);
    let live = Arc::new(Live::default());
    let progress = Progress::start(true, &live, &workload, 1);
    let target = Arc::new(PathTarget(system));
    let mut log_error = None;
    let outcome = run_sweep(
        &exec,
        target.clone(),
        target.0.root(),
        &config,
        stop,
        live,
        &Solo::default(),
        |level, hists| {
            if let Err(e) = show_level(args, &progress.bar, level, hists) {
                log_error.get_or_insert(e);
            }
        },
    )
    .await
    .map_err(CliError::from);
    progress.finish();
    let cleanup = target.0.cleanup().await.map_err(|e| {
        format!(
            "{e}: remove {}/metabench-* of this run by hand",
            target.0.url()
        )
    });
    let (outcome, cleanup_error) = after_cleanup(outcome, cleanup, |o| o.failure.as_mut())?;
    let mut header = RunHeader::new("sweep", started_at, engine, git_commit());
    record_client_threads(&mut header, &exec);
    let mut run = results(header, plan, outcome, stop.is_stopped(), None);
    let write_error = publish(&mut run, args, detail);
    match (write_error.or(log_error), cleanup_error) {
        (Some(e), _) | (None, Some(e)) => Err(e),
        (None, None) => Ok(exit_code(run.failure.as_deref(), run.interrupted)),
    }
}

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
use crate::error::{input, CliError};
use crate::lifecycle::{ended, run_command, Command, Ended, Workspace};
use metabench_engine::SessionOptions;
use metabench_hdfs::{HdfsTarget, HdfsUrl};
use metabench_load::team::launched_by_mpi;
use metabench_load::{run_sweep, Exec, Live, Op, Solo, StopFlag, SweepOutcome};
use metabench_pathfs::{PathSystem, PathTarget};
use metabench_report::table::Detail;
use metabench_report::{EngineInfo, RunFailure, RunHeader};
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

/// An opened system as the type of its URL's scheme ([`PathRun`]'s `P`).
pub(crate) trait FromOpened: PathSystem + Sized {
    /// The system `opened` holds, if it is of this type.
    fn from_opened(opened: Opened) -> Option<Self>;
}

impl FromOpened for HdfsTarget {
    fn from_opened(opened: Opened) -> Option<Self> {
        match opened {
            Opened::Hdfs(system) => Some(system),
            Opened::S3(_) => None,
        }
    }
}

impl FromOpened for S3Target {
    fn from_opened(opened: Opened) -> Option<Self> {
        match opened {
            Opened::S3(system) => Some(system),
            Opened::Hdfs(_) => None,
        }
    }
}

/// A run on a path-level system: the system, its run directory made, and how results
/// describe it.
pub(crate) struct PathRun<P: PathSystem> {
    /// The system, as a target the runners drive.
    pub(crate) target: Arc<PathTarget<P>>,
    /// The system, as results files describe it.
    engine: EngineInfo,
}

impl<P: FromOpened> PathRun<P> {
    /// Opens the system at `url` for run `run_id` ([`PathUrl::open`]): nothing is written
    /// when it refuses, and the refusal is one line.
    pub(crate) async fn open(url: PathUrl, run_id: &str, existing: bool) -> Result<Self, CliError> {
        let system = P::from_opened(url.open(run_id, existing).await?)
            .expect("a URL opens the system of its scheme");
        let engine = EngineInfo {
            kind: system.name().to_owned(),
            url: system.url(),
            version: String::new(),
            settings: Default::default(),
            location: String::new(),
            cpu_sharing: String::new(),
            formatted_by_metabench: false,
            client_profile: system.client().to_owned(),
            client_settings: Default::default(),
            fidelity_notes: system
                .fidelity_notes()
                .into_iter()
                .chain([metabench_load::timing::timing_note()])
                .collect(),
            footprint: None,
        };
        Ok(Self {
            target: Arc::new(PathTarget(system)),
            engine,
        })
    }

    /// Opens the system at the URL `url` holds, which a command's `open` step takes once.
    pub(crate) async fn open_once(
        url: &mut Option<PathUrl>,
        run_id: &str,
        existing: bool,
    ) -> Result<Self, Ended> {
        let url = url.take().expect("opened once");
        Self::open(url, run_id, existing).await.map_err(Err)
    }

    /// The system.
    pub(crate) fn system(&self) -> &P {
        &self.target.0
    }
}

impl<P: PathSystem> Workspace for PathRun<P> {
    fn engine(&self) -> &EngineInfo {
        &self.engine
    }

    fn describe(&self) -> String {
        format!("{} ({})", self.engine.kind, self.engine.url)
    }

    fn notes_sleeping_clients(&self) -> bool {
        false
    }

    async fn clean_up(self, _engine_failed: bool) -> Result<(), String> {
        self.target.0.cleanup().await.map_err(|e| {
            format!(
                "{e}: remove {}/metabench-* of this run by hand",
                self.target.0.url()
            )
        })
    }
}

/// Runs `metabench sweep` on a path-level system through the one run lifecycle
/// ([`run_command`]): checks the arguments, opens the system (nothing is written when it
/// refuses), sweeps, cleans up, writes the results.
pub(crate) async fn run(args: SweepArgs, url: PathUrl, detail: Detail) -> Result<i32, CliError> {
    match url {
        PathUrl::Hdfs(_) => run_command(PathSweep::<HdfsTarget>::new(args, url, detail)).await,
        PathUrl::S3(_) => run_command(PathSweep::<S3Target>::new(args, url, detail)).await,
    }
}

/// `metabench sweep` on a path-level system as the lifecycle drives it.
struct PathSweep<P> {
    args: SweepArgs,
    detail: Detail,
    /// The URL, until the system is opened.
    url: Option<PathUrl>,
    /// What the arguments ask for, once checked.
    prepared: Option<Prepared>,
    /// The first level's line that could not be written.
    log_error: Option<CliError>,
    system: std::marker::PhantomData<P>,
}

impl<P> PathSweep<P> {
    fn new(args: SweepArgs, url: PathUrl, detail: Detail) -> Self {
        Self {
            args,
            detail,
            url: Some(url),
            prepared: None,
            log_error: None,
            system: std::marker::PhantomData,
        }
    }

    fn prepared(&self) -> &Prepared {
        self.prepared.as_ref().expect("prepared")
    }
}

impl<P: FromOpened> Command for PathSweep<P> {
    type Space = PathRun<P>;
    type Outcome = SweepOutcome;
    const NAME: &'static str = "sweep";
    const ON_CTRL_C: &'static str = "dropping the level in progress and cleaning up";

    async fn prepare(&mut self, _stop: &StopFlag) -> Result<(), Ended> {
        self.prepared = Some(prepare_path(&self.args).map_err(Err)?);
        Ok(())
    }

    fn threads(&self) -> Option<(&Exec, &str)> {
        let p = self.prepared();
        Some((&p.exec, p.threads_why.as_str()))
    }

    async fn open(&mut self, run_id: &str, _stop: &StopFlag) -> Result<PathRun<P>, Ended> {
        PathRun::open_once(&mut self.url, run_id, self.args.volume.existing).await
    }

    fn what(&self, _space: &PathRun<P>) -> String {
        let p = self.prepared();
        format!(": levels {:?}, workload {}", p.levels, p.workload.name)
    }

    async fn work(
        &mut self,
        space: &mut PathRun<P>,
        _header: &RunHeader,
        stop: &StopFlag,
    ) -> Result<SweepOutcome, CliError> {
        let (args, detail) = (&self.args, self.detail);
        let prepared = self.prepared.as_ref().expect("prepared");
        let config = args.config(
            prepared.levels.clone(),
            &prepared.workload,
            SessionOptions::default(),
            false,
            1,
        );
        let live = Arc::new(Live::default());
        let progress = Progress::start(true, &live, &prepared.workload, 1);
        let log_error = &mut self.log_error;
        let outcome = run_sweep(
            &prepared.exec,
            space.target.clone(),
            space.system().root(),
            &config,
            stop,
            live,
            &Solo::default(),
            |level, hists| {
                if let Err(e) = show_level(args, detail, &progress.bar, level, hists) {
                    log_error.get_or_insert(e);
                }
            },
        )
        .await
        .map_err(CliError::from);
        progress.finish();
        outcome
    }

    fn failure(outcome: &mut SweepOutcome) -> Option<&mut RunFailure> {
        outcome.failure.as_mut()
    }

    async fn publish(
        &mut self,
        outcome: SweepOutcome,
        header: RunHeader,
        left_behind: Option<CliError>,
        stop: &StopFlag,
    ) -> Ended {
        let plan = self.prepared().plan.clone();
        let mut run = results(header, plan, outcome, stop.is_stopped(), None);
        let write_error = publish(&mut run, &self.args, self.detail);
        ended(
            write_error.or(self.log_error.take()),
            left_behind,
            run.failure.as_deref(),
            run.interrupted,
        )
    }
}

/// Checks a sweep's arguments for a path-level system and starts its client threads.
fn prepare_path(args: &SweepArgs) -> Result<Prepared, CliError> {
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
    if args.tree.tree.is_some() {
        return Err(input(
            "--tree reads a JuiceFS volume's inode tree; HDFS and S3 have none",
        ));
    }
    let prepared = prepare(args, true)?;
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
    Ok(prepared)
}

//! `metabench sweep`: concurrency sweeps to saturation with per-operation histograms.

use crate::args::{write_file, ClientSettings};
use crate::error::{input, CliError};
use crate::lifecycle::{ended, exit_code, run_command, Command, Ended, Run, Workspace};
use crate::volume::VolumeArgs;
use metabench_load::team::{
    agree, answer, from_leader, gather_all, launched_by_mpi, Solo, Team, TeamError,
};
use metabench_load::StopFlag;
use metabench_report::model::peak_rss_bytes;
use metabench_report::table::Detail;
use metabench_report::MpiRun;
use metabench_schema::Ino;

use metabench_engine::namespace::Namespace;
use metabench_engine::{ClientProfile, EngineKind, MetaUrl, Scheme};
use metabench_load::sweep::IntervalHistograms;
use metabench_load::{measure_floor, run_sweep, Exec, Live, SweepOutcome};
use metabench_report::{Level, RunFailure, RunHeader, SweepResults};
use std::sync::Arc;
use std::time::Duration;

mod args;
mod output;
mod path;
mod plan;

pub use args::SweepArgs;
use output::{publish, results, show_level, Progress};
use plan::{prepare, Prepared};

pub(crate) use path::{FromOpened, PathRun, PathUrl};

/// The team this sweep runs on: the ranks of the MPI job that started it, or this
/// process alone.
fn join_team() -> Result<Box<dyn Team>, CliError> {
    if !launched_by_mpi() {
        return Ok(Box::new(Solo::default()));
    }
    #[cfg(feature = "mpi")]
    {
        metabench_mpi::MpiTeam::join()
            .map(|t| Box::new(t) as Box<dyn Team>)
            .map_err(|e| CliError::Io(format!("cannot join the MPI job: {e}")))
    }
    #[cfg(not(feature = "mpi"))]
    Err(input(
        "mpirun started this metabench as one of several ranks, but it was built without MPI: \
         build it with `cargo build --release --features mpi`",
    ))
}

/// Why rank 0 refused a job of several ranks, for all of them: the message and the exit
/// code.
type Refusal = (String, i32);

/// The error rank 0 reports for a refusal.
fn refusal_error((message, code): Refusal) -> CliError {
    match code {
        2 => CliError::Input(message),
        _ => CliError::Io(message),
    }
}

/// What each rank says before anything is written: its host and the sweep it would run,
/// so that rank 0 refuses a job whose ranks cannot run the same one.
#[derive(serde::Serialize, serde::Deserialize)]
struct Ready {
    host: String,
    /// This rank's metabench version and plan (JSON), or why it cannot run the sweep.
    sweep: Result<String, Refusal>,
}

impl Ready {
    fn new(team: &dyn Team, prepared: &Result<Prepared, CliError>) -> Self {
        Self {
            host: team.host().to_owned(),
            sweep: match prepared {
                Ok(p) => Ok(format!(
                    "{} {}",
                    env!("CARGO_PKG_VERSION"),
                    serde_json::to_string(&p.plan).expect("plans serialize")
                )),
                Err(e) => Err((e.one_line(), e.exit_code())),
            },
        }
    }
}

/// Rank 0's check of every rank's [`Ready`]: each could read its arguments, and all would
/// run the same sweep.
fn check_ready(all: Vec<Ready>) -> Result<(), Refusal> {
    let first = all[0].sweep.clone();
    for (rank, ready) in all.iter().enumerate() {
        match (&ready.sweep, &first) {
            (Err((e, code)), _) if rank == 0 => return Err((e.clone(), *code)),
            (Err((e, code)), _) => {
                return Err((format!("rank {rank} on {}: {e}", ready.host), *code))
            }
            (Ok(mine), Ok(first)) if mine != first => {
                return Err((
                    format!(
                        "rank {rank} on {} would run another sweep than rank 0 (another metabench \
                         version, or other workload files): every rank must run the same build \
                         with the same arguments",
                        ready.host
                    ),
                    2,
                ))
            }
            _ => {}
        }
    }
    Ok(())
}

/// What rank 0 tells the other ranks once the volume and the namespace are ready.
#[derive(serde::Serialize, serde::Deserialize)]
struct Joined {
    /// The meta URL the ranks open (the embedded default's, when none was given).
    meta_url: String,
    /// The run's namespace directory; each rank works in its own directories below it.
    namespace: Ino,
    /// The engine lives in each process (memkv): every rank formats a volume of its own.
    per_rank_volume: bool,
}

/// Why a rank has no run to sweep on.
enum StartFailed {
    /// Rank 0 could not start, and told every rank.
    Told(CliError),
    /// This rank alone could not start: it tells the others at the next step.
    Alone(CliError),
    /// The MPI job failed.
    Lost(CliError),
}

/// The volume and namespace of this rank: rank 0 opens (or formats) the volume and makes
/// the namespace, then tells the others, which enter the same volume (`--existing`);
/// with an in-process engine every rank makes its own.
async fn start_rank(
    args: &SweepArgs,
    settings: &ClientSettings,
    team: &dyn Team,
    run_id: &str,
) -> Result<Run, StartFailed> {
    let waiting = StopFlag::default();
    let mut joined: Option<Result<Joined, Refusal>> = None;
    let mut mine = None;
    if team.rank() == 0 {
        let started = async {
            if team.size() > 1 && args.shared_dir && is_memkv(&args.volume) {
                return Err(input(
                    "--shared-dir under MPI needs one volume all ranks share; with memkv:// each \
                     rank has its own store: use a server engine, or drop --shared-dir",
                ));
            }
            let run = Run::start(&args.volume, settings.clone(), None, run_id).await?;
            with_namespace(run).await
        }
        .await;
        joined = Some(match &started {
            Ok(run) => Ok(Joined {
                meta_url: run.volume.meta_url.clone(),
                namespace: run.namespace.as_ref().expect("made").dir,
                per_rank_volume: run.volume.engine.kind() == EngineKind::Memkv,
            }),
            Err(e) => Err((e.one_line(), e.exit_code())),
        });
        mine = Some(started);
    }
    let joined = match team.size() {
        1 => joined.expect("rank 0 of 1 leads"),
        _ => match from_leader(team, joined.as_ref(), &waiting).await {
            Ok(joined) => joined,
            Err(e) => {
                if let Some(Ok(run)) = mine {
                    end_early(run).await;
                }
                return Err(StartFailed::Lost(CliError::Io(format!("MPI: {e}"))));
            }
        },
    };
    if let Some(started) = mine {
        return started.map_err(StartFailed::Told);
    }
    let joined = joined.map_err(|refusal| StartFailed::Told(refusal_error(refusal)))?;
    let alone = StartFailed::Alone;
    if joined.per_rank_volume {
        let run = Run::start(&args.volume, settings.clone(), None, run_id)
            .await
            .map_err(alone)?;
        return with_namespace(run).await.map_err(StartFailed::Alone);
    }
    let shared = VolumeArgs {
        meta: Some(joined.meta_url),
        existing: true,
    };
    let mut run = Run::start(&shared, settings.clone(), None, run_id)
        .await
        .map_err(alone)?;
    run.namespace = Some(Namespace {
        top: 0,
        dir: joined.namespace,
        run_id: run.run_id.clone(),
    });
    run.owns_namespace = false;
    Ok(run)
}

/// Makes the run's namespace, `/.metabench/<run-id>`, in `run`'s volume; a run that could
/// not make it is cleaned up.
async fn with_namespace(mut run: Run) -> Result<Run, CliError> {
    match make_namespace(&run).await {
        Ok(ns) => {
            run.namespace = Some(ns);
            Ok(run)
        }
        Err(e) => {
            end_early(run).await;
            Err(e)
        }
    }
}

/// Whether the target is the in-process memkv engine.
fn is_memkv(target: &VolumeArgs) -> bool {
    let url = target.meta.as_deref().map(MetaUrl::parse);
    url.is_some_and(|url| url.is_ok_and(|url| url.scheme() == Scheme::Memkv))
}

/// Makes the run's namespace, `/.metabench/<run-id>`.
async fn make_namespace(run: &Run) -> Result<Namespace, CliError> {
    let mut meta = run
        .volume
        .session(&ClientProfile::Gobench.session_options())
        .await?;
    Ok(Namespace::create(meta.as_mut(), &run.run_id).await?)
}

/// What each rank says of itself once started: its host, its wall clock right after a
/// barrier (their spread bounds the clock skew), and why it could not start, if so.
#[derive(serde::Serialize, serde::Deserialize)]
struct Hello {
    host: String,
    wall_s: f64,
    failed: Option<String>,
}

/// The ranks' hellos: the MPI run's facts, or rank 0's refusal to go on (a rank could not
/// start, or the ranks span hosts but the volume is a file on rank 0's).
async fn hello(
    team: &dyn Team,
    stop: &StopFlag,
    failed: Option<String>,
    volume_on_rank0: bool,
) -> Result<Result<MpiRun, Refusal>, TeamError> {
    answer(team, team.barrier(), stop).await?;
    let wall_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let me = Hello {
        host: team.host().to_owned(),
        wall_s,
        failed,
    };
    let ranks = team.size() as u32;
    agree(team, &me, stop, |all| {
        if volume_on_rank0 && distinct(all.iter().map(|h| h.host.as_str())).len() > 1 {
            return Err((
                "the embedded default volume is a SQLite file on rank 0's host, which ranks on \
                 other hosts cannot open: give --meta a URL every host reaches"
                    .to_owned(),
                2,
            ));
        }
        if let Some((rank, h)) = all.iter().enumerate().find(|(_, h)| h.failed.is_some()) {
            let why = h.failed.as_deref().unwrap_or_default();
            return Err((
                format!("rank {rank} on {} could not start: {why}", h.host),
                1,
            ));
        }
        let clock = |f: fn(f64, f64) -> f64, from: f64| all.iter().map(|h| h.wall_s).fold(from, f);
        Ok(MpiRun {
            ranks,
            clock_skew_ms: (clock(f64::max, f64::MIN) - clock(f64::min, f64::MAX)) * 1000.0,
            hosts: all.into_iter().map(|h| h.host).collect(),
            peak_rss_bytes: Vec::new(),
        })
    })
    .await
}

/// The hosts of the ranks, each once, in rank order.
fn distinct<'a>(hosts: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut seen = Vec::new();
    for host in hosts {
        if !seen.contains(&host) {
            seen.push(host);
        }
    }
    seen
}

/// Ends this rank after rank 0 refused the job for every rank: all leave the MPI job
/// together; rank 0 says why, the others exit quietly with the same code.
async fn refused(team: &dyn Team, stop: &StopFlag, error: CliError) -> Result<i32, CliError> {
    leave(team, stop).await;
    match team.rank() {
        0 => Err(error),
        _ => Ok(error.exit_code()),
    }
}

/// This rank lost the MPI job (a rank stopped answering), its own part cleaned up.
/// Rank 0 says so and ends the job (`MPI_Abort`), so that no rank is left waiting; another
/// rank exits with the error.
fn lost(team: &dyn Team, stop: &StopFlag, error: CliError) -> Result<i32, CliError> {
    if team.rank() != 0 {
        return Err(CliError::Io(format!(
            "rank {}: {}",
            team.rank(),
            error.one_line()
        )));
    }
    say!("metabench: error: {}", error.one_line());
    team.abort(if stop.is_stopped() {
        130
    } else {
        error.exit_code()
    })
}

/// Cleans up a run that ends before its sweep, saying what it left behind.
async fn end_early(run: Run) {
    if let Err(left) = run.clean_up(false).await {
        say!("left behind: {left}");
    }
}

/// Runs `metabench sweep`, alone or as one rank of an MPI job, through the one run
/// lifecycle ([`run_command`]); on a path-level system (HDFS, S3), [`path::run`].
///
/// Under MPI every rank takes the same steps, each ending in the same collective calls:
/// check the arguments (nothing written yet), start (rank 0 first), say hello, sweep,
/// clean up (the other ranks first), leave. A refusal at a step is rank 0's, for all;
/// a rank that stops answering ends the job (`MPI_Abort`) once rank 0 has cleaned up.
pub async fn run(args: SweepArgs, detail: Detail) -> Result<i32, CliError> {
    if let Some(url) = args.volume.meta.as_deref().and_then(path::PathUrl::parse) {
        return path::run(args, url?, detail).await;
    }
    let team = join_team()?;
    run_command(Sweep {
        args,
        detail,
        team,
        prepared: None,
        mpi: None,
        pool_line: None,
        log_error: None,
        team_lost: false,
        peak_rss: None,
        tree: None,
    })
    .await
}

/// `metabench sweep` on a JuiceFS volume as the lifecycle drives it, one rank's part.
struct Sweep {
    args: SweepArgs,
    detail: Detail,
    /// The ranks of the MPI job, or this process alone.
    team: Box<dyn Team>,
    /// What the arguments ask for, once checked.
    prepared: Option<Prepared>,
    /// The MPI job's facts, under MPI.
    mpi: Option<MpiRun>,
    /// How an open loop without `--conc` picked its pool.
    pool_line: Option<String>,
    /// The first level's line or checkpoint that could not be written.
    log_error: Option<CliError>,
    /// Whether this rank gave up on the others.
    team_lost: bool,
    /// Every rank's peak memory, gathered by rank 0 before the cleanup.
    peak_rss: Option<Vec<Option<u64>>>,
    /// The volume's tree the reads draw from (`--tree`), once listed.
    tree: Option<Arc<metabench_load::Population>>,
}

impl Sweep {
    fn leader(&self) -> bool {
        self.team.rank() == 0
    }

    fn prepared(&self) -> &Prepared {
        self.prepared.as_ref().expect("prepared")
    }
}

impl Command for Sweep {
    type Space = Run;
    type Outcome = SweepOutcome;
    const NAME: &'static str = "sweep";
    const ON_CTRL_C: &'static str = "dropping the level in progress and cleaning up";

    async fn prepare(&mut self, _stop: &StopFlag) -> Result<(), Ended> {
        let team = self.team.as_ref();
        let leader = team.rank() == 0;
        let prepared = prepare(&self.args, leader);
        if team.size() > 1 {
            let waiting = StopFlag::default();
            let verdict = agree(team, &Ready::new(team, &prepared), &waiting, check_ready)
                .await
                .map_err(|e| CliError::Io(format!("MPI: {e}")));
            match verdict {
                Err(e) => return Err(lost(team, &waiting, e)),
                Ok(Err(refusal)) => {
                    let error = match prepared {
                        Err(own) if leader => own,
                        _ => refusal_error(refusal),
                    };
                    return Err(refused(team, &waiting, error).await);
                }
                Ok(Ok(())) => {}
            }
        }
        self.prepared = Some(prepared.map_err(Err)?);
        Ok(())
    }

    fn threads(&self) -> Option<(&Exec, &str)> {
        let p = self.prepared();
        Some((&p.exec, p.threads_why.as_str()))
    }

    async fn open(&mut self, run_id: &str, _stop: &StopFlag) -> Result<Run, Ended> {
        let team = self.team.as_ref();
        let settings = &self.prepared().settings;
        match start_rank(&self.args, settings, team, run_id).await {
            Ok(run) => Ok(run),
            Err(StartFailed::Told(e)) => Err(refused(team, &StopFlag::default(), e).await),
            Err(StartFailed::Lost(e)) => Err(lost(team, &StopFlag::default(), e)),
            Err(StartFailed::Alone(e)) => {
                // Told to rank 0 in the hello, which refuses the job for all.
                let waiting = StopFlag::default();
                Err(
                    match hello(team, &waiting, Some(e.one_line()), false).await {
                        Ok(verdict) => {
                            // Nothing to clean up: straight to the barrier after which rank 0
                            // cleans up (see the refusal after the hello in `opened`).
                            let _ = answer(team, team.barrier(), &waiting).await;
                            let error = verdict.err().map_or(e, refusal_error);
                            refused(team, &waiting, error).await
                        }
                        Err(lost_team) => lost(team, &waiting, CliError::Io(lost_team.0)),
                    },
                )
            }
        }
    }

    async fn opened(&mut self, run: Run, stop: &StopFlag) -> Result<Run, Ended> {
        let team = self.team.as_ref();
        if team.size() > 1 {
            let volume_on_rank0 = self.args.volume.meta.is_none();
            match hello(team, stop, None, volume_on_rank0).await {
                Ok(Ok(mpi)) => self.mpi = Some(mpi),
                Ok(Err(refusal)) => {
                    // As after a sweep: the other ranks close their sessions before rank 0
                    // removes the namespace they entered.
                    if team.rank() == 0 {
                        let _ = answer(team, team.barrier(), stop).await;
                        end_early(run).await;
                    } else {
                        end_early(run).await;
                        let _ = answer(team, team.barrier(), stop).await;
                    }
                    return Err(refused(team, stop, refusal_error(refusal)).await);
                }
                Err(e) => {
                    end_early(run).await;
                    return Err(lost(team, stop, CliError::Io(format!("MPI: {e}"))));
                }
            }
        }
        let prepared = self.prepared.as_mut().expect("prepared");
        if let (Some(rate), true) = (&self.args.rate, prepared.levels.is_empty()) {
            // An open loop without --conc (never under MPI: `prepare` refuses it): its pool
            // from the floor of one session, on a client thread as the sweep's own.
            let (engine, opts) = (run.volume.engine.clone(), run.client.session.clone());
            let (op_timeout, idle) = (self.args.client.op_timeout, prepared.exec.idle());
            let floor = prepared
                .exec
                .spawn(0, async move {
                    let mut meta = engine.session(&opts).await?;
                    measure_floor(meta.as_mut(), op_timeout, idle).await
                })
                .await;
            let floor = match floor {
                Ok(Ok(floor)) => floor,
                Ok(Err(e)) => {
                    end_early(run).await;
                    return Err(Err(e.into()));
                }
                Err(e) => {
                    end_early(run).await;
                    return Err(Err(CliError::Io(format!("a client thread failed: {e}"))));
                }
            };
            let (pool, why) = plan::open_loop_pool(rate.rates(), floor.as_ref());
            prepared.levels = vec![pool];
            prepared.plan.levels = prepared.levels.clone();
            self.pool_line = Some(why);
        }
        Ok(run)
    }

    fn speaks(&self) -> bool {
        self.leader()
    }

    fn what(&self, _run: &Run) -> String {
        let prepared = self.prepared();
        let levels = &prepared.levels;
        let loop_kind = match &self.args.rate {
            None => format!("levels {levels:?}"),
            Some(rate) => format!(
                "open loop at {:?} calls/s ({} arrivals) on a pool of {} clients",
                rate.rates(),
                self.args.arrivals.name(),
                levels[0]
            ),
        };
        let over = self.mpi.as_ref().map_or(String::new(), |m| {
            let hosts = distinct(m.hosts.iter().map(String::as_str));
            format!(
                ", over {} MPI ranks on {} (clock skew ≤ {:.1} ms)",
                self.team.size(),
                hosts.join(", "),
                m.clock_skew_ms
            )
        });
        format!(": {loop_kind}, workload {}{over}", prepared.workload.name)
    }

    fn start_notes(&self) -> Vec<String> {
        self.pool_line.iter().cloned().collect()
    }

    async fn work(
        &mut self,
        run: &mut Run,
        header: &RunHeader,
        stop: &StopFlag,
    ) -> Result<SweepOutcome, CliError> {
        // Each rank lists the tree itself (read-only, untimed); rank 0 says so.
        self.tree = self.args.tree.list(run, self.leader()).await?;
        let (args, team, detail) = (&self.args, self.team.as_ref(), self.detail);
        let leader = team.rank() == 0;
        let prepared = self.prepared.as_ref().expect("prepared");
        let live = Arc::new(Live::default());
        let progress = Progress::start(leader, &live, &prepared.workload, args.threads_per_client);
        let bar = progress.bar.clone();
        let mut config = args.config(
            prepared.levels.clone(),
            &prepared.workload,
            run.client.session.clone(),
            run.client.background_in_window(),
            args.threads_per_client,
        );
        config.tree = self.tree.clone();
        // Under MPI, rank 0 writes the levels merged so far after each one: a rank that is
        // killed (and the job with it) leaves them on disk.
        let mut checkpoint = (team.size() > 1).then(|| SweepResults {
            header: header.clone(),
            plan: prepared.plan.clone(),
            stopped_early: Some(
                "the run did not finish: these are the levels merged before it stopped".to_owned(),
            ),
            interrupted: true,
            mpi: self.mpi.clone().map(Box::new),
            ..Default::default()
        });
        let log_error = &mut self.log_error;
        let on_level = |level: &Level, hists: &IntervalHistograms| {
            if let Err(e) = show_level(args, detail, &bar, level, hists) {
                log_error.get_or_insert(e);
            }
            if let (Some(path), Some(partial)) = (&args.json, &mut checkpoint) {
                partial.levels.push(level.clone());
                if let Err(e) = write_file(
                    path,
                    &(serde_json::to_string_pretty(&*partial).expect("results serialize") + "\n"),
                ) {
                    log_error.get_or_insert(e);
                }
            }
        };
        let ns = run
            .namespace
            .as_ref()
            .expect("started with a namespace")
            .dir;
        let outcome = run_sweep(
            &prepared.exec,
            run.volume.engine.clone(),
            ns,
            &config,
            stop,
            live.clone(),
            team,
            on_level,
        )
        .await
        .map_err(CliError::from);
        progress.finish();
        self.team_lost = matches!(&outcome, Ok(o) if o.team_lost);
        outcome
    }

    fn failure(outcome: &mut SweepOutcome) -> Option<&mut RunFailure> {
        outcome.failure.as_mut()
    }

    async fn clean_up(
        &mut self,
        run: Run,
        engine_failed: bool,
        stop: &StopFlag,
    ) -> Result<(), String> {
        // The other ranks close their sessions first; rank 0 hears from each (its peak
        // memory) before it removes the namespace they worked in. A rank that lost the
        // team calls on it no more.
        let team = self.team.as_ref();
        if self.leader() && !self.team_lost {
            let ends = gather_all(team, &peak_rss_bytes(), stop).await;
            self.peak_rss = ends.ok().flatten();
            run.clean_up(engine_failed).await
        } else {
            let cleanup = run.clean_up(engine_failed).await;
            if !self.team_lost {
                let _ = gather_all(team, &peak_rss_bytes(), stop).await;
            }
            cleanup
        }
    }

    async fn failed(&mut self, error: CliError, stop: &StopFlag) -> Ended {
        // The engine failed before the first level: every rank was told so.
        refused(self.team.as_ref(), stop, error).await
    }

    async fn publish(
        &mut self,
        outcome: SweepOutcome,
        header: RunHeader,
        left_behind: Option<CliError>,
        stop: &StopFlag,
    ) -> Ended {
        let team = self.team.as_ref();
        if !self.leader() {
            if self.team_lost {
                let why = outcome.stopped_early.unwrap_or_default();
                return lost(team, stop, left_behind.unwrap_or(CliError::Io(why)));
            }
            leave(team, stop).await;
            return match left_behind {
                Some(e) => Err(e),
                None => Ok(exit_code(None, stop.is_stopped())),
            };
        }
        let mpi = self.mpi.take().map(|mut m| {
            m.peak_rss_bytes = self.peak_rss.take().unwrap_or_default();
            m
        });
        let plan = self.prepared().plan.clone();
        let mut header = header;
        header.reads = self.tree.as_ref().map(|t| t.record());
        let mut results = results(header, plan, outcome, stop.is_stopped(), mpi);
        let write_error = publish(&mut results, &self.args, self.detail);
        let result = ended(
            write_error.or(self.log_error.take()),
            left_behind,
            results.failure.as_deref(),
            results.interrupted,
        );
        if self.team_lost {
            // A rank stopped answering: end the job rather than leave any rank waiting.
            let why = results.stopped_early.clone().unwrap_or_default();
            return lost(team, stop, result.err().unwrap_or(CliError::Io(why)));
        }
        leave(team, stop).await;
        result
    }
}

/// Leaves the MPI job, every rank once rank 0 has written the results and cleaned up:
/// a rank that exits early with an error code makes `mpirun` kill the others at once.
///
/// After a stop, `mpirun` is ending the job already and `MPI_Finalize` would wait for
/// it: rank 0 exits at once, and the other ranks a moment later, so that rank 0's exit
/// code is the one `mpirun` sees first. Rank 0 does not wait for ranks that stopped
/// answering.
async fn leave(team: &dyn Team, stop: &StopFlag) {
    if answer(team, team.barrier(), stop).await.is_err() {
        return;
    }
    if stop.is_stopped() {
        if team.rank() != 0 {
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        return;
    }
    let _ = tokio::time::timeout(LEAVE_TIMEOUT, answer(team, team.finish(), stop)).await;
}

/// How long a rank waits for the others to leave the MPI job.
const LEAVE_TIMEOUT: Duration = Duration::from_secs(30);

//! `metabench sweep`: concurrency sweeps to saturation with per-operation histograms.

use crate::args::{
    check_output_path, parse_duration, parse_duration_or_zero, write_file, ClientArgs,
    ClientSettings,
};
use crate::error::{input, CliError};
use crate::lifecycle::{after_cleanup, client_threads, exit_code, say_client_threads, Run};
use crate::target::TargetArgs;
use metabench_load::team::{
    agree, answer, from_leader, gather_all, launched_by_mpi, Solo, Team, TeamError,
};
use metabench_load::StopFlag;
use metabench_report::model::peak_rss_bytes;
use metabench_report::MpiRun;
use metabench_schema::Ino;

use metabench_engine::namespace::Namespace;
use metabench_engine::{ClientProfile, EngineKind, MetaUrl, Scheme, SessionOptions};
use metabench_load::sweep::IntervalHistograms;
use metabench_load::{
    run_sweep, Arrivals, ConcSpec, Exec, Live, Op, OpenLoop, RateSpec, SweepConfig, Workload,
};
use metabench_report::{Level, SweepPlan, SweepResults};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

mod output;
mod path;

use output::{publish, results, show_level, Progress};

pub(crate) use path::{Opened, PathUrl};

/// Arguments of `metabench sweep`.
#[derive(Debug, clap::Args)]
pub struct SweepArgs {
    #[command(flatten)]
    target: TargetArgs,

    /// Concurrency levels: 1..128 (doubling), 1,8,64 (list), 8..64:+8 (step),
    /// 1..1024:x2 (factor). With --rate: one number, the fixed client pool.
    #[arg(long, value_name = "SPEC", default_value = "1..128")]
    conc: ConcSpec,

    /// Open loop: offered rates in calls per second over all clients, one level each
    /// (20000, 1000..64000:x2, 5000..50000:+5000). Calls arrive on a schedule whatever
    /// the engine does; latency runs from each call's intended start (no coordinated
    /// omission) and service time is kept beside it. The sweep stops at the first rate
    /// achieved below 95% of offered, or whose p99 passes --p99-limit.
    #[arg(long, value_name = "SPEC", conflicts_with = "until_plateau")]
    rate: Option<RateSpec>,

    /// Open loop: how arrivals are spaced, constant or poisson.
    #[arg(
        long,
        value_name = "SCHEDULE",
        default_value = "constant",
        requires = "rate"
    )]
    arrivals: Arrivals,

    /// Operations, each run as its own phase at every level (default: create,getattr).
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "OP,...",
        conflicts_with = "workload"
    )]
    ops: Vec<Op>,

    /// A workload instead of --ops: golang (every operation of JuiceFS's Go benchmark),
    /// nnbench (create+write, open, rename, delete), or a mix from configs/workloads/NAME.toml
    /// or a TOML file path.
    #[arg(long, value_name = "NAME")]
    workload: Option<String>,

    /// Discarded warm-up before each timed window (0 for none).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_duration_or_zero)]
    warmup: Duration,

    /// Timed window per level and phase.
    #[arg(long, value_name = "DURATION", default_value = "3s", value_parser = parse_duration)]
    duration: Duration,

    /// Make all clients work in one hot directory instead of one directory each.
    #[arg(long)]
    shared_dir: bool,

    /// Group each level's workers (--conc counts them) into JuiceFS clients of this many,
    /// as the threads of one mount: the workers of a client share its state (id batches,
    /// buffers, caches), its registered session (under the mount profile) and JuiceFS's
    /// process-local transaction locks; each has a connection of its own (TKV engines:
    /// the process's one engine client, as in JuiceFS). `--conc 12 --threads-per-client 4`
    /// is 12 threads on 3 mounts. Default 1: every worker is a client of its own.
    #[arg(long, value_name = "K", default_value = "1", value_parser = clap::value_parser!(u32).range(1..))]
    threads_per_client: u32,

    /// Report the first level whose p99 exceeds this latency, e.g. 10ms (with --rate:
    /// stop there).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    p99_limit: Option<Duration>,

    /// Stop when throughput has not grown by 5% for two consecutive levels.
    #[arg(long)]
    until_plateau: bool,

    #[command(flatten)]
    client: ClientArgs,

    /// Write the results (versioned JSON with histograms) to this file.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,

    /// Write one CSV row per level and operation to this file.
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,

    /// Write an HdrHistogram interval log per level (1 s intervals, tagged by operation)
    /// into this directory.
    #[arg(long, value_name = "DIR")]
    hdr_dir: Option<PathBuf>,
}

impl SweepArgs {
    /// The open loop `--rate` asks for, if it does.
    fn open_loop(&self) -> Option<OpenLoop> {
        self.rate.as_ref().map(|rate| OpenLoop {
            rates: rate.rates().to_vec(),
            arrivals: self.arrivals,
            p99_limit: self.p99_limit,
        })
    }

    /// The sweep these arguments ask for: `levels` of `workload`, the windows, the open
    /// loop, and sessions of `session` whose clients have `threads_per_client` workers.
    fn config(
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
        }
    }
}

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

/// What a sweep is asked to do, read from its arguments before anything is written.
struct Prepared {
    /// The client threads ([`client_threads`]), started before anything is written, and
    /// why there are that many and where they run.
    exec: Exec,
    threads_why: String,
    workload: Workload,
    levels: Vec<u32>,
    settings: ClientSettings,
    plan: SweepPlan,
}

/// Reads and checks the arguments; only the `writer` (rank 0) checks the outputs, which it
/// alone writes.
fn prepare(args: &SweepArgs, writer: bool) -> Result<Prepared, CliError> {
    if writer {
        for p in [&args.json, &args.csv].into_iter().flatten() {
            check_output_path(p)?;
        }
        if let Some(dir) = &args.hdr_dir {
            if !dir.is_dir() {
                std::fs::create_dir_all(dir).map_err(|e| {
                    input(format!("cannot create --hdr-dir {}: {e}", dir.display()))
                })?;
            }
        }
    }
    let workload = match (&args.workload, args.ops.is_empty()) {
        (Some(name), _) => {
            Workload::resolve(name, &[PathBuf::from("configs/workloads")]).map_err(input)?
        }
        (None, false) => Workload::from_ops(&args.ops),
        (None, true) => Workload::from_ops(&[Op::Create, Op::Getattr]),
    };
    let levels = args.conc.levels().to_vec();
    if args.rate.is_some() && levels.len() != 1 {
        return Err(input(format!(
            "with --rate, --conc is the fixed client pool: give one number (e.g. --conc 64), not {}",
            args.conc
        )));
    }
    let settings = ClientSettings {
        threads_per_client: args.threads_per_client,
        ..args.client.profile.settings(ClientProfile::Mount)
    };
    let plan = SweepPlan {
        conc: args.conc.to_string(),
        levels: levels.clone(),
        workload: workload.name.clone(),
        phases: workload
            .phases
            .iter()
            .map(|p| {
                (
                    p.name.clone(),
                    p.ops
                        .iter()
                        .map(|(o, w)| (o.name().to_owned(), *w))
                        .collect(),
                )
            })
            .collect(),
        warmup_s: args.warmup.as_secs_f64(),
        duration_s: args.duration.as_secs_f64(),
        shared_dir: args.shared_dir,
        threads_per_client: args.threads_per_client,
        p99_limit_us: args.p99_limit.map(|d| d.as_secs_f64() * 1e6),
        until_plateau: args.until_plateau,
        client_cache: settings.session.client_cache,
        op_timeout_s: args.client.op_timeout.as_secs_f64(),
        rate: args.rate.as_ref().map(ToString::to_string),
        arrivals: args.rate.as_ref().map(|_| args.arrivals.name().to_owned()),
    };
    let (exec, threads_why) = client_threads(&args.client, &args.target)?;
    Ok(Prepared {
        exec,
        threads_why,
        workload,
        levels,
        settings,
        plan,
    })
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
) -> Result<(Run, Namespace, bool), StartFailed> {
    let waiting = StopFlag::default();
    let on_ctrl_c = "dropping the level in progress and cleaning up";
    let mut joined: Option<Result<Joined, Refusal>> = None;
    let mut mine = None;
    if team.rank() == 0 {
        let started = async {
            if team.size() > 1 && args.shared_dir && is_memkv(&args.target) {
                return Err(input(
                    "--shared-dir under MPI needs one volume all ranks share; with memkv:// each \
                     rank has its own store: use a server engine, or drop --shared-dir",
                ));
            }
            let run = Run::start(&args.target, settings.clone(), None, on_ctrl_c).await?;
            match make_namespace(&run).await {
                Ok(ns) => Ok((run, ns)),
                Err(e) => {
                    if let Err(left) = run.finish(false, None).await {
                        say!("left behind: {left}");
                    }
                    Err(e)
                }
            }
        }
        .await;
        joined = Some(match &started {
            Ok((run, ns)) => Ok(Joined {
                meta_url: run.target.meta_url.clone(),
                namespace: ns.dir,
                per_rank_volume: run.target.engine.kind() == EngineKind::Memkv,
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
                if let Some(Ok((run, ns))) = mine {
                    end_early(run, Some(&ns)).await;
                }
                return Err(StartFailed::Lost(CliError::Io(format!("MPI: {e}"))));
            }
        },
    };
    if let Some(started) = mine {
        let (run, ns) = started.map_err(StartFailed::Told)?;
        return Ok((run, ns, true));
    }
    let joined = joined.map_err(|refusal| StartFailed::Told(refusal_error(refusal)))?;
    let alone = StartFailed::Alone;
    if joined.per_rank_volume {
        let run = Run::start(&args.target, settings.clone(), None, on_ctrl_c)
            .await
            .map_err(alone)?;
        return match make_namespace(&run).await {
            Ok(ns) => Ok((run, ns, true)),
            Err(e) => {
                let _ = run.finish(false, None).await;
                Err(StartFailed::Alone(e))
            }
        };
    }
    let shared = TargetArgs {
        meta: Some(joined.meta_url),
        existing: true,
    };
    let run = Run::start(&shared, settings.clone(), None, on_ctrl_c)
        .await
        .map_err(alone)?;
    let ns = Namespace {
        top: 0,
        dir: joined.namespace,
        run_id: run.run_id.clone(),
    };
    Ok((run, ns, false))
}

/// Whether the target is the in-process memkv engine.
fn is_memkv(target: &TargetArgs) -> bool {
    let url = target.meta.as_deref().map(MetaUrl::parse);
    url.is_some_and(|url| url.is_ok_and(|url| url.scheme() == Scheme::Memkv))
}

/// Makes the run's namespace, `/.metabench/<run-id>`.
async fn make_namespace(run: &Run) -> Result<Namespace, CliError> {
    let mut meta = run
        .target
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
async fn end_early(run: Run, namespace: Option<&Namespace>) {
    if let Err(left) = run.finish(false, namespace).await {
        say!("left behind: {left}");
    }
}

/// Runs `metabench sweep`, alone or as one rank of an MPI job.
///
/// Under MPI every rank takes the same steps, each ending in the same collective calls:
/// check the arguments (nothing written yet), start (rank 0 first), say hello, sweep,
/// clean up (the other ranks first), leave. A refusal at a step is rank 0's, for all;
/// a rank that stops answering ends the job (`MPI_Abort`) once rank 0 has cleaned up.
pub async fn run(args: SweepArgs) -> Result<i32, CliError> {
    if let Some(url) = args.target.meta.as_deref().and_then(path::PathUrl::parse) {
        return path::run(args, url?).await;
    }
    let team = join_team()?;
    let (ranks, leader) = (team.size(), team.rank() == 0);
    let prepared = prepare(&args, leader);
    if ranks > 1 {
        let waiting = StopFlag::default();
        let verdict = agree(
            team.as_ref(),
            &Ready::new(team.as_ref(), &prepared),
            &waiting,
            check_ready,
        )
        .await
        .map_err(|e| CliError::Io(format!("MPI: {e}")));
        match verdict {
            Err(e) => return lost(team.as_ref(), &waiting, e),
            Ok(Err(refusal)) => {
                let error = match prepared {
                    Err(own) if leader => own,
                    _ => refusal_error(refusal),
                };
                return refused(team.as_ref(), &waiting, error).await;
            }
            Ok(Ok(())) => {}
        }
    }
    let Prepared {
        exec,
        threads_why,
        workload,
        levels,
        settings,
        plan,
    } = prepared?;
    let (run, ns, owns_namespace) = match start_rank(&args, &settings, team.as_ref()).await {
        Ok(started) => started,
        Err(StartFailed::Told(e)) => return refused(team.as_ref(), &StopFlag::default(), e).await,
        Err(StartFailed::Lost(e)) => return lost(team.as_ref(), &StopFlag::default(), e),
        Err(StartFailed::Alone(e)) => {
            // Told to rank 0 in the hello, which refuses the job for all.
            let waiting = StopFlag::default();
            return match hello(team.as_ref(), &waiting, Some(e.one_line()), false).await {
                Ok(verdict) => {
                    // Nothing to clean up: straight to the barrier after which rank 0
                    // cleans up (see the refusal after the hello below).
                    let _ = answer(team.as_ref(), team.barrier(), &waiting).await;
                    let error = verdict.err().map_or(e, refusal_error);
                    refused(team.as_ref(), &waiting, error).await
                }
                Err(lost_team) => lost(team.as_ref(), &waiting, CliError::Io(lost_team.0)),
            };
        }
    };
    let stop = run.stop.clone();
    let mpi = if ranks > 1 {
        let volume_on_rank0 = args.target.meta.is_none();
        match hello(team.as_ref(), &stop, None, volume_on_rank0).await {
            Ok(Ok(mpi)) => Some(mpi),
            Ok(Err(refusal)) => {
                // As after a sweep: the other ranks close their sessions before rank 0
                // removes the namespace they entered.
                if leader {
                    let _ = answer(team.as_ref(), team.barrier(), &stop).await;
                    end_early(run, owns_namespace.then_some(&ns)).await;
                } else {
                    end_early(run, owns_namespace.then_some(&ns)).await;
                    let _ = answer(team.as_ref(), team.barrier(), &stop).await;
                }
                return refused(team.as_ref(), &stop, refusal_error(refusal)).await;
            }
            Err(e) => {
                end_early(run, owns_namespace.then_some(&ns)).await;
                return lost(team.as_ref(), &stop, CliError::Io(format!("MPI: {e}")));
            }
        }
    } else {
        None
    };
    let loop_kind = match &args.rate {
        None => format!("levels {levels:?}"),
        Some(rate) => format!(
            "open loop at {:?} calls/s ({} arrivals) on a pool of {} clients",
            rate.rates(),
            args.arrivals.name(),
            levels[0]
        ),
    };
    if leader {
        let over = mpi.as_ref().map_or(String::new(), |m| {
            let hosts = distinct(m.hosts.iter().map(String::as_str));
            format!(
                ", over {ranks} MPI ranks on {} (clock skew ≤ {:.1} ms)",
                hosts.join(", "),
                m.clock_skew_ms
            )
        });
        run.say_start(
            "sweep",
            &format!(": {loop_kind}, workload {}{over}", workload.name),
        );
        say_client_threads(&exec, &threads_why);
    }

    let live = Arc::new(Live::default());
    let progress = Progress::start(leader, &live, &workload, args.threads_per_client);
    let bar = progress.bar.clone();

    let config = args.config(
        levels,
        &workload,
        run.client.session.clone(),
        run.client.background_in_window(),
        args.threads_per_client,
    );
    let header = run.header("sweep", Some(&exec));
    let mut log_error = None;
    // Under MPI, rank 0 writes the levels merged so far after each one: a rank that is
    // killed (and the job with it) leaves them on disk.
    let mut checkpoint = (ranks > 1).then(|| SweepResults {
        header: header.clone(),
        plan: plan.clone(),
        stopped_early: Some(
            "the run did not finish: these are the levels merged before it stopped".to_owned(),
        ),
        interrupted: true,
        mpi: mpi.clone().map(Box::new),
        ..Default::default()
    });
    let outcome = {
        let on_level = |level: &Level, hists: &IntervalHistograms| {
            if let Err(e) = show_level(&args, &bar, level, hists) {
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
        run_sweep(
            &exec,
            run.target.engine.clone(),
            ns.dir,
            &config,
            &stop,
            live.clone(),
            team.as_ref(),
            on_level,
        )
        .await
        .map_err(CliError::from)
    };
    progress.finish();
    let failed = matches!(&outcome, Ok(o) if o.failure.is_some());
    let team_lost = matches!(&outcome, Ok(o) if o.team_lost);
    // The other ranks close their sessions first; rank 0 hears from each (its peak
    // memory) before it removes the namespace they worked in. A rank that lost the
    // team calls on it no more.
    let namespace = owns_namespace.then_some(&ns);
    let (cleanup, ends) = if leader && !team_lost {
        let ends = gather_all(team.as_ref(), &peak_rss_bytes(), &stop).await;
        (run.finish(failed, namespace).await, ends)
    } else {
        let cleanup = run.finish(failed, namespace).await;
        let ends = match team_lost {
            true => Ok(None),
            false => gather_all(team.as_ref(), &peak_rss_bytes(), &stop).await,
        };
        (cleanup, ends)
    };
    let (outcome, cleanup_error) = match after_cleanup(outcome, cleanup, |o| o.failure.as_mut()) {
        Ok(settled) => settled,
        // The engine failed before the first level: every rank was told so.
        Err(e) => return refused(team.as_ref(), &stop, e).await,
    };
    if !leader {
        if team_lost {
            let why = outcome.stopped_early.unwrap_or_default();
            return lost(
                team.as_ref(),
                &stop,
                cleanup_error.unwrap_or(CliError::Io(why)),
            );
        }
        leave(team.as_ref(), &stop).await;
        return match cleanup_error {
            Some(e) => Err(e),
            None => Ok(exit_code(None, stop.is_stopped())),
        };
    }

    let mpi = mpi.map(|mut m| {
        m.peak_rss_bytes = ends.ok().flatten().unwrap_or_default();
        m
    });
    let mut run = results(header, plan, outcome, stop.is_stopped(), mpi);
    let write_error = publish(&mut run, &args);
    let result = match (write_error.or(log_error), cleanup_error) {
        (Some(e), _) => Err(e),
        // The results are written; what the run could not remove is the error.
        (None, Some(e)) => Err(e),
        (None, None) => Ok(exit_code(run.failure.as_deref(), run.interrupted)),
    };
    if team_lost {
        // A rank stopped answering: end the job rather than leave any rank waiting.
        let why = run.stopped_early.clone().unwrap_or_default();
        return lost(
            team.as_ref(),
            &stop,
            result.err().unwrap_or(CliError::Io(why)),
        );
    }
    leave(team.as_ref(), &stop).await;
    result
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

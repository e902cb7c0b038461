//! `metabench ops`: JuiceFS's metadata benchmark, one client, every operation in turn.

use crate::args::{
    check_output_path, parse_count, parse_duration, parse_duration_or_zero, write_file, ClientArgs,
};
use crate::error::{input, CliError};
use crate::lifecycle::{ended, run_command, Command, Ended, Run};
use crate::threads::client_threads;
use crate::tree::TreeArgs;
use crate::volume::VolumeArgs;
use metabench_engine::namespace::Namespace;
use metabench_engine::ClientProfile;
use metabench_load::{
    measure_floor, run_ops, Budget, Exec, Op, OpsConfig, OpsOutcome, Population, StopFlag,
};
use metabench_report::table::{fidelity_text, floor_line, fmt_us, ops_notes_at, ops_table, Detail};
use metabench_report::{ClientLag, Floor, OpsPlan, OpsResults, RunFailure, RunHeader};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Arguments of `metabench ops`.
#[derive(Debug, clap::Args)]
pub struct OpsArgs {
    #[command(flatten)]
    volume: VolumeArgs,

    /// Operations to run, comma-separated (default: every operation of JuiceFS's Go
    /// benchmark, in its order; NNBench's create_write and open, truncate and fallocate
    /// are available too).
    #[arg(long, value_delimiter = ',', value_name = "OP,...")]
    ops: Vec<Op>,

    /// Timed calls per operation.
    #[arg(long, value_name = "N", conflicts_with = "duration", value_parser = parse_count)]
    iterations: Option<u64>,

    /// Timed time per operation, e.g. 1s or 500ms (default 1s, like `go test -bench`).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    duration: Option<Duration>,

    /// Untimed calls for this long before each operation's timed ones, as `sweep
    /// --warmup` (default 0: the one untimed call Go's benchmark makes, `b.N = 1`).
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = parse_duration_or_zero)]
    warmup: Duration,

    #[command(flatten)]
    client: ClientArgs,

    #[command(flatten)]
    tree: TreeArgs,

    /// Write the results (versioned JSON, with histograms) to this file.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,

    /// Add a "×base" column: µs/op relative to this earlier results file.
    #[arg(long, value_name = "FILE")]
    baseline: Option<PathBuf>,
}

/// What is said when a task on the client thread panicked or was cancelled.
fn client_thread_failed(e: tokio::task::JoinError) -> CliError {
    CliError::Io(format!("the client thread failed: {e}"))
}

/// Runs `metabench ops` through the one run lifecycle ([`run_command`]).
pub async fn run(args: OpsArgs, detail: Detail) -> Result<i32, CliError> {
    run_command(Ops {
        args,
        detail,
        baseline: None,
        ops: Vec::new(),
        budget: Budget::Duration(Duration::from_secs(1)),
        exec: None,
        floor: None,
        client_lag: None,
        tree: None,
    })
    .await
}

/// `metabench ops` as the lifecycle drives it.
struct Ops {
    args: OpsArgs,
    detail: Detail,
    /// The `--baseline` results, read before anything is written.
    baseline: Option<OpsResults>,
    /// The operations, in order.
    ops: Vec<Op>,
    /// Calls or time per operation.
    budget: Budget,
    /// The client threads, and why there are that many and where they run.
    exec: Option<(Exec, String)>,
    /// The engine's null round trip, measured before the operations.
    floor: Option<Floor>,
    /// The client thread's scheduling lag while the operations ran.
    client_lag: Option<ClientLag>,
    /// The volume's tree the reads draw from (`--tree`), once listed.
    tree: Option<Arc<Population>>,
}

impl Command for Ops {
    type Space = Run;
    type Outcome = OpsOutcome;
    const NAME: &'static str = "ops";
    const ON_CTRL_C: &'static str = "finishing the current operation and cleaning up";

    async fn prepare(&mut self, _stop: &StopFlag) -> Result<(), Ended> {
        let args = &self.args;
        // Validate everything local before touching the engine.
        if let Some(p) = &args.json {
            check_output_path(p).map_err(Err)?;
        }
        if let Some(p) = &args.baseline {
            let text = std::fs::read_to_string(p)
                .map_err(|e| Err(input(format!("cannot read baseline {}: {e}", p.display()))))?;
            self.baseline = Some(
                OpsResults::from_json(&text)
                    .map_err(|e| Err(input(format!("baseline {}: {e}", p.display()))))?,
            );
        }
        self.ops = if args.ops.is_empty() {
            Op::GOLANG.to_vec()
        } else {
            args.ops.clone()
        };
        self.budget = match (args.iterations, args.duration) {
            (Some(n), _) => Budget::Iterations(n),
            (None, Some(d)) => Budget::Duration(d),
            (None, None) => Budget::Duration(Duration::from_secs(1)),
        };
        // The client threads, set up exactly as `sweep` sets them up: the one client runs
        // on the first, its session opened there, so both commands time a call the same way.
        self.exec = Some(client_threads(&args.client, &args.volume).map_err(Err)?);
        Ok(())
    }

    fn threads(&self) -> Option<(&Exec, &str)> {
        self.exec.as_ref().map(|(e, why)| (e, why.as_str()))
    }

    async fn open(&mut self, run_id: &str, _stop: &StopFlag) -> Result<Run, Ended> {
        let settings = self.args.client.profile.settings(ClientProfile::Gobench);
        Run::start(&self.args.volume, settings, None, run_id)
            .await
            .map_err(Err)
    }

    fn what(&self, run: &Run) -> String {
        if run.volume.formatted_here() {
            ", fresh volume".to_owned()
        } else {
            ", existing volume".to_owned()
        }
    }

    async fn work(
        &mut self,
        run: &mut Run,
        _header: &RunHeader,
        stop: &StopFlag,
    ) -> Result<OpsOutcome, CliError> {
        self.tree = self.args.tree.list(run, true).await?;
        let (exec, _) = self.exec.as_ref().expect("prepared");
        let opts = run.client.session.clone();
        let config = OpsConfig {
            ops: self.ops.clone(),
            budget: self.budget,
            session: opts.clone(),
            background_in_window: run.client.background_in_window(),
            op_timeout: self.args.client.op_timeout,
            warmup: self.args.warmup,
            tree: self.tree.clone(),
        };
        // First the session, the namespace and the floor; then the operations, with the
        // same lag probe beside them that a sweep runs beside its windows (from this
        // thread's runtime, not the client's): the two commands time their calls amid the
        // same wake-ups, and the run says how late its client thread got to run.
        let opening = {
            let (engine, run_id, op_timeout) = (
                run.volume.engine.clone(),
                run.run_id.clone(),
                config.op_timeout,
            );
            let (opts, idle) = (opts.clone(), exec.idle());
            exec.spawn(0, async move {
                let mut namespace = None;
                let opened = async {
                    let mut meta = engine.session(&opts).await?;
                    let ns = Namespace::create(meta.as_mut(), &run_id).await?;
                    namespace = Some(ns.clone());
                    let floor = measure_floor(meta.as_mut(), op_timeout, idle).await?;
                    if let Some(f) = &floor {
                        say!("{}", floor_line(f));
                    }
                    Ok::<_, CliError>((meta, ns, floor))
                }
                .await;
                (namespace, opened)
            })
        };
        let (namespace, opened) = match opening.await {
            Ok(done) => done,
            Err(e) => (None, Err(client_thread_failed(e))),
        };
        run.namespace = namespace;
        let (mut meta, ns, floor) = opened?;
        self.floor = floor;
        let (engine, stop) = (run.volume.engine.clone(), stop.clone());
        let probe = exec.lag_probe(1);
        let measured = exec
            .spawn(0, async move {
                run_ops(&mut meta, &*engine, ns.dir, &config, &stop, |r| {
                    match &r.skipped {
                        Some(why) => say!("  {:<12} skipped: {why}", r.op),
                        None => say!(
                            "  {:<12} {:>10} µs/op  ({} calls)",
                            r.op,
                            fmt_us(r.latency.mean_us),
                            r.latency.count
                        ),
                    }
                })
                .await
            })
            .await;
        self.client_lag = metabench_load::ops::client_lag(&probe.finish());
        measured.map_err(client_thread_failed)
    }

    fn failure(outcome: &mut OpsOutcome) -> Option<&mut RunFailure> {
        outcome.failure.as_mut()
    }

    async fn publish(
        &mut self,
        outcome: OpsOutcome,
        header: RunHeader,
        left_behind: Option<CliError>,
        stop: &StopFlag,
    ) -> Ended {
        let args = &self.args;
        let mut header = header;
        header.reads = self.tree.as_ref().map(|t| t.record());
        let run = OpsResults {
            header,
            plan: OpsPlan {
                ops: self.ops.iter().map(|o| o.name().to_owned()).collect(),
                iterations: args.iterations,
                duration_s: match self.budget {
                    Budget::Duration(d) => Some(d.as_secs_f64()),
                    Budget::Iterations(_) => None,
                },
                client_cache: args
                    .client
                    .profile
                    .settings(ClientProfile::Gobench)
                    .session
                    .client_cache,
                op_timeout_s: args.client.op_timeout.as_secs_f64(),
                warmup_s: args.warmup.as_secs_f64(),
            },
            floor: self.floor.take(),
            client_lag: self.client_lag.take(),
            results: outcome.results,
            interrupted: stop.is_stopped(),
            failure: outcome.failure.map(Box::new),
        };
        out!("{}", ops_table(&run, self.baseline.as_ref()));
        for note in ops_notes_at(&run, self.detail) {
            out!("* {note}");
        }
        for line in fidelity_text(&run.header.engine, self.detail) {
            out!("{line}");
        }
        let mut write_error = None;
        if let Some(path) = &args.json {
            let text = serde_json::to_string_pretty(&run).expect("results serialize");
            match write_file(path, &(text + "\n")) {
                Ok(()) => say!("results written to {}", path.display()),
                Err(e) => write_error = Some(e),
            }
        }
        ended(
            write_error,
            left_behind,
            run.failure.as_deref(),
            run.interrupted,
        )
    }
}

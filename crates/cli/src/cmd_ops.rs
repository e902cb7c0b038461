//! `metabench ops`: JuiceFS's metadata benchmark, one client, every operation in turn.

use crate::args::{
    check_output_path, parse_count, parse_duration, parse_duration_or_zero, write_file, ClientArgs,
};
use crate::error::{input, CliError};
use crate::lifecycle::{after_cleanup, client_threads, exit_code, say_client_threads, Run};
use crate::target::TargetArgs;
use metabench_engine::namespace::Namespace;
use metabench_engine::ClientProfile;
use metabench_load::{measure_floor, run_ops, Budget, Op, OpsConfig};
use metabench_report::table::{
    fidelity_summary, floor_line, fmt_us, ops_notes_at, ops_table, Detail,
};
use metabench_report::{OpsPlan, OpsResults};
use std::path::PathBuf;
use std::time::Duration;

/// Arguments of `metabench ops`.
#[derive(Debug, clap::Args)]
pub struct OpsArgs {
    #[command(flatten)]
    target: TargetArgs,

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

/// Runs `metabench ops`.
pub async fn run(args: OpsArgs, detail: Detail) -> Result<i32, CliError> {
    // Validate everything local before touching the engine.
    if let Some(p) = &args.json {
        check_output_path(p)?;
    }
    let baseline = match &args.baseline {
        None => None,
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .map_err(|e| input(format!("cannot read baseline {}: {e}", p.display())))?;
            Some(
                OpsResults::from_json(&text)
                    .map_err(|e| input(format!("baseline {}: {e}", p.display())))?,
            )
        }
    };
    let ops = if args.ops.is_empty() {
        Op::GOLANG.to_vec()
    } else {
        args.ops.clone()
    };
    let budget = match (args.iterations, args.duration) {
        (Some(n), _) => Budget::Iterations(n),
        (None, Some(d)) => Budget::Duration(d),
        (None, None) => Budget::Duration(Duration::from_secs(1)),
    };

    // The client threads, set up exactly as `sweep` sets them up: the one client runs on
    // the first, its session opened there, so both commands time a call the same way.
    let (exec, threads_why) = client_threads(&args.client, &args.target)?;
    let settings = args.client.profile.settings(ClientProfile::Gobench);
    let run = Run::start(
        &args.target,
        settings,
        None,
        "finishing the current operation and cleaning up",
    )
    .await?;
    let fresh = if run.target.formatted_here() {
        ", fresh volume"
    } else {
        ", existing volume"
    };
    run.say_start("ops", fresh);
    say_client_threads(&exec, &threads_why);

    let opts = run.client.session.clone();
    let run_client_cache = opts.client_cache;
    let config = OpsConfig {
        ops: ops.clone(),
        budget,
        session: opts.clone(),
        background_in_window: run.client.background_in_window(),
        op_timeout: args.client.op_timeout,
        warmup: args.warmup,
    };
    // First the session, the namespace and the floor; then the operations, with the
    // same lag probe beside them that a sweep runs beside its windows (from this thread's
    // runtime, not the client's): the two commands time their calls amid the same
    // wake-ups, and the run says how late its client thread got to run.
    let opening = {
        let (engine, run_id, op_timeout) = (
            run.target.engine.clone(),
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
    let mut client_lag = None;
    let outcome = match opened {
        Err(e) => Err(e),
        Ok((mut meta, ns, floor)) => {
            let (engine, stop) = (run.target.engine.clone(), run.stop.clone());
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
            client_lag = metabench_load::ops::client_lag(&probe.finish());
            measured
                .map(|outcome| (outcome, floor))
                .map_err(client_thread_failed)
        }
    };
    let failed = matches!(&outcome, Ok((o, _)) if o.failure.is_some());
    let (stop, header) = (run.stop.clone(), run.header("ops", Some(&exec)));
    let cleanup = run.finish(failed, namespace.as_ref()).await;
    let ((outcome, floor), cleanup_error) =
        after_cleanup(outcome, cleanup, |(o, _)| o.failure.as_mut())?;
    let failure = outcome.failure.map(Box::new);

    let run = OpsResults {
        header,
        plan: OpsPlan {
            ops: ops.iter().map(|o| o.name().to_owned()).collect(),
            iterations: args.iterations,
            duration_s: match budget {
                Budget::Duration(d) => Some(d.as_secs_f64()),
                Budget::Iterations(_) => None,
            },
            client_cache: run_client_cache,
            op_timeout_s: args.client.op_timeout.as_secs_f64(),
            warmup_s: args.warmup.as_secs_f64(),
        },
        floor,
        client_lag,
        results: outcome.results,
        interrupted: stop.is_stopped(),
        failure,
    };
    out!("{}", ops_table(&run, baseline.as_ref()));
    for note in ops_notes_at(&run, detail) {
        out!("* {note}");
    }
    match detail {
        Detail::Full => run
            .header
            .engine
            .fidelity_lines()
            .iter()
            .for_each(|line| out!("{line}")),
        Detail::Terse => out!("{}", fidelity_summary(&run.header.engine)),
    }
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&run).expect("results serialize");
        write_file(path, &(text + "\n"))?;
        say!("results written to {}", path.display());
    }
    if let Some(e) = cleanup_error {
        // The results are written; what the run could not remove is the error.
        return Err(e);
    }
    Ok(exit_code(run.failure.as_deref(), run.interrupted))
}

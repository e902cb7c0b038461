//! `metabench tree`: the mdtest-shaped trees of `parity` (tree, directory and file
//! creation, stat, read and removal, mdtest's phases and rates) on a system beside
//! JuiceFS, `hdfs://…` or `s3://…`, through the same driver that runs them on a JuiceFS
//! mount and natively, so the rates sit beside `parity`'s. S3 has no directories: they
//! are `dir/` markers, as S3A makes them.
//!
//! As `sweep` on these systems, it works only in `PATH/metabench-<run>`, removed
//! afterwards (also after Ctrl-C or a failure), and refuses a path that holds data
//! unless `--existing`.

use crate::args::watch_ctrl_c;
use crate::cmd_parity::{say_phase, specs, Scale};
use crate::cmd_sweep::{Opened, PathUrl};
use crate::error::{input, CliError};
use crate::target::{new_run_id, TargetArgs};
use metabench_load::StopFlag;
use metabench_pathfs::tree::{run_tree, PhaseResult};
use metabench_pathfs::{FsOps, PathSystem};

/// Arguments of `metabench tree`.
#[derive(Debug, clap::Args)]
pub struct TreeArgs {
    #[command(flatten)]
    target: TargetArgs,

    /// Tree sizes: docs (the JuiceFS docs' mdtest runs: -b 3 -z 1 -I 100 -u, and
    /// -F -w 102400 -I 1000 -z 0 -u) or small (seconds).
    #[arg(long, value_enum, default_value = "docs")]
    scale: Scale,

    /// Parallel tasks (mdtest ranks), each a client of its own.
    #[arg(long, default_value = "1", value_parser = clap::value_parser!(u32).range(1..=1024))]
    tasks: u32,
}

/// Runs `metabench tree`.
pub async fn run(args: TreeArgs) -> Result<i32, CliError> {
    let url = match args.target.meta.as_deref().and_then(PathUrl::parse) {
        Some(url) => url?,
        None => {
            return Err(input(
                "tree runs on HDFS or S3 (--meta hdfs://… or s3://…); on a JuiceFS volume, \
                 `metabench parity` runs the same trees natively and through a mount",
            ))
        }
    };
    let stop = StopFlag::default();
    let watcher = watch_ctrl_c(
        stop.clone(),
        "stopping the phase in progress and cleaning up",
    );
    let run_id = new_run_id();
    let ran = match url.open(&run_id, args.target.existing).await {
        Ok(Opened::Hdfs(system)) => trees_on(system, &args, &stop).await,
        Ok(Opened::S3(system)) => trees_on(system, &args, &stop).await,
        Err(e) => Err(e),
    };
    watcher.abort();
    ran
}

/// Each tree in a directory of its own below the run's, then the cleanup and the table.
async fn trees_on<P: PathSystem>(
    system: P,
    args: &TreeArgs,
    stop: &StopFlag,
) -> Result<i32, CliError> {
    say!(
        "metabench tree on {} ({}): {} task(s), {:?} trees",
        system.name(),
        system.url(),
        args.tasks,
        args.scale
    );
    let mut done: Vec<(&str, Vec<PhaseResult>)> = Vec::new();
    let mut failure = None;
    for (name, spec) in specs(args.scale, args.tasks) {
        if stop.is_stopped() {
            break;
        }
        let ran = async {
            let base = system.fs()?.mkdir(&system.root(), name).await?;
            let clients = (0..args.tasks)
                .map(|_| system.fs())
                .collect::<metabench_mount::Result<Vec<_>>>()?;
            run_tree(clients, base, &spec, stop, say_phase(system.name(), name)).await
        };
        match ran.await {
            Ok(phases) => done.push((name, phases)),
            Err(_) if stop.is_stopped() => break,
            Err(e) => {
                failure = Some(CliError::Io(format!("{name} tree: {e}")));
                break;
            }
        }
    }
    let cleanup = system.cleanup().await.map_err(|e| {
        CliError::Io(format!(
            "{e}: remove {}/metabench-* of this run by hand",
            system.url()
        ))
    });
    for (name, phases) in &done {
        out!("{name}");
        out!("| phase | items | seconds | ops/s |");
        out!("|---|---|---|---|");
        for r in phases {
            out!(
                "| {} | {} | {:.3} | {:.0} |",
                r.phase.label(),
                r.items,
                r.seconds,
                r.ops_per_s
            );
        }
    }
    for line in system.fidelity_notes() {
        out!("  - {line}");
    }
    match (failure, cleanup) {
        (Some(e), _) | (None, Err(e)) => Err(e),
        (None, Ok(())) if stop.is_stopped() => Ok(crate::error::EXIT_INTERRUPTED),
        (None, Ok(())) => Ok(0),
    }
}

//! `metabench tree`: the mdtest-shaped trees of `parity` (tree, directory and file
//! creation, stat, read and removal, mdtest's phases and rates) on a system beside
//! JuiceFS, `hdfs://…` or `s3://…`, through the same driver that runs them on a JuiceFS
//! mount and natively, so the rates sit beside `parity`'s. S3 has no directories: they
//! are `dir/` markers, as S3A makes them.
//!
//! As `sweep` on these systems, it works only in `PATH/metabench-<run>`, removed
//! afterwards (also after Ctrl-C or a failure), and refuses a path that holds data
//! unless `--existing`.

use crate::cmd_parity::{say_phase, specs, Scale};
use crate::cmd_sweep::{FromOpened, PathRun, PathUrl};
use crate::error::{input, CliError, EXIT_INTERRUPTED};
use crate::lifecycle::{run_command, Command, Ended};
use crate::volume::VolumeArgs;
use metabench_hdfs::HdfsTarget;
use metabench_load::{Exec, StopFlag};
use metabench_pathfs::tree::{run_tree, PhaseResult};
use metabench_pathfs::FsOps;
use metabench_report::{RunFailure, RunHeader};
use metabench_s3::S3Target;

/// Arguments of `metabench tree`.
#[derive(Debug, clap::Args)]
pub struct TreeArgs {
    #[command(flatten)]
    volume: VolumeArgs,

    /// Tree sizes: docs (the JuiceFS docs' mdtest runs: -b 3 -z 1 -I 100 -u, and
    /// -F -w 102400 -I 1000 -z 0 -u) or small (seconds).
    #[arg(long, value_enum, default_value = "docs")]
    scale: Scale,

    /// Parallel tasks (mdtest ranks), each a client of its own.
    #[arg(long, default_value = "1", value_parser = clap::value_parser!(u32).range(1..=1024))]
    tasks: u32,
}

/// Runs `metabench tree` through the one run lifecycle ([`run_command`]).
pub async fn run(args: TreeArgs) -> Result<i32, CliError> {
    let url = match args.volume.meta.as_deref().and_then(PathUrl::parse) {
        Some(url) => url?,
        None => {
            return Err(input(
                "tree runs on HDFS or S3 (--meta hdfs://… or s3://…); on a JuiceFS volume, \
                 `metabench parity` runs the same trees natively and through a mount",
            ))
        }
    };
    match url {
        PathUrl::Hdfs(_) => run_command(Trees::<HdfsTarget>::new(args, url)).await,
        PathUrl::S3(_) => run_command(Trees::<S3Target>::new(args, url)).await,
    }
}

/// `metabench tree` as the lifecycle drives it: each tree in a directory of its own below
/// the run's, then the cleanup and the tables.
struct Trees<P> {
    args: TreeArgs,
    /// The URL, until the system is opened.
    url: Option<PathUrl>,
    /// Why the trees stopped before the last one, if a tree failed.
    failure: Option<CliError>,
    /// The system's own differences from the client it models.
    notes: Vec<String>,
    system: std::marker::PhantomData<P>,
}

impl<P> Trees<P> {
    fn new(args: TreeArgs, url: PathUrl) -> Self {
        Self {
            args,
            url: Some(url),
            failure: None,
            notes: Vec::new(),
            system: std::marker::PhantomData,
        }
    }
}

impl<P: FromOpened> Command for Trees<P> {
    type Space = PathRun<P>;
    type Outcome = Vec<(&'static str, Vec<PhaseResult>)>;
    const NAME: &'static str = "tree";
    const ON_CTRL_C: &'static str = "stopping the phase in progress and cleaning up";

    async fn prepare(&mut self, _stop: &StopFlag) -> Result<(), Ended> {
        Ok(())
    }

    fn threads(&self) -> Option<(&Exec, &str)> {
        None
    }

    async fn open(&mut self, run_id: &str, _stop: &StopFlag) -> Result<PathRun<P>, Ended> {
        PathRun::open_once(&mut self.url, run_id, self.args.volume.existing).await
    }

    fn what(&self, _space: &PathRun<P>) -> String {
        format!(": {} task(s), {:?} trees", self.args.tasks, self.args.scale)
    }

    async fn work(
        &mut self,
        space: &mut PathRun<P>,
        _header: &RunHeader,
        stop: &StopFlag,
    ) -> Result<Self::Outcome, CliError> {
        let system = space.system();
        self.notes = system.fidelity_notes();
        let mut done = Vec::new();
        for (name, spec) in specs(self.args.scale, self.args.tasks) {
            if stop.is_stopped() {
                break;
            }
            let ran = async {
                let base = system.fs()?.mkdir(&system.root(), name).await?;
                let clients = (0..self.args.tasks)
                    .map(|_| system.fs())
                    .collect::<metabench_pathfs::Result<Vec<_>>>()?;
                run_tree(clients, base, &spec, stop, say_phase(system.name(), name)).await
            };
            match ran.await {
                Ok(phases) => done.push((name, phases)),
                Err(_) if stop.is_stopped() => break,
                Err(e) => {
                    self.failure = Some(CliError::Io(format!("{name} tree: {e}")));
                    break;
                }
            }
        }
        Ok(done)
    }

    fn failure(_outcome: &mut Self::Outcome) -> Option<&mut RunFailure> {
        None
    }

    async fn publish(
        &mut self,
        done: Self::Outcome,
        _header: RunHeader,
        left_behind: Option<CliError>,
        stop: &StopFlag,
    ) -> Ended {
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
        for line in &self.notes {
            out!("  - {line}");
        }
        match (self.failure.take(), left_behind) {
            (Some(e), _) | (None, Some(e)) => Err(e),
            (None, None) if stop.is_stopped() => Ok(EXIT_INTERRUPTED),
            (None, None) => Ok(0),
        }
    }
}

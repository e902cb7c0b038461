//! One run lifecycle for every measuring command (`ops`, `sweep`, `parity`, `tree`),
//! written once in [`run_command`]: Ctrl-C watched from the start, the client threads
//! and every check before anything is written, a run id and start time, the workspace
//! opened (a JuiceFS volume formatted or entered, or a path system's run directory made),
//! the run line, the results header, the work, the cleanup on every path (success, error,
//! Ctrl-C, a failed engine), the results and the exit code. A command says only what is
//! its own ([`Command`]); a fix to the sequence lands here.

use crate::args::ClientSettings;
use crate::error::{CliError, EXIT_ENGINE_FAILED, EXIT_INTERRUPTED};
use crate::threads::{record_client_threads, say_client_threads, SLEEP_NOTE};
use crate::volume::{new_run_id, Volume, VolumeArgs};
use metabench_engine::namespace::Namespace;
use metabench_load::{Exec, Idle, StopFlag};
use metabench_report::{EngineInfo, RunFailure, RunHeader};

/// The git commit metabench was built from, if known.
pub(crate) fn git_commit() -> Option<String> {
    Some(env!("METABENCH_GIT_COMMIT").to_owned()).filter(|c| !c.is_empty())
}

/// How a command ends once a step has decided it: its exit code, or its error (said in
/// one line by `main`).
pub(crate) type Ended = Result<i32, CliError>;

/// Where a run works: a JuiceFS volume ([`Run`]) or a path-level system (HDFS, S3).
pub(crate) trait Workspace {
    /// The engine or system, as results files describe it.
    fn engine(&self) -> &EngineInfo;

    /// What the run line says it runs on: the engine, its version, the URL (no
    /// password), and the volume.
    fn describe(&self) -> String;

    /// Whether results carry the note on sleeping client threads (an engine reached
    /// through a socket, whose round trips wake the client's CPU).
    fn notes_sleeping_clients(&self) -> bool;

    /// Removes what the run created, after waiting for an engine that failed during the
    /// run (`engine_failed`) to answer again; on failure, says in one line what was left
    /// behind and how to remove it.
    async fn clean_up(self, engine_failed: bool) -> Result<(), String>;
}

/// What a measuring command does at each step of [`run_command`]. Steps that end the
/// command early (bad input, a refusal, a lost MPI job) return the command's end.
pub(crate) trait Command {
    /// Where it works.
    type Space: Workspace;
    /// What its work gives back.
    type Outcome;
    /// Its name on the run line and in results headers.
    const NAME: &'static str;
    /// What it says it does on Ctrl-C.
    const ON_CTRL_C: &'static str;

    /// Checks everything that can be checked before anything is written, and starts the
    /// client threads, if the command has any ([`Command::threads`]).
    async fn prepare(&mut self, stop: &StopFlag) -> Result<(), Ended>;

    /// The client threads, and why there are that many and where they run.
    fn threads(&self) -> Option<(&Exec, &str)>;

    /// Opens the workspace for run `run_id`: nothing is written when it refuses.
    async fn open(&mut self, run_id: &str, stop: &StopFlag) -> Result<Self::Space, Ended>;

    /// Once the workspace is open, before the run line (the ranks of an MPI job meet
    /// here). A command that ends here cleans up the workspace itself.
    async fn opened(&mut self, space: Self::Space, _stop: &StopFlag) -> Result<Self::Space, Ended> {
        Ok(space)
    }

    /// Whether this process speaks for the run: says the run line and the results (an
    /// MPI job's rank 0 alone).
    fn speaks(&self) -> bool {
        true
    }

    /// What the run line says after the engine (levels, workload, tasks).
    fn what(&self, space: &Self::Space) -> String;

    /// Lines said after the run line and the client threads' (how a setting was picked).
    fn start_notes(&self) -> Vec<String> {
        Vec::new()
    }

    /// The work; `header` is the results header, for results written as it goes.
    async fn work(
        &mut self,
        space: &mut Self::Space,
        header: &RunHeader,
        stop: &StopFlag,
    ) -> Result<Self::Outcome, CliError>;

    /// The engine's failure mid-run that `outcome` records, if any.
    fn failure(outcome: &mut Self::Outcome) -> Option<&mut RunFailure>;

    /// Cleans up the workspace (the ranks of an MPI job in turn).
    async fn clean_up(
        &mut self,
        space: Self::Space,
        engine_failed: bool,
        _stop: &StopFlag,
    ) -> Result<(), String> {
        space.clean_up(engine_failed).await
    }

    /// The end of a run whose work failed outright, after its cleanup.
    async fn failed(&mut self, error: CliError, _stop: &StopFlag) -> Ended {
        Err(error)
    }

    /// Prints and writes the results and returns the command's end: `left_behind` is
    /// what the cleanup could not remove, the command's error once the results are out.
    async fn publish(
        &mut self,
        outcome: Self::Outcome,
        header: RunHeader,
        left_behind: Option<CliError>,
        stop: &StopFlag,
    ) -> Ended;
}

/// Runs `command` from its first check to its exit code. Ctrl-C is watched from the
/// start; whatever the work's outcome, the workspace is cleaned up before the results are
/// printed, and measured results are never lost to a failed cleanup.
pub(crate) async fn run_command<C: Command>(mut command: C) -> Ended {
    let stop = StopFlag::default();
    let watcher = crate::args::watch_ctrl_c(stop.clone(), C::ON_CTRL_C);
    let ended = steps(&mut command, &stop).await;
    watcher.abort();
    ended
}

/// The steps of [`run_command`], in order.
async fn steps<C: Command>(command: &mut C, stop: &StopFlag) -> Ended {
    if let Err(ended) = command.prepare(stop).await {
        return ended;
    }
    let run_id = new_run_id();
    let started_at = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let space = match command.open(&run_id, stop).await {
        Ok(space) => space,
        Err(ended) => return ended,
    };
    let mut space = match command.opened(space, stop).await {
        Ok(space) => space,
        Err(ended) => return ended,
    };
    if command.speaks() {
        say!(
            "metabench {} on {}{}",
            C::NAME,
            space.describe(),
            command.what(&space)
        );
        if let Some((exec, why)) = command.threads() {
            say_client_threads(exec, why);
        }
        for line in command.start_notes() {
            say!("{line}");
        }
    }
    let header = header(
        C::NAME,
        started_at,
        &space,
        command.threads().map(|(e, _)| e),
    );
    let mut outcome = command.work(&mut space, &header, stop).await;
    let engine_failed = outcome.as_mut().is_ok_and(|o| C::failure(o).is_some());
    let cleanup = command.clean_up(space, engine_failed, stop).await;
    match after_cleanup(outcome, cleanup, C::failure) {
        Ok((outcome, left_behind)) => command.publish(outcome, header, left_behind, stop).await,
        Err(error) => command.failed(error, stop).await,
    }
}

/// The header of a run's `kind` results file on `space`, its clients run on `exec` (none:
/// `parity` and `tree`, whose clients are mounts and path-system calls).
fn header<S: Workspace>(
    kind: &str,
    started_at: String,
    space: &S,
    exec: Option<&Exec>,
) -> RunHeader {
    let mut header = RunHeader::new(kind, started_at, space.engine().clone(), git_commit());
    match exec {
        Some(exec) => {
            record_client_threads(&mut header, exec);
            if exec.idle() == Idle::Sleep && space.notes_sleeping_clients() {
                header.engine.fidelity_notes.push(SLEEP_NOTE.to_owned());
            }
        }
        None => {
            header.engine.cpu_sharing =
                "unknown (the clients are not metabench's client threads)".to_owned()
        }
    }
    header
}

/// A run on a JuiceFS volume: the volume (formatted for the run, or entered), the engine
/// as results describe it, the client modelled, and the run's namespace once made.
pub struct Run {
    /// This run's id (its namespace is `/.metabench/<run-id>`).
    pub run_id: String,
    /// The volume the run works in.
    pub volume: Volume,
    /// The engine, as results files describe it.
    engine: EngineInfo,
    /// The client the run models.
    pub client: ClientSettings,
    /// The run's namespace, once made or entered.
    pub namespace: Option<Namespace>,
    /// Whether this run removes the namespace (an MPI rank that entered rank 0's does not).
    pub owns_namespace: bool,
}

impl Run {
    /// Opens `args`' volume for run `run_id`, modelling `client`; a fresh volume is
    /// formatted with `bucket` (storage, bucket) when given. Nothing is written when the
    /// volume is refused.
    pub async fn start(
        args: &VolumeArgs,
        client: ClientSettings,
        bucket: Option<(&str, &str)>,
        run_id: &str,
    ) -> Result<Self, CliError> {
        let volume = Volume::open(args, run_id, bucket).await?;
        let engine = volume.engine_info(&client).await;
        Ok(Self {
            run_id: run_id.to_owned(),
            volume,
            engine,
            client,
            namespace: None,
            owns_namespace: true,
        })
    }
}

impl Workspace for Run {
    fn engine(&self) -> &EngineInfo {
        &self.engine
    }

    fn describe(&self) -> String {
        format!(
            "{} {} ({}), volume {}",
            self.engine.kind, self.engine.version, self.engine.url, self.volume.format.name
        )
    }

    fn notes_sleeping_clients(&self) -> bool {
        !self.volume.engine.url().in_process()
    }

    async fn clean_up(self, engine_failed: bool) -> Result<(), String> {
        let namespace = self.namespace.as_ref().filter(|_| self.owns_namespace);
        self.volume.finish_after(engine_failed, namespace).await
    }
}

/// Settles a run's outcome with its cleanup, so that measured results are never lost to
/// a failed cleanup. A run that failed outright (`Err`) returns its error, after saying
/// what the cleanup left behind. Otherwise a failed cleanup goes with the engine's
/// failure when the run has one (`failure_of`); when it has none, it is handed back, to
/// be returned as the command's error once the results are written.
fn after_cleanup<O>(
    outcome: Result<O, CliError>,
    cleanup: Result<(), String>,
    failure_of: impl FnOnce(&mut O) -> Option<&mut RunFailure>,
) -> Result<(O, Option<CliError>), CliError> {
    let mut outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            if let Err(left) = cleanup {
                say!("left behind: {left}");
            }
            return Err(e);
        }
    };
    let left = match (cleanup, failure_of(&mut outcome)) {
        (Ok(()), _) => None,
        (Err(left), Some(failure)) => {
            failure.left_behind = Some(left);
            None
        }
        (Err(left), None) => Some(CliError::Io(left)),
    };
    Ok((outcome, left))
}

/// The exit code of a run whose results are out: [`EXIT_ENGINE_FAILED`] after saying the
/// engine's failure (and what it left behind), [`EXIT_INTERRUPTED`] after Ctrl-C, else 0.
pub fn exit_code(failure: Option<&RunFailure>, interrupted: bool) -> i32 {
    if let Some(failure) = failure {
        say!("error: {}", failure.line());
        if let Some(left) = &failure.left_behind {
            say!("left behind: {left}");
        }
        return EXIT_ENGINE_FAILED;
    }
    if interrupted {
        EXIT_INTERRUPTED
    } else {
        0
    }
}

/// The end of a run whose results are printed and written: the error of the first file
/// that could not be written, else what the cleanup left behind, else the exit code.
pub(crate) fn ended(
    write_error: Option<CliError>,
    left_behind: Option<CliError>,
    failure: Option<&RunFailure>,
    interrupted: bool,
) -> Ended {
    match (write_error, left_behind) {
        (Some(e), _) => Err(e),
        // The results are written; what the run could not remove is the error.
        (None, Some(e)) => Err(e),
        (None, None) => Ok(exit_code(failure, interrupted)),
    }
}

//! Argument parsers and checks shared by the subcommands.

use crate::error::{input, CliError};
use metabench_engine::{ClientProfile, SessionOptions};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// Parses a count of at least 1.
pub fn parse_count(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("'{s}' is not a whole number")),
    }
}

/// Parses a count with an optional decimal suffix: `100`, `100k`, `10M`, `1G`.
pub fn parse_amount(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1_000),
        Some((i, 'm' | 'M')) => (&t[..i], 1_000_000),
        Some((i, 'g' | 'G')) => (&t[..i], 1_000_000_000),
        _ => (t, 1),
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| format!("'{s}' is not a count (e.g. 1000, 100k, 10M)"))
}

/// Parses a positive duration such as `1s`, `250ms` or `2m`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s)
        .map_err(|e| format!("'{s}' is not a duration ({e}); try 1s or 500ms"))?;
    if d.is_zero() {
        return Err("duration must be greater than zero".into());
    }
    Ok(d)
}

/// Parses a duration that may be zero (`0`, `100ms`, `1s`).
pub fn parse_duration_or_zero(s: &str) -> Result<Duration, String> {
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    humantime::parse_duration(s)
        .map_err(|e| format!("'{s}' is not a duration ({e}); try 0, 100ms or 1s"))
}

/// Parses a client profile name.
pub fn parse_profile(s: &str) -> Result<ClientProfile, String> {
    ClientProfile::from_name(s).ok_or_else(|| {
        let names: Vec<&str> = ClientProfile::ALL.iter().map(|p| p.name()).collect();
        format!("'{s}' is not a client profile; use {}", names.join(" or "))
    })
}

/// Fails early (before any engine is touched) when `path` cannot be written.
pub fn check_output_path(path: &Path) -> Result<(), CliError> {
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(dir) = parent {
        if !dir.is_dir() {
            return Err(input(format!(
                "cannot write {}: directory {} does not exist",
                path.display(),
                dir.display()
            )));
        }
    }
    if path.is_dir() {
        return Err(input(format!(
            "cannot write {}: it is a directory",
            path.display()
        )));
    }
    Ok(())
}

/// Sets `stop` on the first Ctrl-C (SIGINT) or SIGTERM, saying what the command does next
/// (e.g. "dropping the level in progress and cleaning up"); abort the returned handle when
/// the run is over.
/// Every command stops through this one flag.
pub fn watch_ctrl_c(
    stop: metabench_load::StopFlag,
    then: &'static str,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        if stop_signal().await {
            tracing::info!("stop asked by a signal");
            // Under MPI every rank hears the signal; rank 0 speaks for the job.
            if metabench_load::team::launched_rank() == 0 {
                say!("metabench: interrupted; {then}");
            }
            stop.stop();
        }
    })
}

/// Returns true once this process hears Ctrl-C (SIGINT) or SIGTERM (`kill`), or under MPI
/// SIGCONT; false at once where it cannot listen for them. Each call hears the signals
/// that come after it.
pub(crate) async fn stop_signal() -> bool {
    use tokio::signal::unix::{signal, SignalKind};
    // Under MPI also SIGCONT: Open MPI's `mpirun`, on its own Ctrl-C or when a rank dies,
    // sends its ranks SIGCONT, then SIGTERM and SIGKILL each `odls_base_sigkill_timeout`
    // seconds later (1 s by default); stopping at the first leaves the most time to clean
    // up.
    let wait_for = |kind: SignalKind| {
        let mut stream = signal(kind).ok();
        async move {
            match &mut stream {
                Some(s) => s.recv().await,
                None => std::future::pending().await,
            }
        }
    };
    let terminated = wait_for(SignalKind::terminate());
    let mpi_ends = wait_for(if metabench_load::team::launched_by_mpi() {
        SignalKind::from_raw(libc::SIGCONT)
    } else {
        SignalKind::terminate()
    });
    tokio::select! {
        c = tokio::signal::ctrl_c() => c.is_ok(),
        t = terminated => t.is_some(),
        t = mpi_ends => t.is_some(),
    }
}

/// Writes a results file, mapping failures to one-line errors.
///
/// A regular file is written whole or not at all where the directory allows it: to a
/// temporary file beside it (with the old file's permissions), then renamed over it, so
/// that a process killed while writing leaves the previous version. Anything else
/// (`/dev/stdout`, a pipe, a symbolic link), or a directory that refuses the temporary
/// file, is written in place.
pub fn write_file(path: &Path, text: &str) -> Result<(), CliError> {
    let failed = |e: std::io::Error| CliError::Io(format!("cannot write {}: {e}", path.display()));
    let old = std::fs::symlink_metadata(path).ok();
    if old.as_ref().is_some_and(|m| !m.is_file()) {
        return std::fs::write(path, text).map_err(failed);
    }
    let name = path
        .file_name()
        .map_or_else(|| "results".into(), |n| n.to_string_lossy().into_owned());
    // One fixed name: a temporary file a killed run left is replaced by the next.
    let partial = path.with_file_name(format!(".{name}.partial"));
    let whole = std::fs::write(&partial, text)
        .and_then(|()| match &old {
            Some(old) => std::fs::set_permissions(&partial, old.permissions()),
            None => Ok(()),
        })
        .and_then(|()| std::fs::rename(&partial, path));
    if whole.is_err() {
        let _ = std::fs::remove_file(&partial);
        return std::fs::write(path, text).map_err(failed);
    }
    Ok(())
}

/// `--meta URL` where a command needs one: the JuiceFS meta URL, also read from
/// `METABENCH_META` (never printed).
#[derive(Debug, clap::Args)]
pub struct MetaArg {
    /// JuiceFS meta URL (a password missing from it is read from META_PASSWORD, and
    /// REDIS_PASSWORD for Redis, as JuiceFS does).
    #[arg(
        long,
        value_name = "URL",
        env = "METABENCH_META",
        hide_env_values = true
    )]
    pub meta: String,
}

/// Which JuiceFS client a run models: a profile and the knobs that override it, the same
/// for `ops`, `sweep` and `parity`.
#[derive(Debug, Clone, clap::Args)]
pub struct ProfileArgs {
    /// The client to model: `gobench` (JuiceFS's Go benchmark: NewClient defaults, no
    /// caches, background work after the window) or `mount` (a `juicefs mount` with
    /// default flags: --skip-dir-mtime 100ms, --skip-dir-nlink 20, a registered session,
    /// its caches, background work every second in the window). Default: gobench for
    /// `ops`, mount for `sweep` and `parity`.
    #[arg(long, value_name = "PROFILE", value_parser = parse_profile)]
    pub profile: Option<ClientProfile>,

    /// Reproduce the Go client's caches (chunk cache for read, symlink cache for
    /// readlink) instead of asking the engine on every call; `--client-cache=false`
    /// turns them off under the mount profile.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub client_cache: Option<bool>,

    /// JuiceFS's --skip-dir-mtime: a parent's mtime is not rewritten while it is younger
    /// than this (0: always rewritten, as in the Go benchmark). Overrides the profile's.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_or_zero)]
    pub skip_dir_mtime: Option<Duration>,

    /// JuiceFS's --skip-dir-nlink (TKV engines only): from this many retries of one
    /// transaction on, a directory's nlink change is not written (0: never skipped, as
    /// in the Go benchmark). Overrides the profile's.
    #[arg(long, value_name = "N")]
    pub skip_dir_nlink: Option<u32>,

    /// Register each client's session as a mount does (a session record listed by
    /// `juicefs status`, refreshed every 12 s by the background work and removed at the
    /// end; on Redis, lookup as one Lua call and resolve answered); `--register-session=false`
    /// turns it off under the mount profile. Where background work runs only after the
    /// windows (gobench) or between phases (parity), a window longer than a minute lets
    /// the record expire meanwhile.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub register_session: Option<bool>,
}

impl ProfileArgs {
    /// The client settings asked for, `default` being the command's profile.
    pub fn settings(&self, default: ClientProfile) -> ClientSettings {
        let profile = self.profile.unwrap_or(default);
        let mut session = profile.session_options();
        if let Some(c) = self.client_cache {
            session.client_cache = c;
        }
        if let Some(d) = self.skip_dir_mtime {
            session.skip_dir_mtime = d;
        }
        if let Some(n) = self.skip_dir_nlink {
            session.skip_dir_nlink = n;
        }
        if let Some(r) = self.register_session {
            session.register = r;
        }
        ClientSettings {
            profile,
            session,
            background: if profile.background_in_window() {
                BackgroundPlacement::InWindow
            } else {
                BackgroundPlacement::AfterWindow
            },
            threads_per_client: 1,
        }
    }
}

/// The client a run models: its profile and the session settings in force (the profile's,
/// with any knob the user set).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientSettings {
    /// The profile named in results.
    pub profile: ClientProfile,
    /// What every session of the run is opened with.
    pub session: SessionOptions,
    /// Where background work runs (the profile's choice, unless a command cannot:
    /// `parity`'s native side runs it between phases).
    pub background: BackgroundPlacement,
    /// Workers sharing one client (`sweep --threads-per-client`); 1 elsewhere.
    pub threads_per_client: u32,
}

/// Where a run's background work (dir-stat and counter flushes, freeing deleted files'
/// data) runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackgroundPlacement {
    /// Between each client's calls while the windows run (the mount profile).
    InWindow,
    /// Once after each window (the gobench profile).
    AfterWindow,
    /// Between the phases of `parity`'s native side.
    BetweenPhases,
}

impl BackgroundPlacement {
    /// As results record it.
    pub fn describe(self) -> &'static str {
        match self {
            BackgroundPlacement::InWindow => "every second, in the window",
            BackgroundPlacement::AfterWindow => "after the window",
            BackgroundPlacement::BetweenPhases => "between phases",
        }
    }
}

impl ClientSettings {
    /// Whether background work runs in the timed windows.
    pub fn background_in_window(&self) -> bool {
        self.background == BackgroundPlacement::InWindow
    }

    /// The settings as results record them (`skip_dir_mtime`: `100ms`, …); a knob that
    /// differs from the profile's own value is marked "(set)".
    pub fn describe(&self) -> BTreeMap<String, String> {
        let own = self.profile.session_options();
        let mark = |differs: bool| if differs { " (set)" } else { "" };
        let s = &self.session;
        let mut out = BTreeMap::new();
        out.insert("profile".to_owned(), self.profile.name().to_owned());
        out.insert(
            "skip_dir_mtime".to_owned(),
            format!(
                "{}{}",
                humantime::format_duration(s.skip_dir_mtime),
                mark(s.skip_dir_mtime != own.skip_dir_mtime)
            ),
        );
        out.insert(
            "skip_dir_nlink".to_owned(),
            format!(
                "{}{}",
                s.skip_dir_nlink,
                mark(s.skip_dir_nlink != own.skip_dir_nlink)
            ),
        );
        out.insert(
            "client_cache".to_owned(),
            format!(
                "{}{}",
                if s.client_cache { "on" } else { "off" },
                mark(s.client_cache != own.client_cache)
            ),
        );
        out.insert(
            "session".to_owned(),
            format!(
                "{}{}",
                if s.register {
                    "registered"
                } else {
                    "not registered"
                },
                mark(s.register != own.register)
            ),
        );
        out.insert(
            "background_work".to_owned(),
            self.background.describe().to_owned(),
        );
        if self.threads_per_client > 1 {
            out.insert(
                "threads_per_client".to_owned(),
                format!(
                    "{} workers share each client (its state, id batches, transaction locks \
                     and registered session, if any)",
                    self.threads_per_client
                ),
            );
        }
        out
    }
}

/// How each simulated client behaves, the same for `ops` and `sweep`.
#[derive(Debug, clap::Args)]
pub struct ClientArgs {
    /// The client profile and its knobs.
    #[command(flatten)]
    pub profile: ProfileArgs,

    /// How long one call may take. A call started in a window is recorded when it
    /// finishes, after the window's end too; one without an answer by this time counts
    /// as a `timeout` error, and its client goes on with a fresh session.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub op_timeout: std::time::Duration,

    /// Threads that run the clients, each with its own runtime, the clients spread over
    /// them. Default: one per core, less one when the engine's server runs on this
    /// machine (a loopback address or a Unix socket in --meta), which then keeps a core
    /// of its own; an in-process engine (SQLite) runs on the client threads and gets
    /// one per core. A server on this machine that is bound to some CPUs (taskset) keeps
    /// them: the client threads are bound to the others, one per CPU by default
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub client_threads: Option<u16>,

    /// Client threads poll their sockets instead of sleeping while their clients wait, a
    /// whole core each: a reply then finds its thread running. Where an idle CPU is slow
    /// to wake (a VM that halts idle vCPUs adds tens of µs to a loopback round trip),
    /// this keeps the client machine's wake-up out of every call's time. The sweep's
    /// self-check then judges how long the clients kept the threads busy, not their CPU
    /// share (they use their cores whole).
    #[arg(long)]
    pub busy_poll: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn results_files_are_replaced_whole_and_keep_their_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.json");
        write_file(&path, "first").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        // A temporary file a killed run left behind is replaced, not kept.
        std::fs::write(dir.path().join(".run.json.partial"), "stale").unwrap();
        write_file(&path, "second").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "second");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, ["run.json"]);
        // A symbolic link is written through, and stays a link.
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        write_file(&link, "third").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "third");
    }
}

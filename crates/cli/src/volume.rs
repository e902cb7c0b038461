//! The volume a benchmark runs in: the embedded default (a SQLite volume in a temporary
//! directory), a volume metabench formats on an empty database, or an existing JuiceFS
//! volume (`--existing`). Whatever metabench created is removed by [`Volume::finish`].

use crate::args::ClientSettings;
use crate::error::{input, CliError};
use metabench_engine::namespace::{Namespace, NAMESPACE_DIR};
use metabench_engine::{open, ClientProfile, Engine, Meta, MetaUrl, SessionOptions, VolumeState};
use metabench_report::{EngineInfo, Footprint};
use metabench_schema::Format;
use std::sync::Arc;
use std::time::Duration;

/// How long a run whose engine failed waits for it to answer again before cleaning up.
pub const ENGINE_RECOVERY_WAIT: Duration = Duration::from_secs(10);

/// Where to run, as given on the command line.
#[derive(Debug, Clone, clap::Args)]
pub struct VolumeArgs {
    /// JuiceFS meta URL, e.g. redis://:pass@host:6379/1,
    /// mysql://user:pass@(host:3306)/db, postgres://user:pass@host:5432/db,
    /// sqlite3:///path/to.db. Without it: a SQLite volume in a temporary directory.
    /// `sweep` also takes a system beside JuiceFS: hdfs://namenode:8020/path or
    /// s3://bucket/prefix?endpoint=URL&region=R (keys from AWS_ACCESS_KEY_ID and
    /// AWS_SECRET_ACCESS_KEY), with --workload nnbench.
    /// A password missing from the URL is read from META_PASSWORD (and REDIS_PASSWORD for
    /// Redis), as JuiceFS does.
    #[arg(
        long,
        value_name = "URL",
        env = "METABENCH_META",
        hide_env_values = true
    )]
    pub meta: Option<String>,

    /// Run inside the existing JuiceFS volume at --meta (in a private directory
    /// /.metabench/<run-id> that is removed afterwards) instead of formatting an empty
    /// database.
    #[arg(long, requires = "meta")]
    pub existing: bool,
}

/// An opened volume plus what must be undone at the end.
pub struct Volume {
    /// The engine.
    pub engine: Arc<dyn Engine>,
    /// The volume's format record.
    pub format: Format,
    /// UUID of the volume metabench formatted for this run, to be destroyed at the end.
    formatted: Option<String>,
    /// The embedded default's directory, removed on drop.
    _temp: Option<tempfile::TempDir>,
    /// The meta URL as given (with its password), or the embedded default's.
    pub meta_url: String,
}

/// A short unique id for a run: seconds since the epoch and 8 random hex digits.
pub fn new_run_id() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let rand = uuid::Uuid::new_v4().simple().to_string();
    format!("{secs}-{}", &rand[..8])
}

impl Volume {
    /// Opens (and, for an empty database, formats) the volume; a fresh volume is formatted
    /// with this storage and bucket (`--storage`, `--bucket`) when given, else with `file`
    /// in the temp directory. Bad input fails before anything is written.
    pub async fn open(
        args: &VolumeArgs,
        run_id: &str,
        bucket: Option<(&str, &str)>,
    ) -> Result<Self, CliError> {
        let mut meta_url = args.meta.clone().unwrap_or_default();
        let (url, temp) = match &args.meta {
            Some(s) if s.starts_with("hdfs://") || s.starts_with("s3://") => {
                return Err(input(
                    "HDFS and S3 are measured beside JuiceFS by `metabench sweep --workload \
                     nnbench`; this command needs a JuiceFS meta URL",
                ))
            }
            Some(s) => (MetaUrl::parse(s)?, None),
            None => {
                let dir = tempfile::Builder::new()
                    .prefix("metabench-")
                    .tempdir()
                    .map_err(|e| {
                        CliError::Io(format!("cannot create a temporary directory: {e}"))
                    })?;
                let path = dir.path().join("meta.db");
                meta_url = format!("sqlite3://{}", path.display());
                (
                    MetaUrl::parse(&format!("sqlite3://{}", path.display()))?,
                    Some(dir),
                )
            }
        };
        let bucket_override = bucket;
        let engine = open(&url).await?;
        let state = engine.probe().await?;
        let (format, formatted) = match (state, args.existing) {
            (VolumeState::Volume(f), true) => {
                f.check_version().map_err(input)?;
                (*f, None)
            }
            (VolumeState::Volume(f), false) => {
                return Err(input(format!(
                    "{url} already holds the JuiceFS volume '{}'; pass --existing to benchmark inside it \
                     (metabench works in /.metabench/<run-id> and removes it afterwards)",
                    f.name
                )))
            }
            (VolumeState::Empty, true) => {
                return Err(input(format!("{url} holds no JuiceFS volume, but --existing needs one")))
            }
            (VolumeState::Empty, false) => {
                let uuid = uuid::Uuid::new_v4().to_string();
                let name = format!("metabench-{run_id}");
                let bucket = std::env::temp_dir().join(&name);
                let mut f = Format::new(&name, &uuid, &format!("{}/", bucket.display()), 0);
                if let Some((storage, bucket)) = bucket_override {
                    f.storage = storage.to_owned();
                    f.bucket = bucket.to_owned();
                }
                engine.format(&f).await?;
                (f, Some(uuid))
            }
            (VolumeState::Foreign(what), _) => {
                return Err(input(format!(
                    "{url} is not a JuiceFS volume and is not empty ({what}); metabench will not touch it"
                )))
            }
        };
        Ok(Self {
            engine,
            format,
            formatted,
            _temp: temp,
            meta_url,
        })
    }

    /// Whether metabench formatted this volume itself.
    pub fn formatted_here(&self) -> bool {
        self.formatted.is_some()
    }

    /// Opens a session (one JuiceFS client).
    pub async fn session(&self, opts: &SessionOptions) -> Result<Box<dyn Meta>, CliError> {
        Ok(self.engine.session(opts).await?)
    }

    /// The engine's context for results files, with the client the run models.
    ///
    /// The server's settings are read here, once, before any timed window: a server that
    /// would not say them has its version recorded as `unknown (<why>)`.
    pub async fn engine_info(&self, client: &ClientSettings) -> EngineInfo {
        let mut info = match self.engine.server_info().await {
            Ok(info) => info,
            Err(e) => metabench_engine::ServerInfo {
                version: format!("unknown (the server would not say: {e})"),
                ..Default::default()
            },
        };
        let mut kind = self.engine.kind().name().to_owned();
        // A stand-in, or a server not told apart from one, is labelled in every output:
        // its kind names it, and the results carry what it proves or why it is unknown.
        if let Some(stand_in) = info.standin.take() {
            kind += stand_in.kind_suffix();
            let (name, what) = stand_in.entry();
            info.settings.insert(name.to_owned(), what.to_owned());
        }
        EngineInfo {
            kind,
            url: self.engine.url().redacted(),
            version: info.version,
            settings: info.settings,
            location: self.engine.url().location(),
            cpu_sharing: String::new(),
            formatted_by_metabench: self.formatted_here(),
            client_profile: client.profile.describe().to_owned(),
            client_settings: client.describe(),
            fidelity_notes: self
                .engine
                .fidelity_notes()
                .iter()
                .map(|n| (*n).to_owned())
                .chain([metabench_load::timing::timing_note()])
                .collect(),
            footprint: Some(footprint(self.engine.as_ref()).await),
        }
    }

    /// Cleans up as [`Volume::finish`] does; when the engine failed during the run
    /// (`engine_failed`), first waits up to [`ENGINE_RECOVERY_WAIT`] for it to answer
    /// again. On failure, says what was left behind and how to remove it (one line).
    pub async fn finish_after(
        self,
        engine_failed: bool,
        namespace: Option<&Namespace>,
    ) -> Result<(), String> {
        // Said now: cleanup consumes the target.
        let leftover = self.left_behind(namespace);
        if engine_failed && !self.wait_for_engine(ENGINE_RECOVERY_WAIT).await {
            // Cleaning up on an engine that does not answer would hold the run, with the
            // measured results not yet written: they go first, and the user is told.
            return Err(format!(
                "{leftover} (cleanup skipped: the engine did not answer within {}s)",
                ENGINE_RECOVERY_WAIT.as_secs()
            ));
        }
        self.finish(namespace)
            .await
            .map_err(|e| format!("{leftover} (cleanup failed: {})", e.one_line()))
    }

    /// Waits, at most `limit`, until the engine opens a session and answers its null round
    /// trip again; says whether it did.
    async fn wait_for_engine(&self, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        let step = Duration::from_secs(1);
        loop {
            let answered = tokio::time::timeout(step, async {
                let mut meta = self
                    .session(&ClientProfile::Gobench.session_options())
                    .await
                    .ok()?;
                meta.null_round_trip().await.ok()
            })
            .await;
            if matches!(answered, Ok(Some(_))) {
                return true;
            }
            if tokio::time::Instant::now() + step > deadline {
                return false;
            }
            tokio::time::sleep(step).await;
        }
    }

    /// What a failed cleanup leaves behind, and how to remove it once the engine is back.
    fn left_behind(&self, namespace: Option<&Namespace>) -> String {
        let url = self.engine.url().redacted();
        match (&self.formatted, namespace) {
            (Some(uuid), _) => format!(
                "the volume {} that metabench formatted at {url}: remove it with `juicefs destroy {url} {uuid}` once the engine is back",
                self.format.name
            ),
            (None, Some(ns)) => format!(
                "the run's namespace /{}/{} in the volume at {url}: remove it with `juicefs rmr MOUNTPOINT/{0}/{1}` once the engine is back",
                String::from_utf8_lossy(NAMESPACE_DIR),
                ns.run_id
            ),
            (None, None) => "nothing".to_owned(),
        }
        .to_owned()
            + &match self.engine.sessions().open().len() {
                _ if self.formatted.is_some() => String::new(),
                0 => String::new(),
                n => format!(
                    "; {n} registered session record(s), which expire within a minute and are then removed by any juicefs client"
                ),
            }
    }

    /// Removes the records of the sessions the run registered (`--profile mount`; not
    /// needed when the volume goes), then the volume if this run formatted it, else the
    /// run's namespace (if created). Runs every step even if an earlier one failed, and reports
    /// the first failure.
    async fn finish(self, namespace: Option<&Namespace>) -> Result<(), CliError> {
        let mut first_error = None;
        if self.formatted.is_none() {
            if let Err(e) = self.engine.close_sessions().await {
                first_error.get_or_insert(CliError::Meta(e));
            }
        }
        // A volume this run formatted goes whole: its namespace need not be removed first.
        if let (Some(ns), None) = (namespace, &self.formatted) {
            let cleanup = async {
                let mut meta = self
                    .engine
                    .session(&ClientProfile::Gobench.session_options())
                    .await?;
                ns.remove(meta.as_mut()).await
            };
            if let Err(e) = cleanup.await {
                first_error.get_or_insert(CliError::Meta(e));
            }
        }
        if let Some(uuid) = &self.formatted {
            if let Err(e) = self.engine.destroy(uuid).await {
                first_error.get_or_insert(CliError::Meta(e));
            }
        }
        match first_error {
            None => Ok(()),
            Some(e) => Err(e),
        }
    }
}

/// What `engine` holds now, by its own count, as results record it (`unknown: <why>`
/// where it keeps no such figure).
pub(crate) async fn footprint(engine: &dyn metabench_engine::Engine) -> Footprint {
    match engine.footprint().await {
        Ok(f) => Footprint {
            bytes: Some(f.bytes),
            rss_bytes: f.rss_bytes,
            what: f.what,
        },
        Err(why) => Footprint {
            bytes: None,
            rss_bytes: None,
            what: format!("unknown: {why}"),
        },
    }
}

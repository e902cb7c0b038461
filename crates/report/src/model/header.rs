//! What every results file starts with: the layout version, the engine measured and the
//! machine it was measured from.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the results layout; bumped on incompatible changes.
pub const SCHEMA_VERSION: u32 = 1;

/// The engine a run measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineInfo {
    /// Engine family (`redis`, `mysql`, `postgres`, `sqlite`).
    pub kind: String,
    /// The meta URL with its password redacted.
    pub url: String,
    /// Server software and version.
    pub version: String,
    /// The engine's settings a reader needs before comparing two runs, read from the
    /// server once, before the run (durability, memory, connections, members; a setting
    /// the server would not tell is `unknown (<why>)`). Files written before it held more
    /// than durability call it `durability`.
    #[serde(alias = "durability")]
    pub settings: BTreeMap<String, String>,
    /// Where the engine's server ran, seen from the clients: `in-process`, `local
    /// socket`, `loopback`, `this host (<address>)`, `remote` or `unknown (<why>)`; empty
    /// in results from before it was recorded.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub location: String,
    /// Whether the engine's server shared the client threads' CPUs: `yes (…)`, `partly
    /// (…)`, `no (…)` with the CPUs of each, or `unknown (<why>)`; empty where it was not
    /// recorded.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cpu_sharing: String,
    /// Whether the run used a volume metabench formatted (`false`: `--existing`).
    pub formatted_by_metabench: bool,
    /// Which JuiceFS client the numbers model.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub client_profile: String,
    /// The settings that client ran with (`profile`, `skip_dir_mtime`, `skip_dir_nlink`,
    /// `client_cache`, `background_work`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub client_settings: BTreeMap<String, String>,
    /// Where metabench's sessions knowingly differ from that client, one line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fidelity_notes: Vec<String>,
    /// What the engine held when the run started, by its own count; none in results from
    /// before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub footprint: Option<Footprint>,
}

/// What an engine held, by its own count (Redis `used_memory`, the SQL tables' size, the
/// SQLite file, etcd's `dbSizeInUse`): how full the volume it ran on was.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Footprint {
    /// Bytes; none where the engine keeps no such figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// The server process's resident memory, where the engine says (Redis).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_bytes: Option<u64>,
    /// What the figure counts, or why it is unknown (`unknown: …`).
    pub what: String,
}

impl Footprint {
    /// One line: `183.2 MiB (Redis used_memory …)`, or why it is unknown.
    pub fn line(&self) -> String {
        match self.bytes {
            Some(b) => format!("{} ({})", mib(b), self.what),
            None => self.what.clone(),
        }
    }
}

/// Bytes in MiB, one decimal.
pub fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
}

impl EngineInfo {
    /// The client's settings in one line (`skip-dir-mtime 100ms, …`), without the profile.
    pub fn client_settings_line(&self) -> String {
        let settings: Vec<String> = self
            .client_settings
            .iter()
            .filter(|(k, _)| k.as_str() != "profile")
            .map(|(k, v)| format!("{} {v}", k.replace('_', "-")))
            .collect();
        settings.join(", ")
    }

    /// The client profile's name (`gobench`, `mount`), also from files that recorded only
    /// its description; `None` when the file does not say.
    pub fn profile_name(&self) -> Option<&str> {
        match self.client_settings.get("profile") {
            Some(p) => Some(p.as_str()),
            None => self
                .client_profile
                .split(':')
                .next()
                .filter(|p| !p.is_empty()),
        }
    }

    /// Whether the client skipped parent updates by time (SkipDirMtime above 0), which
    /// makes round trips per call depend on timing.
    pub fn skips_dir_mtime(&self) -> bool {
        self.client_settings
            .get("skip_dir_mtime")
            .is_some_and(|v| !v.starts_with("0s"))
    }

    /// The engine's settings as `name=value` pairs, space-separated.
    pub fn settings_line(&self) -> String {
        self.settings
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Where the engine ran and whether it shared the clients' CPUs, in one phrase
    /// (`loopback; CPUs shared: yes (…)`); `not recorded` for either a file does not say.
    pub fn placement_line(&self) -> String {
        let or_not = |s: &str| {
            if s.is_empty() {
                "not recorded".to_owned()
            } else {
                s.to_owned()
            }
        };
        format!(
            "{}; CPUs shared with the clients: {}",
            or_not(&self.location),
            or_not(&self.cpu_sharing)
        )
    }

    /// The engine's setup as `-v` prints it: its version (with its kind when the
    /// version does not start with it), where it ran, and its settings.
    pub fn setup_lines(&self) -> Vec<String> {
        let family = self.kind.split('-').next().unwrap_or_default();
        let named = self
            .version
            .to_lowercase()
            .starts_with(&family.to_lowercase());
        let engine = if named || self.kind.is_empty() {
            self.version.clone()
        } else {
            format!("{} {}", self.kind, self.version)
        };
        vec![
            format!("engine: {engine}, {}", self.placement_line()),
            format!("engine settings: {}", self.settings_line()),
        ]
    }

    /// The engine's setup in one short line, for a plain run: where it ran and how many
    /// settings the results hold.
    pub fn setup_summary(&self) -> String {
        let location = if self.location.is_empty() {
            "location not recorded"
        } else {
            &self.location
        };
        let shared = match self.cpu_sharing.split(' ').next() {
            Some(word) if !word.is_empty() => word,
            _ => "not recorded",
        };
        let n = self.settings.len();
        format!(
            "engine: {location}, CPUs shared with the clients: {shared}; {n} setting{} \
             recorded: see --verbose, the JSON or the report",
            if n == 1 { "" } else { "s" }
        )
    }

    /// Where `current`'s engine setup differs from this one's (the baseline's): its
    /// engine and version, each setting both record, where it ran and whether it shared
    /// the clients' CPUs; one line each. A setting only one of them records (a file from
    /// before it was recorded) is said once, after them, as not comparable.
    pub fn setup_differences(&self, current: &EngineInfo) -> Vec<String> {
        let mut out = Vec::new();
        let mut differ = |what: &str, was: &str, is: &str| {
            if was != is && !was.is_empty() && !is.is_empty() {
                out.push(format!(
                    "the engine's {what} differs: baseline {was}, current {is}"
                ));
            }
        };
        differ("kind", &self.kind, &current.kind);
        differ("version", &self.version, &current.version);
        differ("location", &self.location, &current.location);
        differ("CPU sharing", &self.cpu_sharing, &current.cpu_sharing);
        let mut one_sided = Vec::new();
        for (name, was) in &self.settings {
            match current.settings.get(name) {
                Some(is) => differ(name, was, is),
                None => one_sided.push(format!("{name} (baseline only)")),
            }
        }
        for name in current.settings.keys() {
            if !self.settings.contains_key(name) {
                one_sided.push(format!("{name} (current only)"));
            }
        }
        if self.location.is_empty() != current.location.is_empty() {
            one_sided.push("location".to_owned());
        }
        if self.cpu_sharing.is_empty() != current.cpu_sharing.is_empty() {
            one_sided.push("CPU sharing".to_owned());
        }
        // A fuller engine is another regime: deeper indexes, a working set beyond caches.
        if let (Some(a), Some(b)) = (
            self.footprint.as_ref().and_then(|f| f.bytes),
            current.footprint.as_ref().and_then(|f| f.bytes),
        ) {
            let (lo, hi) = (a.min(b) as f64, a.max(b) as f64);
            if hi > 1.25 * lo && hi - lo > (1u64 << 20) as f64 {
                out.push(format!(
                    "the engine held different amounts when the runs started: baseline {}, current {} ({})",
                    mib(a),
                    mib(b),
                    current.footprint.as_ref().map_or("", |f| f.what.as_str())
                ));
            }
        }
        if !one_sided.is_empty() {
            out.push(format!(
                "recorded by one run only, not compared: {}",
                one_sided.join(", ")
            ));
        }
        out
    }

    /// The client a run modelled, for tables: its profile and settings, or what files
    /// written before profiles existed say.
    pub fn client_summary(&self) -> String {
        match self.client_settings.get("profile") {
            Some(p) => format!("{p}: {}", self.client_settings_line()),
            None if self.client_profile.is_empty() => "not recorded".to_owned(),
            None => self.client_profile.clone(),
        }
    }

    /// The lines to print under a run's results: the client profile and the documented
    /// differences from it.
    pub fn fidelity_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if !self.client_profile.is_empty() {
            lines.push(format!("client profile: {}", self.client_profile));
        }
        if !self.client_settings.is_empty() {
            lines.push(format!("client settings: {}", self.client_settings_line()));
        }
        if !self.fidelity_notes.is_empty() {
            lines.push("where metabench differs from that client:".to_owned());
            lines.extend(self.fidelity_notes.iter().map(|n| format!("  - {n}")));
        }
        lines
    }
}

/// CPUs as the kernel lists them (`0-3,6`), in the order given.
pub fn cpu_list(cpus: &[usize]) -> String {
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for &cpu in cpus {
        match runs.last_mut() {
            Some((_, end)) if *end + 1 == cpu => *end = cpu,
            _ => runs.push((cpu, cpu)),
        }
    }
    let run = |&(first, last): &(usize, usize)| {
        if first == last {
            first.to_string()
        } else {
            format!("{first}-{last}")
        }
    };
    runs.iter().map(run).collect::<Vec<_>>().join(",")
}

/// The machine metabench ran on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostInfo {
    /// Host name.
    pub hostname: String,
    /// Logical CPUs.
    pub cores: usize,
    /// The threads metabench ran its clients on (`--client-threads`); 0 in results from
    /// before it was recorded, and where no client thread ran.
    #[serde(default)]
    pub client_threads: usize,
    /// Whether the client threads polled instead of sleeping while their clients waited
    /// (`--busy-poll`); false in results from before it was recorded.
    #[serde(default)]
    pub busy_poll: bool,
    /// The CPUs the client threads were bound to, in order; empty where the kernel placed
    /// them (and in results from before it was recorded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub client_cpus: Vec<usize>,
    /// The CPUs a server of the engine on this machine was bound to, when it was found;
    /// empty otherwise (a remote or in-process engine, a server not found).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub engine_cpus: Vec<usize>,
    /// Memory in bytes.
    pub memory_bytes: u64,
    /// Operating system and kernel.
    pub os: String,
}

impl HostInfo {
    /// `hostname (N cores, T client threads[ on CPU L][ (the engine's server on CPU L)][,
    /// busy-polling], M GiB, os)`.
    pub fn summary(&self) -> String {
        let mut threads = match self.client_threads {
            0 => String::new(),
            1 => ", 1 client thread".to_owned(),
            n => format!(", {n} client threads"),
        };
        if !self.client_cpus.is_empty() {
            threads.push_str(&format!(" on CPU {}", cpu_list(&self.client_cpus)));
        }
        if !self.engine_cpus.is_empty() {
            threads.push_str(&format!(
                " (the engine's server on CPU {})",
                cpu_list(&self.engine_cpus)
            ));
        }
        if self.busy_poll {
            threads.push_str(", busy-polling");
        }
        format!(
            "{} ({} cores{threads}, {:.1} GiB, {})",
            self.hostname,
            self.cores,
            self.memory_bytes as f64 / (1u64 << 30) as f64,
            self.os
        )
    }

    /// Reads the facts of this machine.
    pub fn detect() -> Self {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let memory_bytes = read("/proc/meminfo")
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kb| kb * 1024)
            .unwrap_or(0);
        let pretty = read("/etc/os-release")
            .lines()
            .find_map(|l| l.strip_prefix("PRETTY_NAME="))
            .map(|s| s.trim_matches('"').to_owned())
            .unwrap_or_else(|| std::env::consts::OS.to_owned());
        let kernel = read("/proc/sys/kernel/osrelease").trim().to_owned();
        Self {
            hostname: read("/proc/sys/kernel/hostname").trim().to_owned(),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            client_threads: 0,
            busy_poll: false,
            client_cpus: Vec::new(),
            engine_cpus: Vec::new(),
            memory_bytes,
            os: if kernel.is_empty() {
                pretty
            } else {
                format!("{pretty}, Linux {kernel}")
            },
        }
    }
}

/// What every results file starts with, whatever its kind (`ops`, `sweep`, `parity`):
/// the layout version and kind, who wrote it and when, the engine and the machine. Its
/// fields sit at the top level of the JSON.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunHeader {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// `ops`, `sweep` or `parity`.
    pub kind: String,
    /// metabench version.
    pub metabench_version: String,
    /// Git commit metabench was built from, if known.
    pub git_commit: Option<String>,
    /// Start time, RFC 3339 UTC.
    pub started_at: String,
    /// The engine measured.
    pub engine: EngineInfo,
    /// The machine.
    pub host: HostInfo,
    /// The tree of the volume the read operations drew their targets from (`--tree`),
    /// and what the draws reached; absent when they read only what the run made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reads: Option<ReadsFrom>,
}

/// The tree of the volume that reads drew their targets from (`--tree`): what it held,
/// the distribution of the draws and the spread they reached.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadsFrom {
    /// The tree's directory in the volume.
    pub path: String,
    /// The key distribution (`uniform`, `zipfian:0.99`, `latest`).
    pub keys: String,
    /// Names found in the whole tree (directories, files, symlinks, hard links).
    pub names: u64,
    /// Directories among them.
    pub dirs: u64,
    /// Regular files' names among them.
    pub files: u64,
    /// Symlinks among them.
    pub symlinks: u64,
    /// Names the draws picked from: all of them, or a uniform sample (`--tree-max`).
    pub sampled_names: u64,
    /// How long listing the tree took, seconds (untimed, before the run).
    pub walk_s: f64,
    /// Per operation that drew from the tree: its pool and the spread of its draws.
    pub reach: Vec<ReachRecord>,
}

/// The spread of one operation's draws over its pool.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReachRecord {
    /// The operation.
    pub op: String,
    /// What it drew from: `names`, `inodes`, `files` or `symlinks`.
    pub pool: String,
    /// Members of that pool.
    pub members: u64,
    /// Draws made (warm-up and timed calls of every level).
    pub draws: u64,
    /// Distinct members they reached.
    pub distinct: u64,
    /// Distinct members the distribution predicts for that many independent draws.
    pub expected_distinct: f64,
    /// `listdir`: the entries the drawn directories held per draw (`.` and `..` counted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entries_per_draw: Option<f64>,
}

impl RunHeader {
    /// The header of a `kind` run of this metabench (built from `git_commit`) that
    /// started at `started_at`, on `engine` and this machine.
    pub fn new(
        kind: &str,
        started_at: String,
        engine: EngineInfo,
        git_commit: Option<String>,
    ) -> Self {
        Self {
            schema_version: SCHEMA_VERSION,
            kind: kind.to_owned(),
            metabench_version: env!("CARGO_PKG_VERSION").to_owned(),
            git_commit,
            started_at,
            engine,
            host: HostInfo::detect(),
            reads: None,
        }
    }
}

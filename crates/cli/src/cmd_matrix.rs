//! `metabench matrix`: the same plan on every engine of a set of configs, then the
//! cross-engine report of those that could be reached.

use crate::child::{run_metabench, ChildEnd};
use crate::cmd_report::{LabeledFiles, ReportOutput};
use crate::error::EXIT_INTERRUPTED;
use crate::error::{input, CliError};
use metabench_report::cross::Unreachable;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// Arguments of `metabench matrix`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Each CONFIG is a TOML file with `name`, `meta` (a JuiceFS meta URL) and optionally an \
`[expect]` table of durability settings (checked against the server; a mismatch is a \
warning), such as the \
setups of the JuiceFS docs' comparison in configs/engines/. The plan after `--` is an \
`ops` or `sweep` command line without --meta and --json (default: `ops`), e.g.\n\n  \
metabench matrix configs/engines/*.toml --plot plots -- sweep --conc 1..64 --duration 3s\n\n\
Engines that cannot be reached (or that this metabench cannot drive) are listed in the \
output and the report, not dropped. Exit code: 0 when at least one engine ran, 1 when \
none did, 130 after Ctrl-C.")]
pub struct MatrixArgs {
    /// Engine configs (TOML with `name` and `meta`).
    #[arg(value_name = "CONFIG", required = true)]
    configs: Vec<PathBuf>,

    /// Directory for each engine's results file (NAME.json); created if needed.
    #[arg(long, value_name = "DIR", default_value = "matrix-results")]
    out: PathBuf,

    #[command(flatten)]
    report: ReportOutput,

    /// The plan run on every engine: `ops …` or `sweep …` (after `--`).
    #[arg(last = true, value_name = "PLAN")]
    plan: Vec<String>,
}

/// One engine setup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineConfig {
    /// Name in the report.
    pub name: String,
    /// JuiceFS meta URL.
    pub meta: String,
    /// Durability settings the setup expects the server to run with (`[expect]`), checked
    /// against what the server reports.
    pub expect: std::collections::BTreeMap<String, String>,
}

/// Reads an engine config.
pub fn read_config(path: &Path) -> Result<EngineConfig, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| input(format!("cannot read {}: {e}", path.display())))?;
    let table: toml::Table = text
        .parse()
        .map_err(|e| input(format!("{}: not TOML: {e}", path.display())))?;
    let get = |k: &str| -> Result<Option<String>, CliError> {
        match table.get(k) {
            None => Ok(None),
            Some(toml::Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(input(format!("{}: '{k}' must be a string", path.display()))),
        }
    };
    for k in table.keys() {
        if k != "name" && k != "meta" && k != "expect" {
            return Err(input(format!(
                "{}: unknown key '{k}' (expected name, meta and [expect])",
                path.display()
            )));
        }
    }
    let mut expect = std::collections::BTreeMap::new();
    match table.get("expect") {
        None => {}
        Some(toml::Value::Table(t)) => {
            for (k, v) in t {
                let v = match v {
                    toml::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                expect.insert(k.clone(), v);
            }
        }
        Some(_) => {
            return Err(input(format!(
                "{}: [expect] must be a table of settings",
                path.display()
            )))
        }
    }
    let meta = get("meta")?.ok_or_else(|| input(format!("{}: no 'meta' URL", path.display())))?;
    let name = match get("name")? {
        Some(n) => n,
        None => path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "engine".into()),
    };
    if name.is_empty() || name.contains(['/', '\\']) {
        return Err(input(format!("{}: bad name '{name}'", path.display())));
    }
    Ok(EngineConfig { name, meta, expect })
}

/// Runs `metabench matrix`.
pub async fn run(args: MatrixArgs) -> Result<i32, CliError> {
    let plan = if args.plan.is_empty() {
        vec!["ops".to_owned()]
    } else {
        args.plan.clone()
    };
    if plan[0] != "ops" && plan[0] != "sweep" {
        return Err(input(format!(
            "the plan after -- must start with ops or sweep, not '{}'",
            plan[0]
        )));
    }
    if let Some(bad) = plan
        .iter()
        .find(|a| ["--meta", "--json", "--existing"].contains(&a.split('=').next().unwrap_or("")))
    {
        return Err(input(format!(
            "the plan sets {bad}; matrix sets it for each engine"
        )));
    }
    let mut configs = Vec::new();
    for path in &args.configs {
        let c = read_config(path)?;
        if configs.iter().any(|x: &EngineConfig| x.name == c.name) {
            return Err(input(format!("two configs are named '{}'", c.name)));
        }
        configs.push(c);
    }
    args.report.check()?;
    std::fs::create_dir_all(&args.out)
        .map_err(|e| CliError::Io(format!("cannot create {}: {e}", args.out.display())))?;

    let stop = metabench_load::StopFlag::default();
    let watcher = crate::args::watch_ctrl_c(
        stop.clone(),
        "stopping the engine in progress, which cleans up",
    );
    let mut files = Vec::new();
    let mut unreachable = Vec::new();
    for c in &configs {
        if stop.is_stopped() {
            watcher.abort();
            say!("metabench: matrix interrupted before {}", c.name);
            return Ok(EXIT_INTERRUPTED);
        }
        let json = args.out.join(format!("{}.json", c.name));
        say!("== {}: metabench {}", c.name, plan.join(" "));
        let mut child_args: Vec<&OsStr> = plan.iter().map(OsStr::new).collect();
        child_args.extend([OsStr::new("--json"), json.as_os_str()]);
        match run_metabench(child_args, &c.meta, &stop).await? {
            ChildEnd::Done => {
                say!("   {}: done", c.name);
                for m in durability_mismatches(c, &json) {
                    say!("   {}: warning: {m}", c.name);
                }
                files.push(json);
            }
            ChildEnd::Interrupted => {
                watcher.abort();
                say!("metabench: matrix interrupted at {}", c.name);
                return Ok(EXIT_INTERRUPTED);
            }
            ChildEnd::Failed(reason) => {
                say!("   {}: not measured: {reason}", c.name);
                unreachable.push(Unreachable {
                    label: c.name.clone(),
                    reason,
                });
            }
        }
    }
    watcher.abort();
    if files.is_empty() {
        say!("metabench: error: no engine could be measured");
        for u in &unreachable {
            say!("  {}: {}", u.label, u.reason);
        }
        return Ok(1);
    }
    let runs = LabeledFiles::read(&files)?;
    args.report.write(&runs, &unreachable)?;
    Ok(0)
}

/// Settings of `[expect]` the server did not report with the expected value.
fn durability_mismatches(c: &EngineConfig, json: &Path) -> Vec<String> {
    if c.expect.is_empty() {
        return Vec::new();
    }
    let Ok(run) = std::fs::read_to_string(json)
        .map_err(|e| e.to_string())
        .and_then(|t| metabench_report::AnyResults::from_json(&t))
    else {
        return Vec::new();
    };
    let actual = &run.engine().settings;
    c.expect
        .iter()
        .filter(|(k, v)| actual.get(*k) != Some(*v))
        .map(|(k, v)| match actual.get(k) {
            Some(a) => format!("the server runs {k}={a}, this setup expects {k}={v}"),
            None => format!("the server did not report {k}; this setup expects {k}={v}"),
        })
        .collect()
}

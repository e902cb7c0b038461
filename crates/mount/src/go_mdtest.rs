//! `juicefs mdtest META-URL PATH`: JuiceFS's own Go client against the engine, with no
//! FUSE in between (`cmd/mdtest.go`). Its shape is mdtest's without `-u`, files only: one
//! tree (`--dirs` children per directory, `--depth` levels) that all `--threads` threads of
//! one client share, each creating `--files` files (with `--write` bytes of slices
//! recorded, no data uploaded) in every directory. It times two phases and logs them:
//! `Created N dirs in T (R dirs/s)` and `Created N files in T (R files/s)`.

use crate::juicefs::{client_options, run_tool_output, GLOBAL_FLAGS};
use crate::{MountError, Result};
use metabench_load::StopFlag;
use metabench_pathfs::tree::{Phase, TreeSpec};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

/// What one `juicefs mdtest` run measured: per phase it times, the items and the rate it
/// logged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GoMdtest {
    /// `(phase, items, ops/s)`: tree creation, then file creation.
    pub phases: Vec<(Phase, u64, f64)>,
}

impl GoMdtest {
    /// The rate of `phase`, when `juicefs mdtest` runs it.
    pub fn rate(&self, phase: Phase) -> Option<f64> {
        self.phases
            .iter()
            .find(|(p, _, _)| *p == phase)
            .map(|(_, _, r)| *r)
    }
}

/// How to run `juicefs mdtest` on a volume.
#[derive(Debug, Clone)]
pub struct GoMdtestOptions {
    /// The `juicefs` binary.
    pub juicefs: PathBuf,
    /// The meta URL (with its password; never printed: juicefs redacts it in its log).
    pub meta_url: String,
    /// Where in the volume, from its root (e.g. `/.metabench/<run>/go-metadata`).
    pub path: String,
    /// `--skip-dir-mtime`, as the mount gets it.
    pub skip_dir_mtime: Duration,
    /// `--skip-dir-nlink`.
    pub skip_dir_nlink: u32,
    /// A private `--cache-dir`.
    pub cache_dir: PathBuf,
}

/// Whether `juicefs mdtest` can run `spec`'s shape: one shared tree (no `-u`), files only.
pub fn runs_shape(spec: &TreeSpec) -> bool {
    !spec.unique_dir && spec.files_only && !spec.dirs_only
}

/// The arguments of `juicefs mdtest` for `spec` (which [`runs_shape`] accepts): the tree's
/// shape, and the client options a mount gets ([`client_options`]).
fn args(o: &GoMdtestOptions, spec: &TreeSpec) -> Vec<std::ffi::OsString> {
    let mut a: Vec<std::ffi::OsString> = GLOBAL_FLAGS.map(Into::into).into();
    a.extend([
        "mdtest".into(),
        o.meta_url.clone().into(),
        o.path.clone().into(),
    ]);
    for (flag, value) in [
        ("--threads", spec.tasks.to_string()),
        ("--dirs", spec.branch.to_string()),
        ("--depth", spec.depth.to_string()),
        ("--files", spec.items.to_string()),
        ("--write", spec.write_bytes.to_string()),
        // Beside a running mount, whose metrics port is the default one.
        ("--metrics", "127.0.0.1:0".to_owned()),
    ] {
        a.push(flag.into());
        a.push(value.into());
    }
    a.extend(client_options(
        o.skip_dir_mtime,
        o.skip_dir_nlink,
        &o.cache_dir,
    ));
    a
}

/// Runs `juicefs mdtest` for `spec` and parses what it logged.
pub async fn run_go_mdtest(
    o: &GoMdtestOptions,
    spec: &TreeSpec,
    stop: &StopFlag,
) -> Result<GoMdtest> {
    if !runs_shape(spec) {
        return Err(MountError::Command(format!(
            "juicefs mdtest runs one shared tree of files only, not mdtest {}",
            spec.mdtest_args().join(" ")
        )));
    }
    let mut cmd = tokio::process::Command::new(&o.juicefs);
    cmd.args(args(o, spec));
    let out = run_tool_output(cmd, "juicefs mdtest", stop).await?;
    let go = parse_go_mdtest(&String::from_utf8_lossy(&out.stderr))?;
    check_items(&go, spec)?;
    Ok(go)
}

/// `juicefs mdtest` logs a failed create and goes on, then reports the items it planned:
/// its counts must be the tree's (all of its directories; every task's files in each).
fn check_items(go: &GoMdtest, spec: &TreeSpec) -> Result<()> {
    let dirs = spec.dirs_in_tree();
    for (phase, items, _) in &go.phases {
        let want = match phase {
            Phase::TreeCreation => dirs,
            _ => dirs * u64::from(spec.tasks) * spec.items,
        };
        if *items != want {
            return Err(MountError::Parse(format!(
                "juicefs mdtest reported {items} items for {}, where the tree has {want}",
                phase.label()
            )));
        }
    }
    Ok(())
}

/// Parses the two result lines of `juicefs mdtest`'s log (1.4.x): `Created N dirs in T
/// (R dirs/s)` and `Created N files in T (R files/s)`.
pub fn parse_go_mdtest(log: &str) -> Result<GoMdtest> {
    // A create that failed is logged and skipped, and the run still exits 0.
    if let Some(line) = log
        .lines()
        .find(|l| l.contains("<ERROR>") || l.contains("<FATAL>"))
    {
        let what = line.split_once("]: ").map_or(line, |(_, m)| m);
        return Err(MountError::Command(format!(
            "juicefs mdtest logged an error: {}",
            what.trim()
        )));
    }
    let mut phases = Vec::new();
    for (unit, phase) in [
        ("dirs", Phase::TreeCreation),
        ("files", Phase::FileCreation),
    ] {
        let row = log.lines().find_map(|l| created(l, unit)).ok_or_else(|| {
            MountError::Parse(format!(
                "juicefs mdtest logged no \"Created … {unit}\" line"
            ))
        })?;
        phases.push((phase, row.0, row.1));
    }
    Ok(GoMdtest { phases })
}

/// `(N, R)` of a line `… Created N <unit> in T (R <unit>/s) …`.
fn created(line: &str, unit: &str) -> Option<(u64, f64)> {
    let rest = &line[line.find("Created ")? + "Created ".len()..];
    let (n, rest) = rest.split_once(' ')?;
    let rest = rest.strip_prefix(unit)?.strip_prefix(" in ")?;
    let rate = rest.split_once('(')?.1;
    let rate = rate
        .strip_suffix(&format!(" {unit}/s)"))
        .or_else(|| rate.split_once(&format!(" {unit}/s)")).map(|(r, _)| r))?;
    Some((n.parse().ok()?, rate.trim().parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_log_of_juicefs_1_4() {
        // `juicefs mdtest … --threads 2 --depth 1 --dirs 2 --files 5 --write 4096` on
        // Redis (its first line, the meta address, left out).
        let r = parse_go_mdtest(&crate::test_data("juicefs-mdtest-1.4.2.txt")).unwrap();
        assert_eq!(
            r.phases,
            vec![
                (Phase::TreeCreation, 3, 2320.0),
                (Phase::FileCreation, 30, 3013.0)
            ]
        );
        assert_eq!(r.rate(Phase::FileStat), None);
        assert!(parse_go_mdtest("Created 3 dirs in 1ms (3000 dirs/s)").is_err());
        // A failed create is logged, and the run must not count.
        let failed = crate::test_data("juicefs-mdtest-1.4.2.txt").replace(
            "<INFO>: Create 30 files",
            "<ERROR>: Create: create /x/file.mdtest.0.0: no space left on device [runTest@mdtest.go:143]\n<INFO>: Create 30 files",
        );
        let e = parse_go_mdtest(&failed).unwrap_err().to_string();
        assert!(e.contains("no space left on device"), "{e}");
        // The counts must be the tree's: 3 directories, 2 tasks × 5 files in each.
        let spec = TreeSpec {
            branch: 2,
            depth: 1,
            items: 5,
            tasks: 2,
            unique_dir: false,
            files_only: true,
            ..TreeSpec::docs_metadata(2)
        };
        assert!(check_items(&r, &spec).is_ok());
        let bigger = TreeSpec { items: 6, ..spec };
        assert!(check_items(&r, &bigger).is_err());
    }

    #[test]
    fn the_shape_and_flags_follow_the_spec() {
        let shared = TreeSpec {
            unique_dir: false,
            files_only: true,
            ..TreeSpec::docs_metadata(4)
        };
        assert!(runs_shape(&shared));
        assert!(!runs_shape(&TreeSpec::docs_metadata(4)));
        let o = GoMdtestOptions {
            juicefs: "juicefs".into(),
            meta_url: "redis://h/1".into(),
            path: "/x".into(),
            skip_dir_mtime: Duration::from_millis(100),
            skip_dir_nlink: 20,
            cache_dir: "/c".into(),
        };
        let a: Vec<String> = args(&o, &shared)
            .into_iter()
            .map(|s| s.into_string().unwrap())
            .collect();
        let after = |f: &str| a[a.iter().position(|x| x == f).unwrap() + 1].clone();
        assert_eq!(
            [
                after("--threads"),
                after("--dirs"),
                after("--depth"),
                after("--files")
            ],
            ["4", "3", "1", "100"].map(String::from)
        );
        assert_eq!(after("--skip-dir-mtime"), "100000000ns");
        assert_eq!(&a[2..5], ["mdtest", "redis://h/1", "/x"]);
    }
}

//! mdtest: run the real binary when there is one, and parse its SUMMARY.

use crate::juicefs::run_tool;
use crate::{MountError, Result};
use metabench_load::StopFlag;
use metabench_pathfs::tree::{Phase, TreeSpec};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// One SUMMARY rate row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryRow {
    /// The phase.
    pub phase: Phase,
    /// Max rate over iterations, ops/s.
    pub max: f64,
    /// Min.
    pub min: f64,
    /// Mean.
    pub mean: f64,
    /// Standard deviation.
    pub stddev: f64,
}

/// Parses the `SUMMARY rate:` block of mdtest 3.3 / 4.0 output (the `SUMMARY time:` block
/// of 4.0, and any other text, is skipped).
pub fn parse_summary(text: &str) -> Result<Vec<SummaryRow>> {
    let mut rows = Vec::new();
    let mut in_rate = false;
    for line in text.lines() {
        let l = line.trim();
        if l.starts_with("SUMMARY") {
            in_rate = l.starts_with("SUMMARY rate");
            continue;
        }
        if !in_rate {
            continue;
        }
        if l.starts_with("--") && l.contains("finished") {
            in_rate = false;
            continue;
        }
        let Some((label, nums)) = l.split_once(':') else {
            continue;
        };
        let Some(phase) = Phase::from_label(label) else {
            continue;
        };
        let v: Vec<f64> = nums
            .split_whitespace()
            .filter_map(|n| n.parse().ok())
            .collect();
        if v.len() < 4 {
            return Err(MountError::Parse(format!("mdtest SUMMARY row: {l}")));
        }
        rows.push(SummaryRow {
            phase,
            max: v[0],
            min: v[1],
            mean: v[2],
            stddev: v[3],
        });
    }
    if rows.is_empty() {
        return Err(MountError::Parse("mdtest printed no SUMMARY rate".into()));
    }
    Ok(rows)
}

/// `mdtest` on PATH, and `mpirun` when more than one task is asked for.
pub fn find_mdtest() -> Option<PathBuf> {
    crate::juicefs::which("mdtest")
}

fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find(|l| l.starts_with("Uid:"))
            .and_then(|l| l.split_whitespace().nth(2))
            == Some("0")
    })
}

fn is_open_mpi(mpirun: &Path) -> bool {
    std::process::Command::new(mpirun)
        .arg("--version")
        .output()
        .is_ok_and(|o| {
            String::from_utf8_lossy(&o.stdout).contains("Open MPI")
                || String::from_utf8_lossy(&o.stdout).contains("OpenRTE")
        })
}

/// Runs mdtest with `spec`'s arguments in `dir` (`mpirun -np N` when `spec.tasks > 1`).
pub async fn run_mdtest(
    mdtest: &Path,
    dir: &Path,
    spec: &TreeSpec,
    stop: &StopFlag,
) -> Result<Vec<SummaryRow>> {
    let mut cmd = if spec.tasks > 1 {
        let mpirun = crate::juicefs::which("mpirun").ok_or_else(|| {
            MountError::Command("mdtest with --tasks > 1 needs mpirun on PATH".into())
        })?;
        let mut c = tokio::process::Command::new(&mpirun);
        if running_as_root() && is_open_mpi(&mpirun) {
            // Open MPI refuses root without it; MPICH knows no such flag.
            c.arg("--allow-run-as-root");
        }
        c.args(["-np", &spec.tasks.to_string()]).arg(mdtest);
        c
    } else {
        tokio::process::Command::new(mdtest)
    };
    cmd.args(spec.mdtest_args()).arg("-d").arg(dir);
    let out = run_tool(cmd, "mdtest", stop).await?;
    parse_summary(&out)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::test_data as data;

    #[test]
    fn parses_mdtest_3_3_summary() {
        // Reconstructed from mdtest 3.3's published output format, not captured here.
        let rows = parse_summary(&data("mdtest-3.3-summary.txt")).unwrap();
        assert_eq!(rows.len(), 9);
        assert_eq!(rows[0].phase, Phase::DirCreation);
        assert_eq!(rows[0].max, 12_914.302);
        assert_eq!(rows[0].mean, 12_914.302);
        assert_eq!(rows[7].phase, Phase::TreeCreation);
        assert_eq!(rows[8].phase, Phase::TreeRemoval);
    }

    #[test]
    fn parses_mdtest_4_0_summary_rate_only() {
        // Reconstructed from mdtest 4.0's published output format (rate and time blocks,
        // Directory rename row), not captured here.
        let rows = parse_summary(&data("mdtest-4.0-summary.txt")).unwrap();
        let phases: Vec<Phase> = rows.iter().map(|r| r.phase).collect();
        assert_eq!(
            phases.len(),
            9,
            "rename is not an mdtest-3.3 phase and is skipped"
        );
        assert_eq!(phases[0], Phase::DirCreation);
        let fc = rows
            .iter()
            .find(|r| r.phase == Phase::FileCreation)
            .unwrap();
        assert_eq!((fc.max, fc.min, fc.stddev), (3_521.617, 3_210.004, 155.806));
        assert!(parse_summary("no summary here").is_err());
    }
}

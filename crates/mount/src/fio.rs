//! fio through the mount: the jobs of the JuiceFS docs and a parser of
//! `--output-format=json`.

use crate::juicefs::run_tool;
use crate::{MountError, Result};
use metabench_load::StopFlag;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// One fio job of the JuiceFS docs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FioJob {
    /// Job name (`big-write`, `big-read`, `small-write`, `small-read`).
    pub name: String,
    /// The job's arguments (without `--directory` and `--output-format`).
    pub args: Vec<String>,
}

/// The docs' jobs at `scale` ("small": a few MiB, "docs": the sizes of the JuiceFS
/// metadata-engine comparison, `--bs=4M --size=4G` per job for the big file; the docs
/// give no small-file job, so metabench uses 100 files of 128 KiB per job) with `numjobs`
/// jobs each. Reads follow the writes of the same name and read those files.
pub fn docs_jobs(docs_scale: bool, numjobs: u32) -> Vec<FioJob> {
    let (big, small_size, small_count) = if docs_scale {
        ("4G", "128k", "100")
    } else {
        ("8M", "4k", "20")
    };
    let n = numjobs.to_string();
    let big_args = |rw: &str| {
        let mut a = vec![
            format!("--rw={rw}"),
            "--bs=4M".into(),
            format!("--size={big}"),
            format!("--numjobs={n}"),
            "--filename_format=big.$jobnum".into(),
        ];
        if rw == "write" {
            a.extend(["--end_fsync=1".into(), "--refill_buffers".into()]);
        }
        a
    };
    let small_args = |rw: &str| {
        let mut a = vec![
            format!("--rw={rw}"),
            "--bs=4k".into(),
            "--file_service_type=sequential".into(),
            format!("--filesize={small_size}"),
            format!("--nrfiles={small_count}"),
            format!("--numjobs={n}"),
            "--filename_format=small.$jobnum.$filenum".into(),
        ];
        if rw == "write" {
            a.extend(["--end_fsync=1".into(), "--refill_buffers".into()]);
        }
        a
    };
    vec![
        FioJob {
            name: "big-write".into(),
            args: big_args("write"),
        },
        FioJob {
            name: "big-read".into(),
            args: big_args("read"),
        },
        FioJob {
            name: "small-write".into(),
            args: small_args("write"),
        },
        FioJob {
            name: "small-read".into(),
            args: small_args("read"),
        },
    ]
}

/// What a fio run measured, summed over its jobs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FioResult {
    /// Job name.
    pub name: String,
    /// fio's version string.
    pub fio_version: String,
    /// Jobs reported.
    pub jobs: usize,
    /// `read` or `write`: the direction that moved bytes.
    pub direction: String,
    /// Bytes moved by all jobs.
    pub io_bytes: u64,
    /// Sum of the jobs' bandwidths, bytes/s.
    pub bw_bytes_per_s: f64,
    /// Sum of the jobs' IOPS.
    pub iops: f64,
    /// Mean completion latency over the jobs, µs.
    pub clat_mean_us: f64,
}

/// Parses fio's JSON output (with or without `--group_reporting`).
pub fn parse_fio_json(name: &str, text: &str) -> Result<FioResult> {
    // fio may print notes before the JSON document.
    let start = text
        .find('{')
        .ok_or_else(|| MountError::Parse("fio printed no JSON".into()))?;
    let v: serde_json::Value = serde_json::from_str(&text[start..])
        .map_err(|e| MountError::Parse(format!("fio JSON: {e}")))?;
    let jobs = v["jobs"]
        .as_array()
        .ok_or_else(|| MountError::Parse("fio JSON has no jobs".into()))?;
    let sum = |dir: &str, key: &str| -> f64 {
        jobs.iter()
            .map(|j| j[dir][key].as_f64().unwrap_or(0.0))
            .sum()
    };
    let direction = if sum("write", "io_bytes") >= sum("read", "io_bytes") {
        "write"
    } else {
        "read"
    };
    let clat: Vec<f64> = jobs
        .iter()
        .filter_map(|j| j[direction]["clat_ns"]["mean"].as_f64())
        .collect();
    for j in jobs {
        if j["error"].as_i64().unwrap_or(0) != 0 {
            return Err(MountError::Parse(format!(
                "fio job {} failed with error {}",
                j["jobname"], j["error"]
            )));
        }
    }
    Ok(FioResult {
        name: name.to_owned(),
        fio_version: v["fio version"].as_str().unwrap_or("").to_owned(),
        jobs: jobs.len(),
        direction: direction.to_owned(),
        io_bytes: sum(direction, "io_bytes") as u64,
        bw_bytes_per_s: sum(direction, "bw_bytes"),
        iops: sum(direction, "iops"),
        clat_mean_us: if clat.is_empty() {
            0.0
        } else {
            clat.iter().sum::<f64>() / clat.len() as f64 / 1000.0
        },
    })
}

/// Runs `fio --name=JOB --directory=DIR --output-format=json ARGS…`.
pub async fn run_fio(fio: &Path, dir: &Path, job: &FioJob, stop: &StopFlag) -> Result<FioResult> {
    let mut cmd = tokio::process::Command::new(fio);
    cmd.arg(format!("--name={}", job.name))
        .arg(format!("--directory={}", dir.display()))
        .arg("--output-format=json")
        .args(&job.args);
    let out = run_tool(cmd, &format!("fio {}", job.name), stop).await?;
    parse_fio_json(&job.name, &out)
}

/// `fio` on PATH.
pub fn find_fio() -> Option<PathBuf> {
    crate::juicefs::which("fio")
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::test_data as data;

    #[test]
    fn parses_fio_3_33_big_write() {
        // Captured on this machine: fio 3.33 through a JuiceFS 1.4.2 mount, 2 jobs of 8 MiB.
        let r = parse_fio_json("big-write", &data("fio-big-write-3.33.json")).unwrap();
        assert_eq!(r.fio_version, "fio-3.33");
        assert_eq!(r.jobs, 2);
        assert_eq!(r.direction, "write");
        assert_eq!(r.io_bytes, 2 * (8 << 20));
        assert!(r.bw_bytes_per_s > 0.0 && r.iops > 0.0 && r.clat_mean_us > 0.0);
    }

    #[test]
    fn parses_fio_3_33_reads_and_small_files() {
        let r = parse_fio_json("big-read", &data("fio-big-read-3.33.json")).unwrap();
        assert_eq!((r.direction.as_str(), r.io_bytes), ("read", 2 * (8 << 20)));
        let r = parse_fio_json("small-write", &data("fio-small-write-3.33.json")).unwrap();
        // 2 jobs × 20 files × 4 KiB
        assert_eq!((r.direction.as_str(), r.io_bytes), ("write", 2 * 20 * 4096));
        // the two jobs' bw_bytes as fio printed them
        assert_eq!(r.bw_bytes_per_s, 1_905_116.0 + 1_170_285.0);
        let r = parse_fio_json("small-read", &data("fio-small-read-3.33.json")).unwrap();
        assert_eq!((r.direction.as_str(), r.io_bytes), ("read", 2 * 20 * 4096));
    }

    #[test]
    fn rejects_garbage() {
        assert!(parse_fio_json("x", "fio: no such option").is_err());
        assert!(parse_fio_json("x", "{\"nojobs\": 1}").is_err());
    }

    #[test]
    fn jobs_follow_the_docs() {
        let jobs = docs_jobs(true, 4);
        assert_eq!(jobs.len(), 4);
        let w = jobs[0].args.join(" ");
        for a in [
            "--rw=write",
            "--bs=4M",
            "--numjobs=4",
            "--end_fsync=1",
            "--refill_buffers",
        ] {
            assert!(w.contains(a), "{w}");
        }
        assert!(jobs[2]
            .args
            .join(" ")
            .contains("--file_service_type=sequential"));
    }
}

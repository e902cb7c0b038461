//! `juicefs bench MOUNT -p N`: run and parse its table.

use crate::juicefs::run_juicefs_bench;
use crate::{MountError, Result};
use metabench_load::StopFlag;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One row of `juicefs bench`'s table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchRow {
    /// ITEM, e.g. `Write big file`.
    pub item: String,
    /// VALUE as printed, e.g. `91.09 MiB/s`.
    pub value: String,
    /// COST as printed, e.g. `0.18 s/file`.
    pub cost: String,
    /// VALUE's number.
    pub value_num: Option<f64>,
    /// VALUE's unit (`MiB/s`, `files/s`, `operations`).
    pub value_unit: String,
    /// COST's number.
    pub cost_num: Option<f64>,
    /// COST's unit (`s/file`, `ms/file`, `ms/op`).
    pub cost_unit: String,
}

/// A parsed `juicefs bench` report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchResult {
    /// The parameter line (`BlockSize: …, NumThreads: N`).
    pub params: String,
    /// The `Time used: …` line.
    pub time_used: String,
    /// The table's rows, in order.
    pub rows: Vec<BenchRow>,
}

fn split_num(s: &str) -> (Option<f64>, String) {
    let mut it = s.splitn(2, ' ');
    let n = it.next().unwrap_or("").parse::<f64>().ok();
    (n, it.next().unwrap_or("").trim().to_owned())
}

/// Parses `juicefs bench`'s output (1.x table with ITEM | VALUE | COST).
pub fn parse_bench(text: &str) -> Result<BenchResult> {
    let mut params = String::new();
    let mut time_used = String::new();
    let mut rows = Vec::new();
    for line in text.lines() {
        let l = line.trim();
        if l.starts_with("BlockSize:") {
            params = l.to_owned();
        } else if l.starts_with("Time used:") {
            time_used = l.to_owned();
        } else if l.starts_with('|') {
            let cells: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
            if cells.len() != 3 || cells[0] == "ITEM" {
                continue;
            }
            let (value_num, value_unit) = split_num(cells[1]);
            let (cost_num, cost_unit) = split_num(cells[2]);
            rows.push(BenchRow {
                item: cells[0].to_owned(),
                value: cells[1].to_owned(),
                cost: cells[2].to_owned(),
                value_num,
                value_unit,
                cost_num,
                cost_unit,
            });
        }
    }
    if rows.is_empty() {
        return Err(MountError::Parse("juicefs bench printed no table".into()));
    }
    Ok(BenchResult {
        params,
        time_used,
        rows,
    })
}

/// Runs `juicefs bench DIR -p N` with the given sizes.
pub async fn run_bench(
    juicefs: &Path,
    dir: &Path,
    threads: u32,
    docs_scale: bool,
    stop: &StopFlag,
) -> Result<BenchResult> {
    let small = [
        "--big-file-size",
        "8M",
        "--small-file-size",
        "64K",
        "--small-file-count",
        "20",
    ];
    let out = run_juicefs_bench(juicefs, "bench", [dir], threads, docs_scale, &small, stop).await?;
    parse_bench(&out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_juicefs_bench_1_4() {
        // Captured on this machine: juicefs 1.4.2 bench -p 2 on a SQLite volume.
        let text = crate::test_data("juicefs-bench-1.4.2.txt");
        let r = parse_bench(&text).unwrap();
        assert!(r.params.contains("NumThreads: 2"));
        assert!(r.time_used.starts_with("Time used: 1.2 s"));
        assert_eq!(r.rows.len(), 12);
        let first = &r.rows[0];
        assert_eq!(first.item, "Write big file");
        assert_eq!(first.value_num, Some(91.09));
        assert_eq!(first.value_unit, "MiB/s");
        assert_eq!(
            (first.cost_num, first.cost_unit.as_str()),
            (Some(0.18), "s/file")
        );
        let stat = r.rows.iter().find(|r| r.item == "Stat file").unwrap();
        assert_eq!(
            (stat.value_num, stat.value_unit.as_str()),
            (Some(3112.0), "files/s")
        );
        let meta = r.rows.iter().find(|r| r.item == "Update meta").unwrap();
        assert_eq!((meta.value_num, meta.cost_num), (Some(692.0), Some(0.91)));
        assert!(parse_bench("nothing").is_err());
    }
}

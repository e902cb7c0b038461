//! `juicefs objbench --storage TYPE BUCKET -p N`: the object store under a volume,
//! run and parsed (its functional table and its performance table).
//!
//! objbench works under a prefix of its own (`__juicefs_benchmark_<ns>__/`) and deletes
//! it at the end; credentials come from `ACCESS_KEY` / `SECRET_KEY`, as for juicefs.

use crate::juicefs::run_juicefs_bench;
use crate::{MountError, Result};
use metabench_load::StopFlag;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One row of the functional table: a feature of the store and whether it works.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjFunction {
    /// CATEGORY (`basic`, `sync`).
    pub category: String,
    /// TEST, e.g. `put an object`.
    pub test: String,
    /// RESULT: `pass`, `not support`, or what failed.
    pub result: String,
}

/// One row of the performance table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjPerf {
    /// ITEM, e.g. `put small objects`.
    pub item: String,
    /// VALUE's number.
    pub value: Option<f64>,
    /// VALUE's unit (`MiB/s`, `objects/s`).
    pub value_unit: String,
    /// COST as printed, e.g. `0.22 ms/object` or `0.74 ms/ 24 objects`.
    pub cost: String,
}

/// A parsed `juicefs objbench` report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjbenchResult {
    /// The storage type and bucket it ran on.
    pub storage: String,
    /// The parameter line (`block-size: …, NumThreads: N`).
    pub params: String,
    /// The functional tests, in order.
    pub functions: Vec<ObjFunction>,
    /// The performance rows, in order.
    pub perf: Vec<ObjPerf>,
}

fn cells(line: &str) -> Option<Vec<&str>> {
    let l = line.trim();
    if !l.starts_with('|') {
        return None;
    }
    Some(l.trim_matches('|').split('|').map(str::trim).collect())
}

/// Parses `juicefs objbench`'s output (1.4: a CATEGORY | TEST | RESULT table, then an
/// ITEM | VALUE | COST table after `Benchmark finished!`).
pub fn parse_objbench(text: &str, storage: &str) -> Result<ObjbenchResult> {
    let mut params = String::new();
    let mut functions = Vec::new();
    let mut perf = Vec::new();
    let mut in_perf = false;
    for line in text.lines() {
        if let Some(p) = line.trim().strip_prefix("Benchmark finished!") {
            params = p.trim().to_owned();
            in_perf = true;
            continue;
        }
        let Some(c) = cells(line) else { continue };
        if c.len() != 3 || c[0] == "CATEGORY" || c[0] == "ITEM" {
            continue;
        }
        if in_perf {
            let mut v = c[1].splitn(2, ' ');
            perf.push(ObjPerf {
                item: c[0].to_owned(),
                value: v.next().and_then(|n| n.parse().ok()),
                value_unit: v.next().unwrap_or("").trim().to_owned(),
                cost: c[2].to_owned(),
            });
        } else {
            functions.push(ObjFunction {
                category: c[0].to_owned(),
                test: c[1].to_owned(),
                result: c[2].to_owned(),
            });
        }
    }
    if perf.is_empty() {
        return Err(MountError::Parse(
            "juicefs objbench printed no performance table".into(),
        ));
    }
    Ok(ObjbenchResult {
        storage: storage.to_owned(),
        params,
        functions,
        perf,
    })
}

/// Runs `juicefs objbench --storage STORAGE BUCKET -p THREADS`; at the small scale with
/// 16 MiB big objects and 20 small ones (a few seconds on a local disk), else with its
/// defaults (1 GiB, 100).
pub async fn run_objbench(
    juicefs: &Path,
    storage: &str,
    bucket: &str,
    threads: u32,
    docs_scale: bool,
    stop: &StopFlag,
) -> Result<ObjbenchResult> {
    let args = ["--storage", storage, bucket];
    let small = ["--big-object-size", "16M", "--small-objects", "20"];
    let out =
        run_juicefs_bench(juicefs, "objbench", args, threads, docs_scale, &small, stop).await?;
    parse_objbench(&out, &format!("{storage} {bucket}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_juicefs_objbench_1_4() {
        // Captured on this machine: juicefs 1.4.2 objbench --storage file
        // --big-object-size 16M --small-objects 20 -p 2.
        let text = crate::test_data("juicefs-objbench-1.4.2.txt");
        let r = parse_objbench(&text, "file /tmp/b/").unwrap();
        assert!(r.params.starts_with("block-size: 4.0 MiB"), "{}", r.params);
        assert!(r.params.ends_with("NumThreads: 2"), "{}", r.params);
        assert_eq!(r.functions.len(), 16);
        assert_eq!(
            (
                r.functions[1].category.as_str(),
                r.functions[1].test.as_str()
            ),
            ("basic", "put an object")
        );
        let multipart = r
            .functions
            .iter()
            .find(|f| f.test == "multipart upload")
            .unwrap();
        assert_eq!(multipart.result, "not support");
        assert_eq!(r.perf.len(), 10);
        assert_eq!(r.perf[0].item, "upload objects");
        assert_eq!(
            (r.perf[0].value, r.perf[0].value_unit.as_str()),
            (Some(2223.79), "MiB/s")
        );
        let small = r
            .perf
            .iter()
            .find(|p| p.item == "put small objects")
            .unwrap();
        assert_eq!(
            (small.value, small.value_unit.as_str(), small.cost.as_str()),
            (Some(9213.62), "objects/s", "0.22 ms/object")
        );
        let list = r.perf.iter().find(|p| p.item == "list objects").unwrap();
        assert_eq!(list.cost, "0.74 ms/ 24 objects");
        assert!(parse_objbench("no tables here", "file x").is_err());
    }
}

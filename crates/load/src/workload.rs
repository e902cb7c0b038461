//! Workloads: what each client repeats during a sweep level.
//!
//! A workload is a list of phases run one after the other at every level. A phase is one
//! operation, or a weighted mix of operations drawn at random per call. Built in: each
//! single operation, `golang` (every operation of JuiceFS's Go benchmark, one phase each)
//! and `nnbench` (NNBench's create+write, open, rename and delete, one phase each). More
//! mixes are TOML files, e.g. `configs/workloads/metadata-mix.toml`:
//!
//! ```toml
//! description = "stat-heavy tree walk"
//! [[op]]
//! name = "getattr"
//! weight = 70
//! [[op]]
//! name = "lookup"
//! weight = 30
//! ```

use crate::Op;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// One phase: the operations drawn from during a level's timed window, with weights.
#[derive(Debug, Clone, PartialEq)]
pub struct Phase {
    /// Name shown in tables (the op name, or the mix's name).
    pub name: String,
    /// Operations and their relative weights (all > 0).
    pub ops: Vec<(Op, u32)>,
}

impl Phase {
    /// A phase of a single operation.
    pub fn single(op: Op) -> Self {
        Self {
            name: op.name().to_owned(),
            ops: vec![(op, 1)],
        }
    }
}

/// A named list of phases.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    /// Name recorded in results.
    pub name: String,
    /// Phases in run order.
    pub phases: Vec<Phase>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MixFile {
    #[serde(default)]
    description: String,
    op: Vec<MixOp>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MixOp {
    name: String,
    weight: u32,
}

impl Workload {
    /// Each of `ops` as a phase of its own.
    pub fn from_ops(ops: &[Op]) -> Self {
        Self {
            name: ops.iter().map(|o| o.name()).collect::<Vec<_>>().join(","),
            phases: ops.iter().copied().map(Phase::single).collect(),
        }
    }

    /// Parses a TOML mix.
    pub fn from_toml(name: &str, text: &str) -> Result<Self, String> {
        let mix: MixFile = toml::from_str(text).map_err(|e| {
            format!(
                "workload '{name}': {}",
                e.message().lines().next().unwrap_or("invalid TOML")
            )
        })?;
        let _ = mix.description;
        if mix.op.is_empty() {
            return Err(format!("workload '{name}' lists no [[op]]"));
        }
        let mut ops = Vec::new();
        for o in mix.op {
            let op: Op = o
                .name
                .parse()
                .map_err(|e| format!("workload '{name}': {e}"))?;
            if o.weight == 0 {
                return Err(format!(
                    "workload '{name}': weight of '{}' must be at least 1",
                    o.name
                ));
            }
            if ops.iter().any(|(seen, _)| *seen == op) {
                return Err(format!("workload '{name}' lists '{}' twice", o.name));
            }
            ops.push((op, o.weight));
        }
        Ok(Self {
            name: name.to_owned(),
            phases: vec![Phase {
                name: name.to_owned(),
                ops,
            }],
        })
    }

    /// Finds a workload by name: `golang`, `nnbench`, an operation name, a TOML file
    /// path, or `<name>.toml` in one of `dirs`.
    pub fn resolve(name: &str, dirs: &[PathBuf]) -> Result<Self, String> {
        match name {
            "golang" => {
                return Ok(Self {
                    name: "golang".into(),
                    phases: Op::GOLANG.iter().copied().map(Phase::single).collect(),
                })
            }
            "nnbench" => {
                return Ok(Self {
                    name: "nnbench".into(),
                    phases: Op::NNBENCH.iter().copied().map(Phase::single).collect(),
                })
            }
            _ => {}
        }
        if let Ok(op) = name.parse::<Op>() {
            return Ok(Self::from_ops(&[op]));
        }
        let direct = Path::new(name);
        let candidates: Vec<PathBuf> = if name.ends_with(".toml") || name.contains('/') {
            vec![direct.to_path_buf()]
        } else {
            dirs.iter()
                .map(|d| d.join(format!("{name}.toml")))
                .collect()
        };
        for path in &candidates {
            if let Ok(text) = std::fs::read_to_string(path) {
                let stem = path
                    .file_stem()
                    .map_or(name.to_owned(), |s| s.to_string_lossy().into_owned());
                return Self::from_toml(&stem, &text);
            }
        }
        Err(format!(
            "unknown workload '{name}': use golang, nnbench, an operation name, or a TOML mix file"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_ins() {
        let g = Workload::resolve("golang", &[]).unwrap();
        assert_eq!(g.phases.len(), 26);
        let n = Workload::resolve("nnbench", &[]).unwrap();
        let names: Vec<_> = n.phases.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["create_write", "open", "rename", "unlink"]);
        assert_eq!(
            Workload::resolve("getattr", &[]).unwrap().phases[0].ops,
            vec![(Op::Getattr, 1)]
        );
        assert!(Workload::resolve("nope", &[])
            .unwrap_err()
            .contains("unknown workload 'nope'"));
    }

    #[test]
    fn toml_mixes() {
        let w = Workload::from_toml(
            "mix",
            "description = 'x'\n[[op]]\nname = 'getattr'\nweight = 3\n[[op]]\nname = 'create'\nweight = 1\n",
        )
        .unwrap();
        assert_eq!(w.phases[0].ops, vec![(Op::Getattr, 3), (Op::Create, 1)]);
        assert!(Workload::from_toml("m", "[[op]]\nname='x'\nweight=1")
            .unwrap_err()
            .contains("unknown operation"));
        assert!(Workload::from_toml("m", "[[op]]\nname='getattr'\nweight=0")
            .unwrap_err()
            .contains("at least 1"));
        assert!(Workload::from_toml("m", "op = []")
            .unwrap_err()
            .contains("no [[op]]"));
        assert!(Workload::from_toml("m", "[[op]]\nname='getattr'\nweight=1\nextra=2").is_err());
    }

    #[test]
    fn shipped_configs_parse() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/workloads");
        let mut seen = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                Workload::resolve(path.to_str().unwrap(), &[]).unwrap();
                seen += 1;
            }
        }
        assert!(seen >= 1, "no workloads in {}", dir.display());
    }
}

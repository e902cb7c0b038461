//! A results file of either kind, `ops` or `sweep`, read as one.

use super::header::{EngineInfo, HostInfo, RunHeader};
use super::ops::OpsResults;
use super::read::kind_of;
use super::sweep::{Floor, SweepResults};

/// Either kind of results file.
#[derive(Debug, Clone, PartialEq)]
pub enum AnyResults {
    /// `metabench ops`.
    Ops(OpsResults),
    /// `metabench sweep`.
    Sweep(SweepResults),
}

impl AnyResults {
    /// Reads a results file of either kind.
    pub fn from_json(s: &str) -> Result<Self, String> {
        match kind_of(s)?.as_deref() {
            Some("ops") => OpsResults::from_json(s).map(AnyResults::Ops),
            Some("sweep") => SweepResults::from_json(s).map(AnyResults::Sweep),
            Some(other) => Err(format!(
                "results file holds a '{other}' run; expected 'ops' or 'sweep'"
            )),
            None => Err("not a metabench results file: no 'kind'".into()),
        }
    }

    /// `ops` or `sweep`.
    pub fn kind(&self) -> &'static str {
        match self {
            AnyResults::Ops(_) => "ops",
            AnyResults::Sweep(_) => "sweep",
        }
    }

    /// Who wrote the file, when, on which engine and machine.
    pub fn header(&self) -> &RunHeader {
        match self {
            AnyResults::Ops(r) => &r.header,
            AnyResults::Sweep(r) => &r.header,
        }
    }

    /// The engine measured.
    pub fn engine(&self) -> &EngineInfo {
        &self.header().engine
    }

    /// The machine.
    pub fn host(&self) -> &HostInfo {
        &self.header().host
    }

    /// Start time, metabench version and commit.
    pub fn provenance(&self) -> (&str, &str, Option<&str>) {
        let h = self.header();
        (&h.started_at, &h.metabench_version, h.git_commit.as_deref())
    }

    /// The engine's null round trip measured before the run, if it was.
    pub fn floor(&self) -> Option<&Floor> {
        match self {
            AnyResults::Ops(r) => r.floor.as_ref(),
            AnyResults::Sweep(r) => r.floor.as_ref(),
        }
    }
}

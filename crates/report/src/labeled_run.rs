//! [`LabeledRun`]: a results file with the name a report shows it under, and what the
//! cross-engine tables and the plots both pick out of a list of them.

use crate::model::AnyResults;

/// A results file with the name it goes by in the report (its file stem by default).
#[derive(Debug, Clone)]
pub struct LabeledRun {
    /// Column and legend name (`redis-always`).
    pub label: String,
    /// The results.
    pub run: AnyResults,
}

impl LabeledRun {
    /// The runs among `runs` that `pick` keeps, with their labels, in order.
    fn picked<'a, T>(
        runs: &'a [LabeledRun],
        pick: impl Fn(&'a AnyResults) -> Option<&'a T>,
    ) -> Vec<(&'a str, &'a T)> {
        runs.iter()
            .filter_map(|r| Some((r.label.as_str(), pick(&r.run)?)))
            .collect()
    }

    /// The `ops` runs among `runs`, with their labels, in order.
    pub fn ops_of(runs: &[LabeledRun]) -> Vec<(&str, &crate::OpsResults)> {
        Self::picked(runs, |r| match r {
            AnyResults::Ops(o) => Some(o),
            _ => None,
        })
    }

    /// The sweeps among `runs`, with their labels, in order.
    pub fn sweeps_of(runs: &[LabeledRun]) -> Vec<(&str, &crate::SweepResults)> {
        Self::picked(runs, |r| match r {
            AnyResults::Sweep(s) => Some(s),
            _ => None,
        })
    }
}

/// The operations of `sweeps`, each once, in the order the runs first name them.
pub fn op_names_of(sweeps: &[(&str, &crate::SweepResults)]) -> Vec<String> {
    let mut ops: Vec<String> = Vec::new();
    for (_, s) in sweeps {
        for op in s.op_names() {
            if !ops.contains(&op) {
                ops.push(op);
            }
        }
    }
    ops
}

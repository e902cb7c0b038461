//! `metabench compare` and `metabench gate`: two results files side by side, with a
//! significance test on every timing, and a regression gate for CI.

use crate::error::{input, CliError};
use metabench_report::compare::{
    compare, gate, parse_percent, render, round_trips_not_gated, Comparison, GatePolicy,
    DEFAULT_ALPHA,
};
use metabench_report::AnyResults;
use std::path::{Path, PathBuf};

/// Exit code of `gate` when a row failed.
pub const EXIT_GATE_FAILED: i32 = 1;

/// Reads a results file of either kind as a one-line input error on failure.
pub fn read_results(path: &Path) -> Result<AnyResults, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| input(format!("cannot read {}: {e}", path.display())))?;
    AnyResults::from_json(&text).map_err(|e| input(format!("{}: {e}", path.display())))
}

/// Reads the baseline and the current results files and compares them at `alpha`.
fn read_and_compare(
    baseline: &Path,
    current: &Path,
    alpha: f64,
) -> Result<(AnyResults, AnyResults, Comparison), CliError> {
    let base = read_results(baseline)?;
    let cur = read_results(current)?;
    let c = compare(&base, &cur, alpha).map_err(input)?;
    Ok((base, cur, c))
}

fn parse_alpha(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(a) if a > 0.0 && a < 1.0 => Ok(a),
        _ => Err(format!("'{s}' is not a significance level between 0 and 1")),
    }
}

/// Arguments of `metabench compare`.
#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// The baseline results file (`ops --json` or `sweep --json`).
    #[arg(value_name = "BASELINE")]
    baseline: PathBuf,

    /// The results file to compare with it (same kind).
    #[arg(value_name = "CURRENT")]
    current: PathBuf,

    /// Significance level: a change with p below it is significant.
    #[arg(long, value_name = "P", default_value_t = DEFAULT_ALPHA, value_parser = parse_alpha)]
    alpha: f64,
}

/// Runs `metabench compare`.
pub fn run_compare(args: CompareArgs) -> Result<i32, CliError> {
    let (base, cur, c) = read_and_compare(&args.baseline, &args.current, args.alpha)?;
    out!(
        "baseline {} ({} {}), current {} ({} {})",
        args.baseline.display(),
        base.engine().kind,
        base.engine().version,
        args.current.display(),
        cur.engine().kind,
        cur.engine().version
    );
    out_raw!("{}", render(&c));
    Ok(0)
}

/// Arguments of `metabench gate`.
#[derive(Debug, clap::Args)]
pub struct GateArgs {
    /// The baseline results file.
    #[arg(long, value_name = "FILE")]
    baseline: PathBuf,

    /// The results file under test (same kind as the baseline).
    #[arg(long, value_name = "FILE")]
    current: PathBuf,

    /// Largest tolerated regression of throughput, mean or p99 latency, e.g. 10%; only
    /// changes that are also significant count. Round trips per operation are
    /// deterministic where no transaction was retried: any increase there fails, whatever
    /// this says.
    #[arg(long, value_name = "PERCENT", default_value = "10%", value_parser = parse_percent)]
    max_regression: f64,

    /// Gate on round trips per operation only, ignoring timings (for shared or noisy
    /// machines such as CI).
    #[arg(long)]
    round_trips_only: bool,

    /// Significance level of the timing tests.
    #[arg(long, value_name = "P", default_value_t = DEFAULT_ALPHA, value_parser = parse_alpha)]
    alpha: f64,
}

/// Runs `metabench gate`: 0 when it passes, 1 when a row failed.
pub fn run_gate(args: GateArgs) -> Result<i32, CliError> {
    let (_, _, c) = read_and_compare(&args.baseline, &args.current, args.alpha)?;
    let policy = GatePolicy {
        max_regression: (!args.round_trips_only).then_some(args.max_regression),
        alpha: args.alpha,
    };
    let failures = gate(&c, &policy);
    let what = match policy.max_regression {
        None => "round trips per operation".to_owned(),
        Some(m) => format!(
            "round trips per operation, and significant (p < {}) timing regressions above {:.1}%",
            args.alpha,
            m * 100.0
        ),
    };
    if !c.only_in_base.is_empty() {
        out!(
            "note: not in the current run, not gated: {}",
            c.only_in_base.join(", ")
        );
    }
    for n in round_trips_not_gated(&c) {
        out!("note: {n}");
    }
    for w in &c.warnings {
        out!("note: {w}");
    }
    for d in &c.setup_differences {
        out!("note: {d}");
    }
    if failures.is_empty() {
        out!(
            "gate passed: {} rows of {} checked against {} ({what})",
            c.rows.len(),
            args.current.display(),
            args.baseline.display()
        );
        return Ok(0);
    }
    out!(
        "gate FAILED: {} of {} rows of {} regressed against {} ({what}):",
        failures
            .iter()
            .map(|f| &f.row)
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        c.rows.len(),
        args.current.display(),
        args.baseline.display()
    );
    for f in &failures {
        out!("  {}: {}", f.row, f.reason);
    }
    Ok(EXIT_GATE_FAILED)
}

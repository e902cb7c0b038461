//! `metabench report`: several results files as one cross-engine report (table,
//! Markdown, CSV or HTML) and SVG plots of the sweeps.

use crate::args::write_file;
use crate::cmd_compare::read_results;
use crate::error::{input, CliError};
use metabench_report::cross::{render_html, render_report, Format, LabeledRun, Unreachable};
use metabench_report::plot::plots;
use std::path::PathBuf;

/// Arguments of `metabench report`.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// Results files (`ops --json`, `sweep --json`); each is named by its file stem, and
    /// "(×N)" is relative to the first.
    #[arg(value_name = "FILE", required = true)]
    files: Vec<PathBuf>,

    #[command(flatten)]
    output: ReportOutput,
}

/// Names each file by its stem, adding `#2`, `#3` to repeated names.
pub fn label_runs(files: &[PathBuf]) -> Result<Vec<LabeledRun>, CliError> {
    let mut runs: Vec<LabeledRun> = Vec::new();
    for f in files {
        let run = read_results(f)?;
        let stem = f
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| run.engine().kind.clone());
        let mut label = stem.clone();
        let mut n = 1;
        while runs.iter().any(|r| r.label == label) {
            n += 1;
            label = format!("{stem}#{n}");
        }
        runs.push(LabeledRun { label, run });
    }
    Ok(runs)
}

/// Where and how `report` and `matrix` write the report and its plots.
#[derive(Debug, clap::Args)]
pub struct ReportOutput {
    /// Output format: table, markdown, csv or html (html embeds the plots and the run
    /// context).
    #[arg(long, value_name = "FORMAT", default_value = "table")]
    format: Format,

    /// Also write the SVG plots (µs/op of ops runs, curves of sweeps) into this directory
    /// (created if needed).
    #[arg(long, value_name = "DIR")]
    plot: Option<PathBuf>,

    /// Write the report to this file instead of standard output.
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
}

impl ReportOutput {
    /// Refuses an output file or plot directory that cannot be written, before any work.
    pub fn check(&self) -> Result<(), CliError> {
        if let Some(p) = &self.output {
            crate::args::check_output_path(p)?;
        }
        if let Some(d) = &self.plot {
            if d.exists() && !d.is_dir() {
                return Err(input(format!(
                    "cannot write plots into {}: not a directory",
                    d.display()
                )));
            }
        }
        Ok(())
    }

    /// Writes the report of `runs` (and the engines that could not be measured).
    pub fn write(&self, runs: &[LabeledRun], unreachable: &[Unreachable]) -> Result<(), CliError> {
        let plots = plots(runs).map_err(|e| CliError::Io(format!("cannot plot: {e}")))?;
        if let Some(dir) = self.plot.as_deref() {
            std::fs::create_dir_all(dir)
                .map_err(|e| CliError::Io(format!("cannot create {}: {e}", dir.display())))?;
            for p in &plots {
                write_file(&dir.join(&p.file), &p.svg)?;
            }
            if plots.is_empty() {
                say!("nothing to plot");
            } else {
                say!("{} plots written to {}", plots.len(), dir.display());
            }
        }
        let text = match self.format {
            Format::Html => render_html(runs, unreachable, &plots),
            f => render_report(runs, unreachable, f),
        };
        match self.output.as_deref() {
            Some(path) => {
                write_file(path, &text)?;
                say!("report written to {}", path.display());
            }
            None => out_raw!("{text}"),
        }
        Ok(())
    }
}

/// Runs `metabench report`.
pub fn run(args: ReportArgs) -> Result<i32, CliError> {
    args.output.check()?;
    let runs = label_runs(&args.files)?;
    args.output.write(&runs, &[])?;
    Ok(0)
}

//! `metabench report`: several results files as one cross-engine report (table,
//! Markdown, CSV or HTML) and SVG plots of the sweeps. Parity runs get the docs' layout:
//! each engine's mdtest phases as multiples of the Redis-Always run, beside the docs'.

use crate::args::write_file;
use crate::error::{input, CliError};
use metabench_mount::cross_engine::{self, LabeledParity};
use metabench_mount::report::ParityReport;
use metabench_report::cross::{render_html, render_report, Format, Grid, LabeledRun, Unreachable};
use metabench_report::plot::plots;
use metabench_report::{kind_of, AnyResults};
use std::path::PathBuf;

/// Arguments of `metabench report`.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// Results files (`ops --json`, `sweep --json`, `parity --json`); each is named by its
    /// file stem. "(×N)" is relative to the first ops run, and for parity runs to the
    /// Redis-Always run (appendonly yes, appendfsync always) when there is one.
    #[arg(value_name = "FILE", required = true)]
    files: Vec<PathBuf>,

    #[command(flatten)]
    output: ReportOutput,
}

/// The results files of a report, each named by its file stem (`#2`, `#3` added to
/// repeated names).
#[derive(Debug, Default)]
pub struct LabeledFiles {
    /// The `ops` and `sweep` runs.
    pub runs: Vec<LabeledRun>,
    /// The `parity` runs.
    pub parities: Vec<LabeledParity>,
}

impl LabeledFiles {
    /// Reads and names `files`, in order; a file that is not a results file this
    /// metabench reads is a one-line input error.
    pub fn read(files: &[PathBuf]) -> Result<Self, CliError> {
        let mut out = Self::default();
        let mut labels: Vec<String> = Vec::new();
        for f in files {
            let text = std::fs::read_to_string(f)
                .map_err(|e| input(format!("cannot read {}: {e}", f.display())))?;
            let bad = |e: String| input(format!("{}: {e}", f.display()));
            let stem = f
                .file_stem()
                .map_or_else(|| "run".to_owned(), |s| s.to_string_lossy().into_owned());
            let mut label = stem.clone();
            let mut n = 1;
            while labels.contains(&label) {
                n += 1;
                label = format!("{stem}#{n}");
            }
            labels.push(label.clone());
            if kind_of(&text).map_err(bad)?.as_deref() == Some("parity") {
                let run = ParityReport::from_json(&text).map_err(bad)?;
                out.parities.push(LabeledParity { label, run });
            } else {
                let run = AnyResults::from_json(&text).map_err(bad)?;
                out.runs.push(LabeledRun { label, run });
            }
        }
        Ok(out)
    }
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

    /// Writes the report of `files` (and the engines that could not be measured).
    pub fn write(&self, files: &LabeledFiles, unreachable: &[Unreachable]) -> Result<(), CliError> {
        let runs = &files.runs;
        let parity: Vec<Grid> = cross_engine::grids(&files.parities);
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
            Format::Html => render_html(runs, &parity, unreachable, &plots),
            f => render_report(runs, &parity, unreachable, f),
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
    let files = LabeledFiles::read(&args.files)?;
    args.output.write(&files, &[])?;
    Ok(0)
}

//! What a sweep shows and writes: the progress line, each level's lines, the interval
//! logs, and the results files.

use super::args::SweepArgs;
use crate::args::write_file;
use crate::error::CliError;
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use indicatif::{ProgressBar, ProgressStyle};
use metabench_load::sweep::IntervalHistograms;
use metabench_load::{Live, SweepOutcome, Workload};
use metabench_report::model::peak_rss_bytes;
use metabench_report::table::{fidelity_text, fmt_us, sweep_csv, sweep_text, Detail};
use metabench_report::MpiRun;
use metabench_report::{Level, RunHeader, SweepPlan, SweepResults};
use std::io::IsTerminal;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

pub(super) fn write_interval_log(
    dir: &Path,
    level: &Level,
    hists: &IntervalHistograms,
) -> Result<(), CliError> {
    let path = dir.join(format!("c{}.hlog", level.clients));
    let mut buf = Vec::new();
    let mut ser = V2DeflateSerializer::new();
    {
        let mut log = IntervalLogWriterBuilder::new()
            .add_comment(&format!(
                "metabench sweep, {} clients; values in ns",
                level.clients
            ))
            .with_base_time(std::time::SystemTime::now())
            .begin_log_with(&mut buf, &mut ser)
            .map_err(|e| CliError::Io(format!("HDR log: {e}")))?;
        for (op, intervals) in hists {
            for (i, h) in intervals.iter().enumerate() {
                log.write_histogram(
                    h,
                    Duration::from_secs(i as u64),
                    Duration::from_secs(1),
                    Tag::new(op),
                )
                .map_err(|e| CliError::Io(format!("HDR log: {e:?}")))?;
            }
        }
    }
    std::fs::write(&path, buf)
        .map_err(|e| CliError::Io(format!("cannot write {}: {e}", path.display())))
}

/// Who ran a level: its clients, or with several workers per client its workers and the
/// clients they make up.
fn level_who(clients: u32, per_client: u32) -> String {
    if per_client > 1 {
        format!(
            "{clients:>6} workers ({} clients)",
            clients.div_ceil(per_client)
        )
    } else {
        format!("{clients:>6} clients")
    }
}

/// One progress line per operation of a finished level (`per_client`: workers per client);
/// in full (`-v`), one more on the level's background work.
pub(super) fn level_lines(level: &Level, per_client: u32, detail: Detail) -> Vec<String> {
    let who = level_who(level.clients, per_client);
    let mut bound = match (level.partial, level.client.client_bound) {
        (true, _) => "  (partial: the engine failed)",
        (false, true) => "  (client-bound)",
        (false, false) => "",
    }
    .to_owned();
    if let Some(steal) = level.client.notable_steal() {
        bound += &format!("  (host steal {:.0}%)", steal * 100.0);
    }
    let offered = level
        .offered_ops_per_s
        .map_or(String::new(), |r| format!(" at {r:.0}/s"));
    level
        .ops
        .iter()
        .map(|o| {
            let listed = o.entries_per_call.map_or(String::new(), |n| {
                format!("  ({:.0} entries/s, {n:.0} a call)", n * o.ops_per_s)
            });
            let service = o.service.as_ref().map_or(String::new(), |s| {
                format!(
                    "  (service p50 {} µs, p99 {} µs)",
                    fmt_us(s.p50_us),
                    fmt_us(s.p99_us)
                )
            });
            format!(
                "{who}{offered}  {:<14} {:>10.0} ops/s  p50 {:>8} µs  p99 {:>8} µs{listed}{service}{bound}",
                o.op,
                o.ops_per_s,
                fmt_us(o.latency.p50_us),
                fmt_us(o.latency.p99_us)
            )
        })
        .chain(
            level
                .background
                .as_ref()
                .filter(|_| detail == Detail::Full)
                .map(|b| {
                    format!(
                "{who}  background: {} passes, {} heartbeats, {:.0} round trips/s, {:.1} ms of client time{}",
                b.runs,
                b.heartbeats,
                b.round_trips_per_s(),
                b.busy_s * 1000.0,
                if b.errors > 0 {
                    format!(", {} failed", b.errors)
                } else {
                    String::new()
                }
            )
                }),
        )
        .collect()
}

/// Prints above the progress line; off a terminal the bar is not drawn and would
/// swallow the line, so it goes straight to stderr.
fn say(bar: &ProgressBar, line: String) {
    if std::io::stderr().is_terminal() {
        bar.println(line);
    } else {
        say!("{line}");
    }
}

/// The progress line of a sweep (rank 0's only): the level, phase and live rate.
pub(crate) struct Progress {
    /// The spinner; lines said while it runs go above it ([`say`]).
    pub(crate) bar: ProgressBar,
    ticker: Option<tokio::task::JoinHandle<()>>,
}

impl Progress {
    /// Starts the line, redrawn every 250 ms from `live`, when `shown`.
    pub(crate) fn start(
        shown: bool,
        live: &Arc<Live>,
        workload: &Workload,
        per_client: u32,
    ) -> Self {
        let bar = ProgressBar::new_spinner();
        bar.set_style(ProgressStyle::with_template("{spinner} {msg}").expect("static template"));
        let ticker = shown.then(|| {
            let (bar, live, phases) = (bar.clone(), live.clone(), workload.phases.clone());
            tokio::spawn(async move {
                let mut last = (0u64, std::time::Instant::now());
                loop {
                    tokio::time::sleep(Duration::from_millis(250)).await;
                    let done = live.completed.load(Ordering::Relaxed);
                    let now = std::time::Instant::now();
                    let rate = done.saturating_sub(last.0) as f64 / (now - last.1).as_secs_f64();
                    last = (done, now);
                    let phase = phases
                        .get(live.phase.load(Ordering::Relaxed) as usize)
                        .map_or("", |p| p.name.as_str());
                    let state = if live.measuring.load(Ordering::Relaxed) {
                        format!("{rate:.0} ops/s")
                    } else {
                        "setting up / warming up".to_owned()
                    };
                    bar.set_message(format!(
                        "{} · {phase} · {state}",
                        level_who(live.clients.load(Ordering::Relaxed), per_client).trim_start()
                    ));
                    bar.tick();
                }
            })
        });
        Self { bar, ticker }
    }

    /// Stops and clears the line.
    pub(crate) fn finish(self) {
        if let Some(ticker) = self.ticker {
            ticker.abort();
        }
        self.bar.finish_and_clear();
    }
}

/// Says a finished level's lines at `detail` and writes its interval log (`--hdr-dir`).
pub(crate) fn show_level(
    args: &SweepArgs,
    detail: Detail,
    bar: &ProgressBar,
    level: &Level,
    hists: &IntervalHistograms,
) -> Result<(), CliError> {
    for line in level_lines(level, args.threads_per_client, detail) {
        say(bar, line);
    }
    match &args.hdr_dir {
        Some(dir) => write_interval_log(dir, level, hists),
        None => Ok(()),
    }
}

/// The results file of a finished sweep (rank 0's), before its analysis.
pub(crate) fn results(
    header: RunHeader,
    plan: SweepPlan,
    outcome: SweepOutcome,
    interrupted: bool,
    mpi: Option<MpiRun>,
) -> SweepResults {
    SweepResults {
        header,
        plan,
        floor: outcome.floor,
        levels: outcome.levels,
        saturation: Default::default(),
        stopped_early: outcome.stopped_early,
        peak_rss_bytes: peak_rss_bytes(),
        interrupted,
        failure: outcome.failure.map(Box::new),
        mpi: mpi.map(Box::new),
    }
}

/// Analyses a finished sweep, prints its tables at `detail`, why it stopped early, its
/// fidelity notes (in full, or their count) and (in full) metabench's peak memory, and writes its results files (`--json`, `--csv`); the
/// first file that could not be written.
pub(crate) fn publish(
    run: &mut SweepResults,
    args: &SweepArgs,
    detail: Detail,
) -> Option<CliError> {
    run.analyse();
    out!("{}", sweep_text(run, detail));
    if let Some(why) = &run.stopped_early {
        out!("stopped early: {why}");
    }
    for line in fidelity_text(&run.header.engine, detail) {
        out!("{line}");
    }
    if let Some(rss) = run.peak_rss_bytes.filter(|_| detail == Detail::Full) {
        say!(
            "metabench peak memory: {}",
            metabench_report::model::mib(rss)
        );
    }
    let mut write_error = None;
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&*run).expect("results serialize") + "\n";
        match write_file(path, &text) {
            Ok(()) => say!("results written to {}", path.display()),
            Err(e) => write_error = Some(e),
        }
    }
    if let Some(path) = &args.csv {
        if let Err(e) = write_file(path, &sweep_csv(run)) {
            write_error.get_or_insert(e);
        }
    }
    write_error
}

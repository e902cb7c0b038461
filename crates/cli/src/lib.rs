//! The `metabench` command line: parses arguments, prepares the target volume, runs the
//! chosen benchmark and prints its report. Errors are one line on stderr and a non-zero
//! exit code; Ctrl-C stops the run, cleans up and exits with 130.

/// `println!` that ignores a closed stdout (`metabench … | head`): the run still cleans
/// up and writes its files.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

/// `print!` that ignores a closed stdout, as `out!` does.
macro_rules! out_raw {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout(), $($arg)*);
    }};
}

/// `eprintln!` that ignores a closed stderr (`metabench … 2>&1 | head`), so a progress line
/// never stops a run before it cleans up.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

mod args;
mod child;
mod cmd_compare;
mod cmd_fill;
mod cmd_format;
mod cmd_info;
mod cmd_matrix;
mod cmd_ops;
mod cmd_parity;
mod cmd_report;
mod cmd_scale;
mod cmd_sweep;
mod cmd_tree;
mod error;
mod lifecycle;
mod open_files;
mod threads;
mod tree;
mod volume;

use clap::{Parser, Subcommand};
pub use error::{CliError, EXIT_ENGINE_FAILED, EXIT_INTERRUPTED};
use metabench_report::table::Detail;

/// The command line's clap definition (its `Command` tree), for tests that check the
/// commands and flags the README and the guide name against it.
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

/// Benchmark the metadata engines of JuiceFS with JuiceFS's own schema and transactions.
///
/// metabench talks to Redis, MySQL/MariaDB, PostgreSQL or SQLite directly, sending the
/// commands and statements a JuiceFS client sends for each metadata operation. It works
/// only inside its own namespace and removes what it created.
#[derive(Debug, Parser)]
#[command(
    name = "metabench",
    version,
    about,
    long_about,
    after_help = "Exit codes: 0 done; 1 error; 2 bad input (nothing written); 3 the engine failed mid-run (the levels measured so far are in every requested output); 130 Ctrl-C."
)]
struct Cli {
    /// Print every note (why each level was flagged, the USL fits, the disrupted seconds,
    /// the documented differences from the modelled client); -vv also logs at info,
    /// -vvv at debug (RUST_LOG overrides).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Sweep concurrency levels until the engine saturates: throughput, latency
    /// percentiles and the knee per operation.
    Sweep(cmd_sweep::SweepArgs),
    /// Time every operation of JuiceFS's metadata benchmark on one client.
    Ops(cmd_ops::OpsArgs),
    /// Write a new, empty JuiceFS volume that the real `juicefs` client accepts.
    Format(cmd_format::FormatArgs),
    /// Fill a volume with a tree of N files in bulk (as `juicefs load` writes a dump): a
    /// new volume on an empty database, or /.metabench/fill-<run> with --existing.
    Fill(cmd_fill::FillArgs),
    /// The scale curve: grow one volume through several sizes (--files 0,100k,1M) with
    /// bulk fills, sweep at each over the whole tree, and give latency, throughput and the
    /// engine's bytes per file against the size (scale.json, plots, a results file per size).
    Scale(cmd_scale::ScaleArgs),
    /// Show what a meta URL holds, the engine's version and settings, and where it runs.
    Info(cmd_info::InfoArgs),
    /// Compare two results files: per operation (and level), the change in throughput,
    /// mean and p99, each marked significant or within noise.
    Compare(cmd_compare::CompareArgs),
    /// Fail (exit 1) when the current results regressed against a baseline: any increase
    /// in round trips per operation, or a significant timing regression beyond a threshold.
    Gate(cmd_compare::GateArgs),
    /// Cross-engine report of results files: the JuiceFS docs' comparison table, sweep
    /// tables per operation, SVG plots; as a table, Markdown, CSV or HTML.
    Report(cmd_report::ReportArgs),
    /// Run the same ops or sweep plan on every engine of a set of configs (e.g.
    /// configs/engines/*.toml) and print their cross-engine report; unreachable engines
    /// are listed, and the exit code is 0 when at least one engine ran.
    Matrix(cmd_matrix::MatrixArgs),
    /// Mount the real JuiceFS client on the same engine, run mdtest-shaped work, fio and
    /// `juicefs bench` through it, run the same mdtest phases natively, and compare.
    Parity(cmd_parity::ParityArgs),
    /// Run parity's mdtest-shaped trees (mdtest's phases and rates) on HDFS or S3
    /// (--meta hdfs://… or s3://…), beside JuiceFS.
    Tree(cmd_tree::TreeArgs),
    /// Print a shell completion script: `metabench completions bash > /etc/bash_completion.d/metabench`,
    /// `metabench completions zsh > "${fpath[1]}/_metabench"`,
    /// `metabench completions fish > ~/.config/fish/completions/metabench.fish`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

/// Runs the command line and returns the process exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion)
                || e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            {
                let _ = e.print();
                return if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                    2
                } else {
                    0
                };
            }
            say!(
                "metabench: error: {} (see --help)",
                error::clap_error_line(&e)
            );
            return 2;
        }
    };
    if let Command::Completions { shell } = cli.command {
        use clap::CommandFactory as _;
        let mut cmd = Cli::command();
        let mut out = Vec::new();
        clap_complete::generate(shell, &mut cmd, "metabench", &mut out);
        out_raw!("{}", String::from_utf8_lossy(&out));
        return 0;
    }
    if metabench_load::team::launched_by_mpi() && !matches!(cli.command, Command::Sweep(_)) {
        say!("metabench: error: only `metabench sweep` runs as the ranks of an MPI job (see README, 'Many client hosts')");
        return 2;
    }
    init_logging(cli.verbose);
    // Thousands of clients hold a connection each: the soft open-file limit goes up to
    // the hard one before anything opens (a sweep checks what it needs in its plan).
    open_files::raise_open_files();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            say!("metabench: error: cannot start the async runtime: {e}");
            return 1;
        }
    };
    // A plain run prints its tables and a line of flags; -v (--verbose) every note.
    let detail = match cli.verbose {
        0 => Detail::Terse,
        _ => Detail::Full,
    };
    let outcome = runtime.block_on(async {
        match cli.command {
            Command::Sweep(args) => cmd_sweep::run(args, detail).await,
            Command::Ops(args) => cmd_ops::run(args, detail).await,
            Command::Format(args) => cmd_format::run(args).await,
            Command::Info(args) => cmd_info::run(args).await,
            Command::Fill(args) => cmd_fill::run(args).await,
            Command::Scale(args) => cmd_scale::run(args).await,
            Command::Parity(args) => cmd_parity::run(args).await,
            Command::Tree(args) => cmd_tree::run(args).await,
            Command::Compare(args) => cmd_compare::run_compare(args),
            Command::Gate(args) => cmd_compare::run_gate(args),
            Command::Report(args) => cmd_report::run(args),
            Command::Matrix(args) => cmd_matrix::run(args).await,
            Command::Completions { .. } => unreachable!("answered before the runtime starts"),
        }
    });
    match outcome {
        Ok(code) => code,
        Err(e) => {
            say!("metabench: error: {}", e.one_line());
            e.exit_code()
        }
    }
}

fn init_logging(verbose: u8) {
    // tikv-client warns about every PD endpoint it cannot reach; the run's own error
    // already says so in one line.
    // -v is for the full report (every note); logging takes -vv and -vvv.
    let default = match verbose {
        0 | 1 => "warn,tikv_client=error",
        2 => "info,tikv_client=warn",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // A log line that cannot be written is dropped. By default tracing-subscriber reports
    // the failed write with `eprintln!`, which panics on a closed stderr (`metabench … 2>&1
    // | head`): the run would die before its cleanup.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .log_internal_errors(false)
        .try_init();
}

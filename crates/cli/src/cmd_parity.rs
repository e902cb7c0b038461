//! `metabench parity`: the real JuiceFS client mounted on the same engine runs mdtest-
//! shaped work, fio and `juicefs bench`; metabench runs the same mdtest phases natively;
//! the report puts both side by side.

use crate::args::{
    check_output_path, parse_count, write_file, BackgroundPlacement, ClientSettings, ProfileArgs,
};
use crate::error::EXIT_INTERRUPTED;
use crate::error::{input, CliError};
use crate::lifecycle::{run_command, Command, Ended, Run, Workspace};
use crate::volume::VolumeArgs;
use metabench_engine::namespace::Namespace;
use metabench_engine::{ClientProfile, Ctx};
use metabench_load::{Exec, StopFlag};
use metabench_mount::go_mdtest::{self, GoMdtestOptions};
use metabench_mount::juicefs::{find_juicefs, is_mounted, Mount, MountOptions};
use metabench_mount::native::NativeFs;
use metabench_mount::posix::PosixFs;
use metabench_mount::report::{ParityReport, TreeRun, PARITY_SCHEMA_VERSION};
use metabench_mount::{bench, docs_figures, fio, mdtest, objbench, MountError};
use metabench_pathfs::tree::{run_tree, PhaseResult, TreeSpec};
use metabench_report::{RunFailure, RunHeader};
use std::path::{Path, PathBuf};

/// Sizes of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Scale {
    /// Tiny trees and a few MiB of fio: seconds.
    Small,
    /// The JuiceFS docs' sizes.
    Docs,
}

/// Suites of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Suite {
    /// mdtest-shaped trees, natively and through the mount.
    Mdtest,
    /// fio jobs through the mount.
    Fio,
    /// `juicefs bench` through the mount.
    Bench,
    /// `juicefs objbench` on the volume's object store (its storage type and bucket, with
    /// `ACCESS_KEY` / `SECRET_KEY` from the environment as juicefs reads them). Not in the
    /// default set.
    Objbench,
}

/// Arguments of `metabench parity`.
#[derive(Debug, clap::Args)]
pub struct ParityArgs {
    #[command(flatten)]
    volume: VolumeArgs,

    /// The client both sides model (the mount gets the same --skip-dir-mtime and
    /// --skip-dir-nlink).
    #[command(flatten)]
    client: ProfileArgs,

    /// Object storage of a freshly formatted volume (juicefs format --storage).
    #[arg(long, default_value = "file", value_name = "TYPE")]
    storage: String,

    /// Bucket of a freshly formatted volume (default: a private temporary directory,
    /// removed afterwards).
    #[arg(long, value_name = "DIR")]
    bucket: Option<String>,

    /// Where to mount (an empty directory or a missing one, created and removed);
    /// default: a private temporary directory.
    #[arg(long, value_name = "DIR")]
    mountpoint: Option<PathBuf>,

    /// Parallel tasks: mdtest ranks, native sessions, and (unless --io-tasks) fio numjobs
    /// and juicefs bench -p and objbench -p.
    #[arg(long, default_value = "4", value_name = "N", value_parser = parse_count)]
    tasks: u64,

    /// Parallel tasks of the data suites (fio numjobs, juicefs bench -p, objbench -p);
    /// default: --tasks. The JuiceFS docs run mdtest with 12 tasks and fio and bench with
    /// 4: `--tasks 12 --io-tasks 4`.
    #[arg(long, value_name = "N", value_parser = parse_count)]
    io_tasks: Option<u64>,

    /// small: a run of seconds; docs: the JuiceFS docs' sizes.
    #[arg(long, value_enum, default_value = "small")]
    scale: Scale,

    /// Suites to run (default: mdtest, fio and bench; objbench on request).
    #[arg(long, value_enum, value_delimiter = ',', value_name = "SUITE,...")]
    suites: Vec<Suite>,

    /// Write the report as JSON to this file.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

fn mount_err(e: MountError) -> CliError {
    match e {
        MountError::Meta(m) => CliError::Meta(m),
        MountError::NoJuicefs => input(e.to_string()),
        other => CliError::Io(other.to_string()),
    }
}

/// The trees of a run at `scale`, each with its name.
pub(crate) fn specs(scale: Scale, tasks: u32) -> Vec<(&'static str, TreeSpec)> {
    match scale {
        Scale::Docs => vec![
            ("metadata", TreeSpec::docs_metadata(tasks)),
            ("small-files", TreeSpec::docs_small_files(tasks)),
        ],
        Scale::Small => vec![
            (
                "metadata",
                TreeSpec {
                    items: 10,
                    ..TreeSpec::docs_metadata(tasks)
                },
            ),
            (
                "small-files",
                TreeSpec {
                    items: 20,
                    write_bytes: 4096,
                    ..TreeSpec::docs_small_files(tasks)
                },
            ),
        ],
    }
}

/// Says each finished phase of tree `name` on `side`, one line each.
pub(crate) fn say_phase(side: &'static str, name: &str) -> impl FnMut(&PhaseResult) {
    let name = name.to_owned();
    move |r: &PhaseResult| {
        say!(
            "  {side:<10} {name:<18} {:<20} {:>7} items {:>10.0} ops/s",
            r.phase.label(),
            r.items,
            r.ops_per_s
        )
    }
}

fn juicefs_version(bin: &Path) -> String {
    std::process::Command::new(bin)
        .arg("version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

/// Runs `metabench parity` through the one run lifecycle ([`run_command`]).
pub async fn run(args: ParityArgs) -> Result<i32, CliError> {
    run_command(Parity {
        args,
        checked: None,
        report: None,
        mount: None,
        unmounted: Ok(()),
    })
    .await
}

/// What `parity` checked before anything is written.
struct Checked {
    tasks: u32,
    io_tasks: u32,
    suites: Vec<Suite>,
    juicefs: PathBuf,
    fio_bin: Option<PathBuf>,
    /// The work directory (the local bucket, the mount point), removed at the end.
    work: Option<tempfile::TempDir>,
    bucket: String,
}

/// `metabench parity` as the lifecycle drives it.
struct Parity {
    args: ParityArgs,
    checked: Option<Checked>,
    /// The report, filled as the suites run.
    report: Option<ParityReport>,
    /// The real client's mount, while it is mounted.
    mount: Option<Mount>,
    /// How the unmount went.
    unmounted: Result<(), CliError>,
}

impl Command for Parity {
    type Space = Run;
    type Outcome = ();
    const NAME: &'static str = "parity";
    const ON_CTRL_C: &'static str = "unmounting and cleaning up";

    async fn prepare(&mut self, _stop: &StopFlag) -> Result<(), Ended> {
        self.checked = Some(check(&self.args).map_err(Err)?);
        Ok(())
    }

    fn threads(&self) -> Option<(&Exec, &str)> {
        None
    }

    async fn open(&mut self, run_id: &str, _stop: &StopFlag) -> Result<Run, Ended> {
        let args = &self.args;
        let bucket = &self.checked.as_ref().expect("checked").bucket;
        Run::start(
            &args.volume,
            ClientSettings {
                // The native side flushes between phases, not in them.
                background: BackgroundPlacement::BetweenPhases,
                ..args.client.settings(ClientProfile::Mount)
            },
            Some((&args.storage, bucket)),
            run_id,
        )
        .await
        .map_err(Err)
    }

    fn what(&self, _run: &Run) -> String {
        format!(", {} tasks", self.checked.as_ref().expect("checked").tasks)
    }

    async fn work(
        &mut self,
        run: &mut Run,
        header: &RunHeader,
        stop: &StopFlag,
    ) -> Result<(), CliError> {
        let args = &self.args;
        let Checked {
            tasks,
            io_tasks,
            suites,
            juicefs,
            fio_bin,
            work,
            ..
        } = self.checked.as_ref().expect("checked");
        let (tasks, io_tasks) = (*tasks, *io_tasks);
        let work = work
            .as_ref()
            .expect("the work directory lives until the cleanup");
        let (run_id, client) = (run.run_id.clone(), run.client.clone());
        let mut report = ParityReport {
            header: RunHeader {
                schema_version: PARITY_SCHEMA_VERSION,
                ..header.clone()
            },
            juicefs_version: juicefs_version(juicefs),
            tasks,
            io_tasks,
            scale: format!("{:?}", args.scale).to_lowercase(),
            trees: vec![],
            fio: vec![],
            bench: None,
            objbench: None,
            docs_engine: None,
            docs_source: None,
            notes: vec![],
            interrupted: false,
        };
        // The JuiceFS docs' published column for this engine, when they ran it.
        let docs_column = docs_figures::column_of(&report.header.engine);
        if let Some(col) = docs_column {
            report.docs_engine = Some(docs_figures::ENGINES[col].to_owned());
            report.docs_source = Some(docs_figures::SOURCE.to_owned());
        }
        let mountpoint = args
            .mountpoint
            .clone()
            .unwrap_or_else(|| work.path().join("mnt"));
        let mut mount: Option<Mount> = None;
        let mut namespace = None;
        let target = &run.volume;
        let outcome = async {
            let opts = client.session.clone();
            let mut meta = target.session(&opts).await?;
            let ns = Namespace::create(meta.as_mut(), &run_id).await?;
            namespace = Some(ns.clone());
            let specs = if suites.contains(&Suite::Mdtest) {
                specs(args.scale, tasks)
            } else {
                vec![]
            };

            // Each tree as the docs give it, and, where `juicefs mdtest` cannot run that shape
            // (`-u`, directories), the same size in the shape it runs: one shared tree, files
            // only. Only those trees get the Go client's column.
            let trees: Vec<(String, TreeSpec)> = specs
                .iter()
                .flat_map(|(name, spec)| {
                    let mut t = vec![(name.to_string(), spec.clone())];
                    if !go_mdtest::runs_shape(spec) {
                        t.push((format!("{name}-shared"), spec.shared_files_only()));
                    }
                    t
                })
                .collect();

            // Natively first, on an idle engine: the tasks as clients of their own, then as
            // threads of one client (`--threads-per-client`), the shape of the Go client and
            // of the mount.
            let mut native = Vec::new();
            for (name, spec) in &trees {
                let mut runs = Vec::new();
                for (shape, threads) in [("native", false), ("native×thr", true)] {
                    let (base, _) = meta
                        .mkdir(
                            &Ctx::root(),
                            ns.dir,
                            format!("{shape}-{name}").replace('×', "-").as_bytes(),
                            0o755,
                            0,
                        )
                        .await?;
                    let mut clients = Vec::new();
                    // With `threads`, the first session's client, which the others join.
                    let mut shared = None;
                    for _ in 0..tasks {
                        let session = match &shared {
                            Some(c) => target.engine.worker(&opts, c).await?,
                            None => {
                                let s = target.session(&opts).await?;
                                if threads {
                                    shared = Some(s.client());
                                }
                                s
                            }
                        };
                        clients.push(NativeFs::new(session));
                    }
                    let label: &'static str = if threads { "native×thr" } else { "native" };
                    let r = run_tree(clients, base, spec, stop, say_phase(label, name))
                        .await
                        .map_err(mount_err)?;
                    runs.push(r);
                }
                native.push(runs);
            }
            meta.flush().await?;
            drop(meta);

            // Then through the real client.
            let mopts = MountOptions {
                juicefs: juicefs.clone(),
                meta_url: target.meta_url.clone(),
                mountpoint: mountpoint.clone(),
                work_dir: work.path().to_path_buf(),
                skip_dir_mtime: client.session.skip_dir_mtime,
                skip_dir_nlink: client.session.skip_dir_nlink,
            };
            let m = tokio::task::spawn_blocking(move || Mount::start(&mopts))
                .await
                .map_err(|e| CliError::Io(e.to_string()))?
                .map_err(mount_err)?;
            say!("mounted at {}", m.path().display());
            let root = m.path().join(".metabench").join(&run_id);
            mount = Some(m);
            if stop.is_stopped() {
                return Err(mount_err(MountError::Interrupted));
            }
            let mdtest_bin = mdtest::find_mdtest();
            for ((name, spec), native) in trees.iter().zip(&native) {
                let base = root.join(format!("mount-{name}"));
                std::fs::create_dir(&base)
                    .map_err(|e| CliError::Io(format!("cannot create {}: {e}", base.display())))?;
                let clients = (0..tasks).map(|_| PosixFs).collect();
                let through = run_tree(clients, base.clone(), spec, stop, say_phase("mount", name))
                    .await
                    .map_err(mount_err)?;
                let mut run = TreeRun::pair(name, spec, &native[0], &through)
                    .with_native_threads(&native[1]);
                if let Some(col) = docs_column {
                    run = run.with_docs(col);
                }
                run = if go_mdtest::runs_shape(spec) {
                    let go = GoMdtestOptions {
                        juicefs: juicefs.clone(),
                        meta_url: target.meta_url.clone(),
                        path: format!("/.metabench/{run_id}/go-{name}"),
                        skip_dir_mtime: client.session.skip_dir_mtime,
                        skip_dir_nlink: client.session.skip_dir_nlink,
                        cache_dir: work.path().join("go-cache"),
                    };
                    match go_mdtest::run_go_mdtest(&go, spec, stop).await {
                        Ok(g) => {
                            for (phase, items, rate) in &g.phases {
                                say!(
                                    "  {:<10} {name:<18} {:<20} {items:>7} items {rate:>10.0} ops/s",
                                    "go",
                                    phase.label()
                                );
                            }
                            run.with_go(&g)
                        }
                        Err(MountError::Interrupted) => {
                            return Err(mount_err(MountError::Interrupted))
                        }
                        Err(e) => run.without_go(format!("juicefs mdtest failed: {e}")),
                    }
                } else {
                    run.without_go(format!(
                        "juicefs mdtest runs one shared tree of files only, not {}: see \
                         {name}-shared",
                        spec.mdtest_args().join(" ")
                    ))
                };
                if let Some(bin) = &mdtest_bin {
                    let dir = root.join(format!("mdtest-{name}"));
                    match mdtest::run_mdtest(bin, &dir, spec, stop).await {
                        Ok(rows) => {
                            run.mdtest_summary = Some(rows);
                            run.mount_driver = "metabench+mdtest".into();
                        }
                        Err(MountError::Interrupted) => {
                            return Err(mount_err(MountError::Interrupted))
                        }
                        Err(e) => report.notes.push(format!("mdtest {name}: {e}")),
                    }
                }
                report.trees.push(run);
            }
            if !specs.is_empty() && mdtest_bin.is_none() {
                report.notes.push(
                    "no mdtest binary on PATH: the through-mount figures are metabench's mdtest-equivalent driver (same phases, tree and rate definitions)".into(),
                );
            }
            if let Some(fio_bin) = &fio_bin {
                let dir = root.join("fio");
                std::fs::create_dir(&dir)
                    .map_err(|e| CliError::Io(format!("cannot create {}: {e}", dir.display())))?;
                for job in fio::docs_jobs(args.scale == Scale::Docs, io_tasks) {
                    let r = fio::run_fio(fio_bin, &dir, &job, stop)
                        .await
                        .map_err(mount_err)?;
                    say!(
                        "  fio    {:<11} {:>10.1} MiB/s",
                        r.name,
                        r.bw_bytes_per_s / (1 << 20) as f64
                    );
                    report.fio.push(r);
                }
                report.notes.push(
                    "fio reads follow the writes without dropping caches: they may be served from the client's cache".into(),
                );
            }
            if suites.contains(&Suite::Bench) {
                let dir = root.join("bench");
                std::fs::create_dir(&dir)
                    .map_err(|e| CliError::Io(format!("cannot create {}: {e}", dir.display())))?;
                let b = bench::run_bench(juicefs, &dir, io_tasks, args.scale == Scale::Docs, stop)
                    .await
                    .map_err(mount_err)?;
                say!("  juicefs bench: {} rows", b.rows.len());
                report.bench = Some(b);
            }
            if suites.contains(&Suite::Objbench) {
                let o = objbench::run_objbench(
                    juicefs,
                    &target.format.storage,
                    &target.format.bucket,
                    io_tasks,
                    args.scale == Scale::Docs,
                    stop,
                )
                .await
                .map_err(mount_err)?;
                say!("  juicefs objbench: {} rows", o.perf.len());
                report.objbench = Some(o);
            }
            // Remove through the client, so it frees the data in the bucket.
            let r = root.clone();
            let _ = tokio::task::spawn_blocking(move || std::fs::remove_dir_all(&r)).await;
            Ok::<_, CliError>(())
        }
        .await;
        run.namespace = namespace;
        self.mount = mount;
        self.report = Some(report);
        outcome
    }

    fn failure(_outcome: &mut ()) -> Option<&mut RunFailure> {
        None
    }

    async fn clean_up(
        &mut self,
        run: Run,
        engine_failed: bool,
        _stop: &StopFlag,
    ) -> Result<(), String> {
        // Always: unmount, then remove the namespace (and the volume if formatted here),
        // then the work directory.
        self.unmounted = match self.mount.take() {
            Some(mut m) => tokio::task::spawn_blocking(move || m.unmount())
                .await
                .map_err(|e| CliError::Io(e.to_string()))
                .and_then(|r| r.map_err(mount_err)),
            None => Ok(()),
        };
        let cleanup = run.clean_up(engine_failed).await;
        if let Some(work) = self.checked.as_mut().and_then(|c| c.work.take()) {
            remove_work_dir(work);
        }
        cleanup
    }

    async fn failed(&mut self, error: CliError, stop: &StopFlag) -> Ended {
        if stop.is_stopped() {
            return Ok(self.interrupted(None));
        }
        let unmounted = std::mem::replace(&mut self.unmounted, Ok(()));
        if let Err(e) = unmounted {
            say!("metabench: error: {}", e.one_line());
        }
        Err(error)
    }

    async fn publish(
        &mut self,
        _outcome: (),
        _header: RunHeader,
        left_behind: Option<CliError>,
        stop: &StopFlag,
    ) -> Ended {
        if stop.is_stopped() {
            return Ok(self.interrupted(left_behind));
        }
        std::mem::replace(&mut self.unmounted, Ok(()))?;
        let mut report = self.report.take().expect("the work made the report");
        if !report.trees.is_empty() {
            report.notes.push(
                "native: the same calls issued by metabench on engine sessions (no FUSE, no Go client, no object storage); ratio = native / mount".into(),
            );
        }
        out!("{}", report.table());
        // The client both sides modelled, and where metabench's native side differs from it.
        for line in report.header.engine.fidelity_lines() {
            out!("{line}");
        }
        if let Some(path) = &self.args.json {
            write_file(
                path,
                &(serde_json::to_string_pretty(&report).expect("report serializes") + "\n"),
            )?;
            say!("report written to {}", path.display());
        }
        match left_behind {
            Some(e) => Err(e),
            None => Ok(0),
        }
    }
}

impl Parity {
    /// Ends a run the user stopped: says what the unmount and the cleanup could not do,
    /// and that it was interrupted.
    fn interrupted(&mut self, left_behind: Option<CliError>) -> i32 {
        let unmounted = std::mem::replace(&mut self.unmounted, Ok(()));
        if let Err(e) = unmounted.and(left_behind.map_or(Ok(()), Err)) {
            say!("metabench: error: {}", e.one_line());
        }
        say!("metabench: interrupted");
        EXIT_INTERRUPTED
    }
}

/// Checks `parity`'s arguments and finds its programs before anything is written, and
/// makes its work directory.
fn check(args: &ParityArgs) -> Result<Checked, CliError> {
    if let Some(p) = &args.json {
        check_output_path(p)?;
    }
    let tasks = u32::try_from(args.tasks).map_err(|_| input("--tasks is too large"))?;
    let io_tasks = match args.io_tasks {
        Some(n) => u32::try_from(n).map_err(|_| input("--io-tasks is too large"))?,
        None => tasks,
    };
    let suites = if args.suites.is_empty() {
        vec![Suite::Mdtest, Suite::Fio, Suite::Bench]
    } else {
        args.suites.clone()
    };
    let juicefs = find_juicefs().map_err(mount_err)?;
    let fio_bin = if suites.contains(&Suite::Fio) {
        Some(fio::find_fio().ok_or_else(|| {
            input("fio was not found on PATH: install it (Debian: apt-get install fio) or leave out --suites fio")
        })?)
    } else {
        None
    };
    if let Some(mp) = &args.mountpoint {
        if is_mounted(mp) {
            return Err(input(format!("{} is already a mount point", mp.display())));
        }
        if mp.exists() && std::fs::read_dir(mp).map_or(true, |mut d| d.next().is_some()) {
            return Err(input(format!(
                "--mountpoint {} is not an empty directory",
                mp.display()
            )));
        }
    }
    let work = tempfile::Builder::new()
        .prefix("metabench-parity-")
        .tempdir()
        .map_err(|e| CliError::Io(format!("cannot create a temporary directory: {e}")))?;
    let bucket = args
        .bucket
        .clone()
        .unwrap_or_else(|| format!("{}/", work.path().join("bucket").display()));
    Ok(Checked {
        tasks,
        io_tasks,
        suites,
        juicefs,
        fio_bin,
        work: Some(work),
        bucket,
    })
}

/// Removes parity's work directory (the local bucket, the mount point). A juicefs daemon
/// that is still exiting may write into the bucket while it is removed (a late upload or
/// deletion), which fails the removal with a non-empty directory: try again for up to
/// 10 s, then say what was left.
fn remove_work_dir(work: tempfile::TempDir) {
    let path = work.keep();
    let t0 = std::time::Instant::now();
    loop {
        match std::fs::remove_dir_all(&path) {
            Ok(()) => return,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(e) if t0.elapsed() >= std::time::Duration::from_secs(10) => {
                say!(
                    "metabench: could not remove the work directory {}: {e}",
                    path.display()
                );
                return;
            }
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(100)),
        }
    }
}

//! `metabench scale`: the scale curve. One volume grows through several sizes (`--files
//! 0,100k,1M`): at each, a bulk fill adds the files the size needs (as `metabench fill`
//! writes them), then the same sweep measures there, its reads drawn from the whole tree
//! (`--tree`, `--keys`), its writes in its own directory. Each size's sweep is an ordinary
//! results file, which `report` and `compare` read (its header records what the engine
//! held); the curve across them goes to `scale.json`, a table and SVG plots.
//!
//! A database holding nothing gets a new volume, filled under `/scale-<run-id>`; an
//! existing volume (`--existing`) gets the tree under `/.metabench/scale-<run-id>`, as
//! `fill` does. The tree stays afterwards, as a fill's does: that is the point.

use crate::args::{parse_amount, MetaArg};
use crate::child::{run_metabench, ChildEnd};
use crate::cmd_fill::{consistent_or, destination, fill_with_progress, out_of_room, summary};
use crate::error::{clap_error_line, input, CliError, EXIT_INTERRUPTED};
use metabench_engine::fill::{FillEnd, Shape};
use metabench_engine::{open, Ctx, MetaError, MetaUrl, SessionOptions};
use metabench_report::scale::{ScaleCurve, ScaleSize};
use metabench_report::table::thousands;
use metabench_report::SweepResults;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The sweep each size runs, as its command line parses (`sweep` first).
#[derive(clap::Parser)]
#[command(name = "sweep")]
struct SweepLine {
    #[command(flatten)]
    _args: crate::cmd_sweep::SweepArgs,
}

/// Arguments of `metabench scale`.
#[derive(Debug, clap::Args)]
pub struct ScaleArgs {
    #[command(flatten)]
    meta: MetaArg,

    /// The sizes of the scale tree to measure at, growing: 0,100k,1M,10M (0: before any
    /// fill, the sweep reading only what it makes).
    #[arg(long, value_name = "N,N,…", value_delimiter = ',', value_parser = parse_amount, required = true)]
    files: Vec<u64>,

    /// The operations each size's sweep runs (reads draw from the whole tree).
    #[arg(
        long,
        value_name = "OP,OP,…",
        default_value = "getattr,lookup,create,unlink"
    )]
    ops: String,

    /// The concurrency levels of each size's sweep.
    #[arg(long, value_name = "LEVELS", default_value = "1,16")]
    conc: String,

    /// How the reads pick their targets in the tree: uniform, zipfian[:θ] or latest.
    #[arg(long, value_name = "DIST", default_value = "zipfian")]
    keys: String,

    /// Discarded warm-up before each timed window.
    #[arg(long, value_name = "DURATION", default_value = "1s")]
    warmup: String,

    /// Timed window per level and operation.
    #[arg(long, value_name = "DURATION", default_value = "3s")]
    duration: String,

    /// Entries per directory of the tree.
    #[arg(long, value_name = "N", default_value = "100", value_parser = parse_amount)]
    files_per_dir: u64,

    /// Sub-directories per directory of the tree.
    #[arg(long, value_name = "N", default_value = "10", value_parser = parse_amount)]
    fanout: u64,

    /// Grow an existing JuiceFS volume, under /.metabench/scale-<run-id> (kept afterwards).
    #[arg(long)]
    existing: bool,

    /// Name of the volume formatted on an empty database.
    #[arg(long, default_value = "metabench")]
    name: String,

    /// Directory for each size's results (scale-N.json), the curve (scale.json) and its
    /// plots (scale-*.svg); created if needed.
    #[arg(long, value_name = "DIR", default_value = "metabench-scale")]
    out: PathBuf,
}

impl ScaleArgs {
    /// The sweep run at each size, writing `json`, its reads drawn from `tree` when the
    /// tree holds anything.
    fn sweep_args(&self, json: &Path, tree: Option<&str>) -> Vec<String> {
        let mut a: Vec<String> = [
            "sweep",
            "--existing",
            "--ops",
            &self.ops,
            "--conc",
            &self.conc,
            "--warmup",
            &self.warmup,
            "--duration",
            &self.duration,
        ]
        .map(String::from)
        .to_vec();
        if let Some(tree) = tree {
            a.extend(["--tree", tree, "--keys", &self.keys].map(String::from));
        }
        a.push("--json".into());
        a.push(json.display().to_string());
        a
    }

    /// The fill that adds `files` entries, in the shape asked for (the default shares of
    /// symlinks, hard links and xattrs).
    fn shape(&self, files: u64) -> Shape {
        Shape {
            files,
            files_per_dir: self.files_per_dir,
            fanout: self.fanout,
            ..Shape::default()
        }
    }
}

/// Runs `metabench scale`.
pub async fn run(args: ScaleArgs) -> Result<i32, CliError> {
    // Everything that can be refused is, before a byte is written.
    if !args.files.windows(2).all(|w| w[0] < w[1]) {
        return Err(input(format!(
            "--files must grow, each size larger than the one before (e.g. 0,100k,1M), not {}",
            args.files
                .iter()
                .map(|n| thousands(*n))
                .collect::<Vec<_>>()
                .join(",")
        )));
    }
    args.shape(1).check().map_err(input)?;
    // The sweep's own arguments (levels, operations, distribution, durations), as the
    // sweep at each size will parse them.
    let mut probe = args.sweep_args(Path::new("scale.json"), Some("/"));
    probe.extend(["--meta".to_owned(), "redis://127.0.0.1/1".to_owned()]);
    <SweepLine as clap::Parser>::try_parse_from(probe)
        .map_err(|e| input(format!("the sweep at each size: {}", clap_error_line(&e))))?;
    check_out_dir(&args.out)?;
    let url = MetaUrl::parse(&args.meta.meta)?;
    let engine = open(&url).await?;
    // The outputs' directory before the volume: one that cannot be made stops the run
    // before anything is written to the engine.
    std::fs::create_dir_all(&args.out)
        .map_err(|e| CliError::Io(format!("cannot create {}: {e}", args.out.display())))?;
    let to = destination(engine.as_ref(), &url, args.existing, &args.name, None).await?;
    let run_id = crate::volume::new_run_id();
    let name = format!("scale-{run_id}");
    let base_path = format!("{}/{name}", to.parent_path);
    let kept = if to.formatted.is_some() {
        format!(
            "the volume '{}' stays with the tree; remove it with `juicefs destroy` or by dropping the database",
            args.name
        )
    } else {
        format!("the tree stays in the volume under {base_path}")
    };
    let base = async {
        let mut s = engine.session(&SessionOptions::default()).await?;
        let (ino, _) = s
            .mkdir(&Ctx::root(), to.parent, name.as_bytes(), 0o755, 0o022)
            .await?;
        s.close().await?;
        Ok::<_, MetaError>(ino)
    }
    .await;
    let base = match base {
        Ok(ino) => ino,
        Err(e) => {
            // nothing was written below the volume: one formatted here goes again
            if let Some(uuid) = &to.formatted {
                let _ = engine.destroy(uuid).await;
            }
            return Err(e.into());
        }
    };
    let stop = metabench_load::StopFlag::default();
    let watcher = crate::args::watch_ctrl_c(
        stop.clone(),
        "stopping after the fill's transactions in flight, or the sweep's cleanup",
    );
    let mut curve = ScaleCurve {
        tree: base_path.clone(),
        ..Default::default()
    };
    let ended = grow_and_measure(&args, &url, engine.as_ref(), base, &mut curve, &stop).await;
    watcher.abort();
    // What was measured is written whatever ended the run, and said with what stays.
    if curve.sizes.is_empty() {
        return match ended {
            Ok(_) => {
                say!("metabench: scale stopped before its first size; {kept}");
                Ok(EXIT_INTERRUPTED)
            }
            Err(e) => {
                say!("metabench: scale: {kept}");
                Err(e)
            }
        };
    }
    let written = write_curve(&curve, &args.out);
    out!("{}", curve.text());
    out!(
        "results of each size, the curve (scale.json) and its plots in {}; {kept}",
        args.out.display()
    );
    written?;
    match ended {
        Ok(interrupted) => Ok(if interrupted { EXIT_INTERRUPTED } else { 0 }),
        Err(e) => Err(e),
    }
}

/// Grows the tree under `base` to each size in turn, sweeping at each, into `curve`;
/// whether Ctrl-C ended it early.
async fn grow_and_measure(
    args: &ScaleArgs,
    url: &MetaUrl,
    engine: &dyn metabench_engine::Engine,
    base: metabench_schema::Ino,
    curve: &mut ScaleCurve,
    stop: &metabench_load::StopFlag,
) -> Result<bool, CliError> {
    let base_path = curve.tree.clone();
    let mut held = 0u64;
    for (k, &size) in args.files.iter().enumerate() {
        if stop.is_stopped() {
            return Ok(true);
        }
        let mut fill_s = 0.0;
        if size > held {
            let part = format!("part-{k}");
            let path = format!("{base_path}/{part}");
            let started = Instant::now();
            let shape = args.shape(size - held);
            let end = fill_with_progress(engine, base, &part, &path, url, &shape, stop).await?;
            fill_s = started.elapsed().as_secs_f64();
            match end {
                FillEnd::Done(t) => {
                    held = size;
                    say!(
                        "metabench: scale: {} files under {base_path} ({} added in {fill_s:.1} s)",
                        thousands(held),
                        summary(&t)
                    );
                }
                FillEnd::Stopped {
                    failure,
                    written,
                    stray,
                } => {
                    let n = written.names();
                    let kept = format!(
                        "{path} holds the {} entries written so far, {}",
                        thousands(n),
                        consistent_or(stray.as_deref())
                    );
                    return match failure {
                        None => {
                            say!(
                                "metabench: scale stopped filling at {} files; {kept}",
                                thousands(held + n)
                            );
                            Ok(true)
                        }
                        Some(e) => {
                            let why = out_of_room(&e).unwrap_or_else(|| e.to_string());
                            Err(CliError::Meta(MetaError::Engine(format!(
                                "scale stopped filling toward {} files: {why}; {kept}",
                                thousands(size)
                            ))))
                        }
                    };
                }
            }
        }
        // What the engine holds now, before the sweep adds (and leaves) its own traces.
        let footprint = crate::volume::footprint(engine).await;
        let json = args.out.join(format!("scale-{size}.json"));
        let tree = (held > 0).then_some(base_path.as_str());
        say!("metabench: scale: sweeping at {} files", thousands(held));
        match run_metabench(args.sweep_args(&json, tree), &args.meta.meta, stop).await? {
            ChildEnd::Done => {}
            ChildEnd::Interrupted => return Ok(true),
            ChildEnd::Failed(reason) => {
                return Err(CliError::Meta(MetaError::Engine(format!(
                    "the sweep at {} files failed: {reason}",
                    thousands(held)
                ))));
            }
        }
        let text = std::fs::read_to_string(&json)
            .map_err(|e| CliError::Io(format!("cannot read {}: {e}", json.display())))?;
        let run = SweepResults::from_json(&text)
            .map_err(|e| CliError::Io(format!("{}: {e}", json.display())))?;
        if curve.engine.is_empty() {
            curve.engine = format!("{} {}", run.header.engine.kind, run.header.engine.version);
        }
        let file = json
            .file_name()
            .map_or_else(String::new, |f| f.to_string_lossy().into_owned());
        curve.push(ScaleSize::of(held, fill_s, footprint, file, &run));
    }
    Ok(false)
}

/// Fails early when `dir` cannot hold the outputs: a file of that name, or a missing
/// parent directory.
fn check_out_dir(dir: &Path) -> Result<(), CliError> {
    if dir.exists() && !dir.is_dir() {
        return Err(input(format!(
            "cannot write into {}: not a directory",
            dir.display()
        )));
    }
    match dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(parent) if !parent.is_dir() => Err(input(format!(
            "cannot make {}: directory {} does not exist",
            dir.display(),
            parent.display()
        ))),
        _ => Ok(()),
    }
}

/// Writes the curve (`scale.json`) and its plots into `dir`.
fn write_curve(curve: &ScaleCurve, dir: &Path) -> Result<(), CliError> {
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text)
            .map_err(|e| CliError::Io(format!("cannot write {}: {e}", path.display())))
    };
    let json = serde_json::to_string_pretty(&curve)
        .map_err(|e| CliError::Io(format!("cannot encode the curve: {e}")))?;
    write("scale.json", &json)?;
    for p in curve
        .plots()
        .map_err(|e| CliError::Io(format!("cannot plot: {e}")))?
    {
        write(&p.file, &p.svg)?;
    }
    Ok(())
}

//! `metabench fill`: a populated volume, written in bulk ([`metabench_engine::fill`]).
//!
//! An empty database gets a new volume, filled under `/fill-<run-id>`; an existing volume
//! (`--existing`) gets the tree under `/.metabench/fill-<run-id>`. Anything else is
//! refused before a byte is written. The filled volume stays: that is the point.

use crate::args::{parse_amount, MetaArg};
use crate::error::{input, CliError, EXIT_INTERRUPTED};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use metabench_engine::fill::{fill, FillEnd, Shape, Totals};
use metabench_engine::{open, Engine, MetaError, MetaUrl, SessionOptions, VolumeState};
use metabench_report::table::thousands;
use metabench_schema::Ino;
use metabench_schema::ROOT_INODE;
use std::io::IsTerminal as _;
use std::time::Instant;

/// Arguments of `metabench fill`.
#[derive(Debug, clap::Args)]
pub struct FillArgs {
    #[command(flatten)]
    meta: MetaArg,

    /// Entries that are not directories (files, symlinks, hard links): 100000, 100k, 10M.
    #[arg(long, value_name = "N", value_parser = parse_amount)]
    files: u64,

    /// Entries per directory of the regular tree.
    #[arg(long, value_name = "N", default_value = "100", value_parser = parse_amount)]
    files_per_dir: u64,

    /// Sub-directories per directory of the regular tree (its depth follows).
    #[arg(long, value_name = "N", default_value = "10", value_parser = parse_amount)]
    fanout: u64,

    /// Very large directories beside the tree, each of --big-dir-files entries (counted
    /// in --files), e.g. --big-dirs 1 --big-dir-files 1M.
    #[arg(long, value_name = "N", default_value = "0", value_parser = parse_amount)]
    big_dirs: u64,

    /// Entries of each very large directory.
    #[arg(long, value_name = "N", default_value = "0", value_parser = parse_amount)]
    big_dir_files: u64,

    /// Share of entries that are symlinks.
    #[arg(long, value_name = "SHARE", default_value_t = 0.01)]
    symlinks: f64,

    /// Share of entries that are hard links (second names of a file in the same directory).
    #[arg(long, value_name = "SHARE", default_value_t = 0.005)]
    hardlinks: f64,

    /// Share of files with an extended attribute.
    #[arg(long, value_name = "SHARE", default_value_t = 0.01)]
    xattrs: f64,

    /// Length of every file, with its chunks and slices (e.g. 4KiB, 100MiB; 0: empty
    /// files). Only metadata is written: the volume's object storage gets no blocks.
    #[arg(long, value_name = "BYTES", default_value = "0", value_parser = parse_bytes)]
    file_size: u64,

    /// Fill an existing JuiceFS volume, under /.metabench/fill-<run-id> (kept afterwards).
    #[arg(long)]
    existing: bool,

    /// Name of the volume formatted on an empty database.
    #[arg(long, default_value = "metabench")]
    name: String,

    /// Object storage directory recorded in a volume formatted here (storage type `file`).
    #[arg(long, value_name = "DIR")]
    bucket: Option<String>,
}

/// Parses a size in bytes: `0`, `4096`, `4KiB`, `64MiB`, `1GiB` (or K, M, G: also
/// powers of 1024).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let mult: u64 = match unit {
        "" | "B" => 1,
        "K" | "KiB" | "k" => 1 << 10,
        "M" | "MiB" => 1 << 20,
        "G" | "GiB" => 1 << 30,
        _ => return Err(format!("'{s}' is not a size (e.g. 4096, 4KiB, 64MiB)")),
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| format!("'{s}' is not a size (e.g. 4096, 4KiB, 64MiB)"))
}

/// Why an engine stopped taking writes, named by the limit a user raises: one line.
pub(crate) fn out_of_room(e: &MetaError) -> Option<String> {
    let msg = e.to_string();
    let why = if msg.contains("maxmemory") {
        "Redis reached its maxmemory limit (raise `maxmemory`, or fill fewer files)"
    } else if msg.contains("database space exceeded") {
        "etcd's backend quota is full (raise --quota-backend-bytes, then `etcdctl alarm disarm`)"
    } else if [
        "No space left",
        "disk is full",
        "disk full",
        "table is full",
    ]
    .iter()
    .any(|m| msg.contains(m))
    {
        "the engine's disk is full"
    } else {
        return None;
    };
    Some(why.to_owned())
}

/// Whether a stopped fill left a consistent volume: "consistent", or why it may not be
/// (a refused transaction the engine would not take back, or one it cannot tell landed).
pub(crate) fn consistent_or(stray: Option<&str>) -> String {
    match stray {
        None => "consistent".to_owned(),
        Some(why) => format!(
            "and NOT consistent: {why}, so its entries, directories and counters may not \
             agree (remove the volume if this fill formatted it)"
        ),
    }
}

/// What a fill wrote, in one line: files, symlinks, hard links, directories, xattrs, bytes.
pub(crate) fn summary(t: &Totals) -> String {
    format!(
        "{} files, {} symlinks, {} hard links, {} directories, {} xattrs, {} bytes of file length",
        thousands(t.files),
        thousands(t.symlinks),
        thousands(t.hardlinks),
        thousands(t.dirs),
        thousands(t.xattrs),
        thousands(t.bytes)
    )
}

/// Where a fill (or a scale curve) writes its tree: a volume formatted here on an empty
/// database, or an existing volume's `/.metabench` (`--existing`). Anything else is
/// refused before a byte is written.
pub(crate) struct Destination {
    /// The uuid of a volume formatted here (its command removes it again when nothing
    /// could be written into it).
    pub(crate) formatted: Option<String>,
    /// The directory the tree goes in.
    pub(crate) parent: Ino,
    /// Its path: empty for the root, `/.metabench` under `--existing`.
    pub(crate) parent_path: String,
}

/// Opens [`Destination`] on `engine` at `url`: formats a volume named `name` (objects in
/// `bucket`) on an empty database, or enters an existing one with `existing`.
pub(crate) async fn destination(
    engine: &dyn Engine,
    url: &MetaUrl,
    existing: bool,
    name: &str,
    bucket: Option<String>,
) -> Result<Destination, CliError> {
    let formatted = match (engine.probe().await?, existing) {
        (VolumeState::Empty, false) => {
            let format = crate::cmd_format::new_format(name, bucket, 0)?;
            engine.format(&format).await?;
            Some(format.uuid)
        }
        (VolumeState::Empty, true) => {
            return Err(input(format!(
                "{url} holds no JuiceFS volume to fill with --existing (leave it out to format one)"
            )))
        }
        (VolumeState::Volume(f), false) => {
            return Err(input(format!(
                "{url} already holds the JuiceFS volume '{}'; add --existing to fill it under /.metabench",
                f.name
            )))
        }
        (VolumeState::Volume(_), true) => None,
        (VolumeState::Foreign(what), _) => {
            return Err(input(format!(
                "{url} is not empty ({what}); refusing to write into it"
            )))
        }
    };
    if formatted.is_some() {
        return Ok(Destination {
            formatted,
            parent: ROOT_INODE,
            parent_path: String::new(),
        });
    }
    let mut s = engine.session(&SessionOptions::default()).await?;
    let top = metabench_engine::namespace::top_dir(s.as_mut()).await?;
    s.close().await?;
    Ok(Destination {
        formatted,
        parent: top,
        parent_path: "/.metabench".to_owned(),
    })
}

/// Fills directory `name` (made in `parent`, shown as `path`) with `shape`, with a
/// progress bar (files/s, ETA) on a terminal; `stop` ends it between two batches.
pub(crate) async fn fill_with_progress(
    engine: &dyn Engine,
    parent: Ino,
    name: &str,
    path: &str,
    url: &MetaUrl,
    shape: &Shape,
    stop: &metabench_load::StopFlag,
) -> metabench_engine::Result<FillEnd> {
    let bar = if std::io::stderr().is_terminal() {
        ProgressBar::with_draw_target(Some(shape.files), ProgressDrawTarget::stderr())
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template(
            "{bar:30} {human_pos}/{human_len} files  {per_sec}  ETA {eta}  {msg}",
        )
        .expect("static template"),
    );
    bar.set_message(path.to_owned());
    let stopped = || stop.is_stopped();
    let mut announce = |how: &str| {
        bar.suspend(|| {
            say!(
                "metabench: filling {path} on {url}: {} files {how}",
                thousands(shape.files)
            )
        })
    };
    let mut progress = |n: u64| bar.inc(n);
    let end = fill(
        engine,
        parent,
        name.as_bytes(),
        shape,
        &stopped,
        &mut announce,
        &mut progress,
    )
    .await;
    bar.finish_and_clear();
    end
}

/// Runs `metabench fill`.
pub async fn run(args: FillArgs) -> Result<i32, CliError> {
    let shape = Shape {
        files: args.files,
        files_per_dir: args.files_per_dir,
        fanout: args.fanout,
        big_dirs: args.big_dirs,
        big_dir_files: args.big_dir_files,
        symlink_share: args.symlinks,
        hardlink_share: args.hardlinks,
        xattr_share: args.xattrs,
        file_size: args.file_size,
    };
    shape.check().map_err(input)?;
    let url = MetaUrl::parse(&args.meta.meta)?;
    let engine = open(&url).await?;
    let run_id = crate::volume::new_run_id();
    let name = format!("fill-{run_id}");
    let to = destination(
        engine.as_ref(),
        &url,
        args.existing,
        &args.name,
        args.bucket.clone(),
    )
    .await?;
    let formatted = to.formatted.clone();
    let path = format!("{}/{name}", to.parent_path);
    let stop = metabench_load::StopFlag::default();
    let watcher =
        crate::args::watch_ctrl_c(stop.clone(), "stopping after the transactions in flight");
    let started = Instant::now();
    let end = fill_with_progress(
        engine.as_ref(),
        to.parent,
        &name,
        &path,
        &url,
        &shape,
        &stop,
    )
    .await;
    watcher.abort();
    let secs = started.elapsed().as_secs_f64();
    let end = match end {
        Ok(end) => end,
        Err(e) => {
            // nothing was filled (the base directory could not be made, or no ids
            // reserved): a volume formatted here is removed again
            if let Some(uuid) = &formatted {
                let _ = engine.destroy(uuid).await;
            }
            return Err(e.into());
        }
    };
    let (t, failure) = match end {
        FillEnd::Done(t) => (t, None),
        FillEnd::Stopped {
            failure,
            written,
            stray,
        } => (written, Some((failure, stray))),
    };
    let written = t.names();
    match failure {
        None => {
            out!(
                "filled {path} on {url}: {} in {secs:.1} s ({} files/s)",
                summary(&t),
                thousands((written as f64 / secs.max(1e-9)) as u64)
            );
            if formatted.is_some() {
                out!("the volume '{}' stays; measure it with `--existing`, remove it with `juicefs destroy` or by dropping the database", args.name);
            }
            Ok(0)
        }
        Some((failure, stray)) => {
            let kept = format!(
                "{path} holds the {} files written so far, {} ({})",
                thousands(written),
                consistent_or(stray.as_deref()),
                summary(&t)
            );
            match failure {
                None => {
                    say!(
                        "metabench: fill stopped after {} of {} files; {kept}",
                        thousands(written),
                        thousands(shape.files)
                    );
                    Ok(EXIT_INTERRUPTED)
                }
                Some(e) => {
                    let why = out_of_room(&e).unwrap_or_else(|| e.to_string());
                    Err(CliError::Meta(MetaError::Engine(format!(
                        "fill stopped after {} of {} files: {why}; {kept}",
                        thousands(written),
                        thousands(shape.files)
                    ))))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_and_sizes() {
        assert_eq!(parse_amount("100k"), Ok(100_000));
        assert_eq!(parse_amount("10M"), Ok(10_000_000));
        assert_eq!(parse_amount("7"), Ok(7));
        assert!(parse_amount("ten").is_err());
        assert!(parse_amount("99999999999G").is_err());
        assert_eq!(parse_bytes("4KiB"), Ok(4096));
        assert_eq!(parse_bytes("64MiB"), Ok(64 << 20));
        assert_eq!(parse_bytes("0"), Ok(0));
        assert!(parse_bytes("4 parsecs").is_err());
        assert_eq!(thousands(1234567), "1,234,567");
    }

    #[test]
    fn out_of_room_names_the_limit() {
        let e = MetaError::Engine(
            "redis: OOM command not allowed when used memory > 'maxmemory'.".into(),
        );
        assert!(out_of_room(&e).unwrap().contains("maxmemory"));
        let e = MetaError::Engine("etcdserver: mvcc: database space exceeded".into());
        assert!(out_of_room(&e).unwrap().contains("--quota-backend-bytes"));
        assert!(out_of_room(&MetaError::NotFound).is_none());
    }
}

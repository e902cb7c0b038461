//! A private etcd, one per test: over TLS only, or with a small backend quota.

use crate::util::{free_port, temp_dir};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Debian's etcd 3.4 (`etcd-server`, in `scripts/packages.txt`).
const ETCD: &str = "/usr/bin/etcd";

/// An etcd on a free 127.0.0.1 port serving clients over TLS with the server certificate
/// of a [`crate::TestCerts`], and asking each client for a certificate its authority
/// signed (`--client-cert-auth`). Dropping it kills it (by PID) and removes its data.
pub struct EtcdServer {
    child: Child,
    port: u16,
    /// The binary and arguments it was started with (a restart reuses them).
    command: (String, Vec<std::ffi::OsString>),
    dir: tempfile::TempDir,
}

impl EtcdServer {
    /// Starts it and waits (up to 30 s) until it serves clients. Panics when it does not.
    pub fn start_tls(certs: &crate::TestCerts) -> EtcdServer {
        let ((cert, key), ca) = (certs.server(), certs.ca());
        let (cert, key, ca) = (cert.as_os_str(), key.as_os_str(), ca.as_os_str());
        Self::start(
            "https",
            &[
                "--cert-file".as_ref(),
                cert,
                "--key-file".as_ref(),
                key,
                "--trusted-ca-file".as_ref(),
                ca,
                "--client-cert-auth".as_ref(),
            ],
        )
    }

    /// Starts a plain (http) etcd 3.4 whose backend quota is `quota_bytes`
    /// (`--quota-backend-bytes`), and waits until it serves clients.
    pub fn start_with_quota(quota_bytes: u64) -> EtcdServer {
        Self::start_with_quota_on(ETCD, quota_bytes)
    }

    /// [`EtcdServer::start_with_quota`] with the etcd 3.5 of `scripts/engines.sh`
    /// (`METABENCH_ETCD_BIN`): under its NOSPACE alarm it refuses a transaction of deletes
    /// alone, which etcd 3.4.23 takes (etcd-io/etcd#13429).
    pub fn start_35_with_quota(quota_bytes: u64) -> EtcdServer {
        let bin = std::env::var("METABENCH_ETCD_BIN").unwrap_or_else(|_| {
            panic!("no METABENCH_ETCD_BIN: run the tests with scripts/test.sh")
        });
        Self::start_with_quota_on(&bin, quota_bytes)
    }

    fn start_with_quota_on(bin: &str, quota_bytes: u64) -> EtcdServer {
        let quota = quota_bytes.to_string();
        Self::start_on(
            bin,
            "http",
            &["--quota-backend-bytes".as_ref(), quota.as_ref()],
        )
    }

    /// A one-member etcd 3.4 on free ports, clients over `scheme`, data and log in a temp
    /// folder, with `extra` arguments; waits up to 30 s until it serves clients.
    fn start(scheme: &str, extra: &[&std::ffi::OsStr]) -> EtcdServer {
        Self::start_on(ETCD, scheme, extra)
    }

    /// [`EtcdServer::start`] with the etcd binary `bin`.
    fn start_on(bin: &str, scheme: &str, extra: &[&std::ffi::OsStr]) -> EtcdServer {
        let dir = temp_dir();
        let (port, peer) = (free_port(), free_port());
        let client_url = format!("{scheme}://127.0.0.1:{port}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let mut args: Vec<std::ffi::OsString> =
            ["--name", "test", "--data-dir"].map(Into::into).into();
        args.push(dir.path().join("data").into());
        for (flag, value) in [
            ("--listen-client-urls", &client_url),
            ("--advertise-client-urls", &client_url),
            ("--listen-peer-urls", &peer_url),
            ("--initial-advertise-peer-urls", &peer_url),
            ("--initial-cluster", &format!("test={peer_url}")),
        ] {
            args.extend([flag.into(), value.into()]);
        }
        args.extend(extra.iter().map(|a| a.to_os_string()));
        let child = Self::spawn(bin, &args, dir.path());
        EtcdServer {
            child,
            port,
            command: (bin.to_string(), args),
            dir,
        }
    }

    /// Spawns `bin` with `args` (its stderr logged in `dir`) and waits up to 30 s until
    /// it serves clients; panics when it does not.
    fn spawn(bin: &str, args: &[std::ffi::OsString], dir: &std::path::Path) -> Child {
        let log = dir.join("etcd.log");
        let mut child = Command::new(bin)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot spawn {bin} ({e}): run the tests with scripts/test.sh")
            });
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if text.contains("ready to serve client requests") {
                return child;
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!("etcd exited ({status}):\n{text}");
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("etcd did not serve clients in 30 s:\n{text}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// What metabench's out-of-room error tells a user to do: restarts this etcd on its
    /// data with a backend quota of `quota_bytes`, then disarms its NOSPACE alarm
    /// (`etcdctl alarm disarm`, the etcdctl beside its etcd: the etcd 3.5 of
    /// [`EtcdServer::start_35_with_quota`] has one, Debian's 3.4 none, and there it panics).
    pub fn raise_quota(&mut self, quota_bytes: u64) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let (bin, mut args) = self.command.clone();
        args.extend([
            "--quota-backend-bytes".into(),
            quota_bytes.to_string().into(),
        ]);
        self.child = Self::spawn(&bin, &args, self.dir.path());
        self.command.1 = args;
        let etcdctl = std::path::Path::new(&bin).with_file_name("etcdctl");
        let out = Command::new(&etcdctl)
            .env("ETCDCTL_API", "3")
            .args(["--endpoints", &format!("http://127.0.0.1:{}", self.port)])
            .args(["alarm", "disarm"])
            .output()
            .unwrap_or_else(|e| panic!("cannot run {} ({e})", etcdctl.display()));
        assert!(out.status.success(), "{out:?}");
    }

    /// Its client port.
    pub fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for EtcdServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

//! A private etcd that takes clients over TLS only, one per test.

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
    _dir: tempfile::TempDir,
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

    /// Starts a plain (http) etcd whose backend quota is `quota_bytes`
    /// (`--quota-backend-bytes`), and waits until it serves clients.
    pub fn start_with_quota(quota_bytes: u64) -> EtcdServer {
        let quota = quota_bytes.to_string();
        Self::start("http", &["--quota-backend-bytes".as_ref(), quota.as_ref()])
    }

    /// A one-member etcd on free ports, clients over `scheme`, data and log in a temp
    /// folder, with `extra` arguments; waits up to 30 s until it serves clients.
    fn start(scheme: &str, extra: &[&std::ffi::OsStr]) -> EtcdServer {
        let dir = temp_dir();
        let (port, peer) = (free_port(), free_port());
        let client_url = format!("{scheme}://127.0.0.1:{port}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let mut cmd = Command::new(ETCD);
        cmd.args(["--name", "test", "--data-dir"])
            .arg(dir.path().join("data"))
            .args(["--listen-client-urls", &client_url])
            .args(["--advertise-client-urls", &client_url])
            .args(["--listen-peer-urls", &peer_url])
            .args(["--initial-advertise-peer-urls", &peer_url])
            .args(["--initial-cluster", &format!("test={peer_url}")])
            .args(extra);
        Self::spawn(cmd, dir, port)
    }

    /// Spawns `cmd` (its stderr logged in `dir`) and waits up to 30 s until it serves
    /// clients; panics when it does not.
    fn spawn(mut cmd: Command, dir: tempfile::TempDir, port: u16) -> EtcdServer {
        let log = dir.path().join("etcd.log");
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot spawn {ETCD} ({e}): run the tests with scripts/test.sh")
            });
        let mut server = EtcdServer {
            child,
            port,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if text.contains("ready to serve client requests") {
                return server;
            }
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("etcd exited ({status}):\n{text}");
            }
            if Instant::now() > deadline {
                panic!("etcd did not serve clients in 30 s:\n{text}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
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

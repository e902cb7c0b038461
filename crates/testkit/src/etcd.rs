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
        let dir = temp_dir();
        let (port, peer) = (free_port(), free_port());
        let (cert, key) = certs.server();
        let client_url = format!("https://127.0.0.1:{port}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let mut cmd = Command::new(ETCD);
        cmd.args(["--name", "tls", "--data-dir"])
            .arg(dir.path().join("data"))
            .args(["--listen-client-urls", &client_url])
            .args(["--advertise-client-urls", &client_url])
            .args(["--listen-peer-urls", &peer_url])
            .args(["--initial-advertise-peer-urls", &peer_url])
            .args(["--initial-cluster", &format!("tls={peer_url}")])
            .arg("--cert-file")
            .arg(cert)
            .arg("--key-file")
            .arg(key)
            .arg("--trusted-ca-file")
            .arg(certs.ca())
            .arg("--client-cert-auth");
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

    /// Starts a plain (http) etcd whose backend quota is `quota_bytes`
    /// (`--quota-backend-bytes`), and waits until it serves clients.
    pub fn start_with_quota(quota_bytes: u64) -> EtcdServer {
        let dir = temp_dir();
        let (port, peer) = (free_port(), free_port());
        let client_url = format!("http://127.0.0.1:{port}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let mut cmd = Command::new(ETCD);
        cmd.args(["--name", "quota", "--data-dir"])
            .arg(dir.path().join("data"))
            .args(["--listen-client-urls", &client_url])
            .args(["--advertise-client-urls", &client_url])
            .args(["--listen-peer-urls", &peer_url])
            .args(["--initial-advertise-peer-urls", &peer_url])
            .args(["--initial-cluster", &format!("quota={peer_url}")])
            .args(["--quota-backend-bytes", &quota_bytes.to_string()]);
        Self::spawn(cmd, dir, port)
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

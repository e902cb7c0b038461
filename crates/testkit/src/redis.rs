//! Private `redis-server` processes, one per test, and a tiny synchronous RESP client.

use crate::util::{free_port, temp_dir};
use crate::PASSWORD;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `redis-server` of the test's own on a free 127.0.0.1 port and a Unix socket in its
/// temp dir, with a password, no persistence (`--save ''`, `--appendonly no`) and 64
/// databases; with [`RedisServer::start_tls`] also a TLS port. Nothing else talks to it,
/// so `INFO commandstats` deltas count exactly what the test sent.
///
/// Dropping it kills the process (by its PID) and removes its temp dir.
pub struct RedisServer {
    child: Child,
    port: u16,
    tls_port: Option<u16>,
    dir: tempfile::TempDir,
    /// The command line it was started with ([`RedisServer::restart`] runs it again).
    args: Vec<std::ffi::OsString>,
}

impl RedisServer {
    /// Spawns the server and waits (up to 20 s) until it answers `PING`.
    ///
    /// Panics when `redis-server` is missing (run `scripts/test.sh`, which installs it)
    /// or does not come up.
    pub fn start() -> RedisServer {
        Self::spawn(None, &[])
    }

    /// As [`RedisServer::start`], with `extra` server options after the defaults, e.g.
    /// `["--maxclients", "50"]`.
    pub fn start_with(extra: &[&str]) -> RedisServer {
        Self::spawn(None, extra)
    }

    /// As [`RedisServer::start`], plus a TLS port with the server certificate of `certs`,
    /// which takes clients with or without a certificate its authority signed
    /// (`--tls-auth-clients optional`).
    pub fn start_tls(certs: &crate::TestCerts) -> RedisServer {
        Self::spawn(Some(certs), &[])
    }

    /// As [`RedisServer::start`], replicating `primary` (`--replicaof`, `--masterauth`).
    pub fn start_replica_of(primary: &RedisServer) -> RedisServer {
        let port = primary.port().to_string();
        Self::spawn(
            None,
            &["--replicaof", "127.0.0.1", &port, "--masterauth", PASSWORD],
        )
    }

    /// A node of a Redis Cluster (`--cluster-enabled`, a node timeout of 1 s, the test
    /// password as `masterauth`), with
    /// `extra` options after the defaults (e.g. `--appendonly yes`).
    fn start_cluster_node(extra: &[&str]) -> RedisServer {
        let mut args = vec![
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            "nodes.conf",
            "--cluster-node-timeout",
            "1000",
            // Any node may become a replica (of its replica, after a failover).
            "--masterauth",
            PASSWORD,
        ];
        args.extend_from_slice(extra);
        Self::spawn_on(None, &args, free_cluster_port)
    }

    fn spawn(certs: Option<&crate::TestCerts>, extra: &[&str]) -> RedisServer {
        Self::spawn_on(certs, extra, free_port)
    }

    /// Starts the server on a port `port` picks, the `extra` options after the defaults.
    fn spawn_on(
        certs: Option<&crate::TestCerts>,
        extra: &[&str],
        port: fn() -> u16,
    ) -> RedisServer {
        let mut last_log = String::new();
        for _ in 0..10 {
            let dir = temp_dir();
            let port = port();
            let tls_port = certs.map(|_| free_port());
            let mut cmd = Command::new("redis-server");
            if let (Some(c), Some(p)) = (certs, tls_port) {
                let (cert, key) = c.server();
                cmd.args(["--tls-port", &p.to_string(), "--tls-cert-file"])
                    .arg(cert)
                    .arg("--tls-key-file")
                    .arg(key)
                    .arg("--tls-ca-cert-file")
                    .arg(c.ca())
                    .args(["--tls-auth-clients", "optional"]);
            }
            cmd.arg("--unixsocket")
                .arg(dir.path().join("redis.sock"))
                .args(["--unixsocketperm", "700"]);
            cmd.args(["--bind", "127.0.0.1", "--port", &port.to_string()])
                .args(["--requirepass", PASSWORD])
                .args(["--save", "", "--appendonly", "no", "--databases", "64"])
                .arg("--dir")
                .arg(dir.path())
                .arg("--pidfile")
                .arg(dir.path().join("redis.pid"))
                .arg("--logfile")
                .arg(dir.path().join("redis.log"))
                .args(["--daemonize", "no"])
                .args(extra)
                .current_dir(dir.path())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            let args: Vec<std::ffi::OsString> = cmd.get_args().map(|a| a.to_owned()).collect();
            let child = cmd.spawn().unwrap_or_else(|e| {
                panic!("cannot spawn redis-server ({e}): run the tests with scripts/test.sh, which installs it")
            });
            let mut server = RedisServer {
                child,
                port,
                tls_port,
                dir,
                args,
            };
            match server.wait_for_ping() {
                Ok(()) => return server,
                // Exited: most likely another process took the port meanwhile.
                Err(log) => last_log = log,
            }
        }
        panic!("redis-server did not start after 10 attempts; last log:\n{last_log}");
    }

    /// Waits (up to 20 s) until the server answers `PING`; its log if it exited first.
    /// Panics if it neither answers nor exits.
    fn wait_for_ping(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(20);
        let log = |dir: &std::path::Path| {
            std::fs::read_to_string(dir.join("redis.log")).unwrap_or_default()
        };
        loop {
            if let Ok(Some(_)) = self.child.try_wait() {
                return Err(log(self.dir.path()));
            }
            if let Ok(Resp::Simple(s)) = self.try_command(&["PING"]) {
                if s == "PONG" {
                    return Ok(());
                }
            }
            if Instant::now() > deadline {
                panic!(
                    "redis-server on port {} did not answer PING in 20 s:\n{}",
                    self.port,
                    log(self.dir.path())
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills the server (SIGKILL, by PID), as a node crashes; [`RedisServer::restart`]
    /// brings it back.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Kills the server (SIGKILL, by PID) and starts it again on the same port, with the
    /// same data directory and options, as a crashed node comes back; returns once it
    /// answers `PING`. Panics if it does not come back.
    pub fn restart(&mut self) {
        self.kill();
        self.child = Command::new("redis-server")
            .args(&self.args)
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot spawn redis-server again ({e})"));
        if let Err(log) = self.wait_for_ping() {
            panic!(
                "redis-server on port {} did not come back:\n{log}",
                self.port
            );
        }
    }

    /// The meta URL of database `db`: `redis://:PASSWORD@127.0.0.1:PORT/db`.
    pub fn url(&self, db: u32) -> String {
        format!("redis://:{PASSWORD}@127.0.0.1:{}/{db}", self.port)
    }

    /// The meta URL of database `db` on the TLS port, `rediss://:PASSWORD@127.0.0.1:PORT/db`,
    /// followed by `query` (e.g. `?tls-ca-cert-file=…`). Panics on a server without TLS.
    pub fn tls_url(&self, db: u32, query: &str) -> String {
        let port = self.tls_port.expect("a server started with start_tls");
        format!("rediss://:{PASSWORD}@127.0.0.1:{port}/{db}{query}")
    }

    /// The Unix socket it listens on.
    pub fn socket(&self) -> std::path::PathBuf {
        self.dir.path().join("redis.sock")
    }

    /// The meta URL of database `db` over the Unix socket, as JuiceFS writes it:
    /// `unix://:PASSWORD@/path/redis.sock?db=N`.
    pub fn unix_url(&self, db: u32) -> String {
        format!("unix://:{PASSWORD}@{}?db={db}", self.socket().display())
    }

    /// The TCP port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The password (`requirepass`).
    pub fn password(&self) -> &str {
        PASSWORD
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Binds every thread of the server to `cpus`, as `taskset -a -p` does. Panics if
    /// the kernel refuses.
    pub fn bind_to_cpus(&self, cpus: &[usize]) {
        let tasks = std::fs::read_dir(format!("/proc/{}/task", self.pid())).unwrap();
        for task in tasks.flatten() {
            let tid: libc::pid_t = task.file_name().to_str().unwrap().parse().unwrap();
            let set = crate::util::cpu_set_of(cpus);
            // SAFETY: `set` is a valid CPU set of the size given.
            let rc = unsafe { libc::sched_setaffinity(tid, std::mem::size_of_val(&set), &set) };
            assert_eq!(
                rc,
                0,
                "binding redis-server's thread {tid} to {cpus:?}: {}",
                std::io::Error::last_os_error()
            );
        }
    }

    /// Sends one command on a fresh authenticated connection and returns the reply
    /// (a server error is `Resp::Error`). Panics on I/O errors.
    ///
    /// Each call also runs `AUTH`, which `INFO commandstats` counts as `auth`.
    pub fn command(&self, args: &[&str]) -> Resp {
        self.try_command(args)
            .unwrap_or_else(|e| panic!("redis {args:?} on port {}: {e}", self.port))
    }

    fn try_command(&self, args: &[&str]) -> std::io::Result<Resp> {
        command_on(self.port, Some(PASSWORD), args)
    }

    /// `INFO commandstats` as `command -> calls` (lower-case names, e.g. `"hget"`,
    /// `"exec"`; subcommands as `"client|setname"`).
    ///
    /// The `INFO` (and `AUTH`) of this call are counted too: take the difference of two
    /// snapshots and ignore `info` and `auth`, or call [`RedisServer::reset_stats`] first.
    pub fn commandstats(&self) -> BTreeMap<String, u64> {
        let text = match self.command(&["INFO", "commandstats"]) {
            Resp::Bulk(Some(b)) => String::from_utf8_lossy(&b).into_owned(),
            other => panic!("INFO commandstats answered {other:?}"),
        };
        parse_commandstats(&text)
    }

    /// `CONFIG RESETSTAT`: zeroes the command statistics.
    pub fn reset_stats(&self) {
        match self.command(&["CONFIG", "RESETSTAT"]) {
            Resp::Simple(_) => {}
            other => panic!("CONFIG RESETSTAT answered {other:?}"),
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl std::fmt::Debug for RedisServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisServer")
            .field("port", &self.port)
            .field("pid", &self.child.id())
            .field("dir", &self.dir.path())
            .finish()
    }
}

/// A Redis reply (RESP2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resp {
    /// `+OK`.
    Simple(String),
    /// `-ERR …`.
    Error(String),
    /// `:42`.
    Integer(i64),
    /// `$…`; `None` is the nil bulk string.
    Bulk(Option<Vec<u8>>),
    /// `*…`; `None` is the nil array.
    Array(Option<Vec<Resp>>),
}

/// Sends one command to 127.0.0.1:`port` on a fresh connection, after `AUTH` when a
/// password is given, and returns the reply.
fn command_on(port: u16, password: Option<&str>, args: &[&str]) -> std::io::Result<Resp> {
    let stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut w = stream.try_clone()?;
    let mut r = BufReader::new(stream);
    if let Some(pw) = password {
        w.write_all(&encode(&["AUTH", pw]))?;
    }
    w.write_all(&encode(args))?;
    if password.is_some() {
        if let Resp::Error(e) = read_resp(&mut r)? {
            return Err(std::io::Error::other(format!("AUTH: {e}")));
        }
    }
    read_resp(&mut r)
}

/// The master name [`SentinelSet`]'s Sentinel watches.
pub const SENTINEL_MASTER: &str = "mymaster";

/// A Redis primary, a replica of it, and one Sentinel (`redis-server --sentinel`, no
/// password of its own) watching them as [`SENTINEL_MASTER`], each a private process on
/// 127.0.0.1. Dropping it kills all three by PID.
pub struct SentinelSet {
    /// The primary.
    pub primary: RedisServer,
    /// Its replica.
    pub replica: RedisServer,
    sentinel: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl SentinelSet {
    /// Starts the three and waits (up to 20 s) until the replica is in sync and the
    /// Sentinel names the primary.
    pub fn start() -> SentinelSet {
        Self::start_with(None)
    }

    /// As [`SentinelSet::start`], the Sentinel asking its clients for `password`
    /// (`requirepass`), which JuiceFS takes from `SENTINEL_PASSWORD`.
    pub fn start_with_password(password: &str) -> SentinelSet {
        Self::start_with(Some(password))
    }

    fn start_with(sentinel_password: Option<&str>) -> SentinelSet {
        let primary = RedisServer::start();
        let replica = RedisServer::start_replica_of(&primary);
        let dir = temp_dir();
        let port = free_port();
        let conf = dir.path().join("sentinel.conf");
        std::fs::write(
            &conf,
            format!(
                "port {port}\nbind 127.0.0.1\ndaemonize no\ndir {dir}\nlogfile {dir}/sentinel.log\n\
                 sentinel monitor {SENTINEL_MASTER} 127.0.0.1 {primary} 1\n\
                 sentinel auth-pass {SENTINEL_MASTER} {PASSWORD}\n\
                 sentinel down-after-milliseconds {SENTINEL_MASTER} 1000\n\
                 sentinel failover-timeout {SENTINEL_MASTER} 3000\n{requirepass}",
                dir = dir.path().display(),
                primary = primary.port(),
                requirepass = sentinel_password
                    .map_or(String::new(), |pw| format!("requirepass {pw}\n")),
            ),
        )
        .unwrap();
        let sentinel = Command::new("redis-server")
            .arg(&conf)
            .arg("--sentinel")
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot spawn redis-server --sentinel ({e})"));
        let set = SentinelSet {
            primary,
            replica,
            sentinel,
            port,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let named = command_on(
                port,
                sentinel_password,
                &["SENTINEL", "get-master-addr-by-name", SENTINEL_MASTER],
            );
            let synced = match set.replica.command(&["INFO", "replication"]) {
                Resp::Bulk(Some(b)) => {
                    String::from_utf8_lossy(&b).contains("master_link_status:up")
                }
                _ => false,
            };
            if matches!(named, Ok(Resp::Array(Some(_)))) && synced {
                return set;
            }
            if Instant::now() > deadline {
                let log = std::fs::read_to_string(set._dir.path().join("sentinel.log"))
                    .unwrap_or_default();
                panic!("the Sentinel set did not come up in 20 s ({named:?}):\n{log}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The Sentinel's port.
    pub fn sentinel_port(&self) -> u16 {
        self.port
    }

    /// The meta URL of database `db` through the Sentinel, in JuiceFS's form:
    /// `redis://:PASSWORD@mymaster,127.0.0.1:PORT/db`.
    pub fn url(&self, db: u32) -> String {
        format!(
            "redis://:{PASSWORD}@{SENTINEL_MASTER},127.0.0.1:{}/{db}",
            self.port
        )
    }
}

impl Drop for SentinelSet {
    fn drop(&mut self) {
        let _ = self.sentinel.kill();
        let _ = self.sentinel.wait();
    }
}

/// A Redis Cluster of three primaries (no replicas), each a private `redis-server` on
/// 127.0.0.1 with the test password, joined by `redis-cli --cluster create`. Dropping it
/// kills the three by PID.
pub struct RedisCluster {
    /// The primaries, in the order their slots run (the first serves slot 0), then any
    /// replica [added](RedisCluster::add_replica).
    pub nodes: Vec<RedisServer>,
}

impl RedisCluster {
    /// Starts the three nodes, creates the cluster and waits (up to 30 s) until every node
    /// reports `cluster_state:ok`.
    pub fn start() -> RedisCluster {
        Self::start_with(&[])
    }

    /// As [`RedisCluster::start`], each node writing every change to its append-only file
    /// before answering (`appendfsync always`), so a node killed and
    /// [restarted](RedisServer::restart) comes back with every answered write.
    pub fn start_durable() -> RedisCluster {
        Self::start_with(&["--appendonly", "yes", "--appendfsync", "always"])
    }

    fn start_with(extra: &[&str]) -> RedisCluster {
        let nodes: Vec<RedisServer> = (0..3)
            .map(|_| RedisServer::start_cluster_node(extra))
            .collect();
        let addrs: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port()))
            .collect();
        let mut args = vec!["create"];
        args.extend(addrs.iter().map(String::as_str));
        args.extend(["--cluster-replicas", "0", "--cluster-yes"]);
        redis_cli_cluster(&args);
        let cluster = RedisCluster { nodes };
        cluster.wait_until_ok(Duration::from_secs(30));
        cluster
    }

    /// Waits until every node answers `CLUSTER INFO` with `cluster_state:ok` and knows
    /// three primaries; panics after `limit`.
    pub fn wait_until_ok(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            let ok = self.nodes.iter().all(|n| {
                matches!(n.try_command(&["CLUSTER", "INFO"]),
                Ok(Resp::Bulk(Some(b))) if {
                    let info = String::from_utf8_lossy(&b);
                    info.contains("cluster_state:ok") && info.contains("cluster_size:3")
                })
            });
            if ok {
                return;
            }
            if Instant::now() > deadline {
                panic!("the Redis Cluster is not ok after {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Adds a replica of primary `of` (a fourth node, `redis-cli --cluster add-node
    /// --cluster-slave`) and waits (up to 30 s) until it is in sync; returns its index in
    /// [`RedisCluster::nodes`]. [`RedisCluster::fail_over_to`] promotes it.
    pub fn add_replica(&mut self, of: usize) -> usize {
        let id = match self.nodes[of].command(&["CLUSTER", "MYID"]) {
            Resp::Bulk(Some(b)) => String::from_utf8(b).unwrap(),
            other => panic!("CLUSTER MYID answered {other:?}"),
        };
        let replica = RedisServer::start_cluster_node(&[]);
        let (new, existing) = (
            format!("127.0.0.1:{}", replica.port()),
            format!("127.0.0.1:{}", self.nodes[of].port()),
        );
        redis_cli_cluster(&[
            "add-node",
            &new,
            &existing,
            "--cluster-slave",
            "--cluster-master-id",
            &id,
        ]);
        self.nodes.push(replica);
        let index = self.nodes.len() - 1;
        self.wait_for_role(index, "master_link_status:up", Duration::from_secs(30));
        index
    }

    /// Promotes replica `index` (`CLUSTER FAILOVER` on it: the coordinated failover an
    /// operator or a managed service runs; its primary becomes its replica) and waits (up
    /// to 30 s) until it is the primary and every node agrees.
    pub fn fail_over_to(&self, index: usize) {
        match self.nodes[index].command(&["CLUSTER", "FAILOVER"]) {
            Resp::Simple(ok) if ok == "OK" => {}
            other => panic!("CLUSTER FAILOVER answered {other:?}"),
        }
        self.wait_for_role(index, "role:master", Duration::from_secs(30));
        self.wait_until_ok(Duration::from_secs(30));
    }

    /// Waits until node `index`'s `INFO replication` holds `line`; panics after `limit`.
    fn wait_for_role(&self, index: usize, line: &str, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            if let Resp::Bulk(Some(b)) = self.nodes[index].command(&["INFO", "replication"]) {
                if String::from_utf8_lossy(&b).contains(line) {
                    return;
                }
            }
            if Instant::now() > deadline {
                panic!("node {index} has no '{line}' after {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The meta URL of database `db` with every node as a seed, in JuiceFS's form:
    /// `redis://:PASSWORD@127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3/db`.
    pub fn url(&self, db: u32) -> String {
        let seeds: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port()))
            .collect();
        format!("redis://:{PASSWORD}@{}/{db}", seeds.join(","))
    }

    /// The index of the node serving the slot of the hash tag `{db}`, where a JuiceFS
    /// volume on database `db` keeps every key.
    pub fn owner_of(&self, db: u32) -> usize {
        self.serving(&format!("{{{db}}}setting"))
    }

    /// The index of the primary serving `key`'s slot (the others answer MOVED).
    pub fn serving(&self, key: &str) -> usize {
        self.nodes
            .iter()
            .position(|n| !matches!(n.command(&["EXISTS", key]), Resp::Error(_)))
            .expect("no node serves the slot")
    }
}

/// `redis-cli --cluster <args>` with the test password; panics with its output when it
/// fails.
fn redis_cli_cluster(args: &[&str]) {
    let out = Command::new("redis-cli")
        .args(["-a", PASSWORD, "--no-auth-warning", "--cluster"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run redis-cli --cluster {} ({e})", args[0]));
    assert!(
        out.status.success(),
        "redis-cli --cluster {} failed:\n{}{}",
        args[0],
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A free port whose Cluster bus port (+10000) is free too.
fn free_cluster_port() -> u16 {
    loop {
        let port = free_port();
        if port < 55_000 && TcpListener::bind(("127.0.0.1", port + 10_000)).is_ok() {
            return port;
        }
    }
}

fn encode(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out
}

fn read_resp<R: BufRead>(r: &mut R) -> std::io::Result<Resp> {
    let mut line = Vec::new();
    r.read_until(b'\n', &mut line)?;
    if line.len() < 3 || !line.ends_with(b"\r\n") {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "connection closed",
        ));
    }
    let body = String::from_utf8_lossy(&line[1..line.len() - 2]).into_owned();
    let bad = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_owned());
    Ok(match line[0] {
        b'+' => Resp::Simple(body),
        b'-' => Resp::Error(body),
        b':' => Resp::Integer(body.parse().map_err(|_| bad("bad integer"))?),
        b'$' => {
            let n: i64 = body.parse().map_err(|_| bad("bad bulk length"))?;
            if n < 0 {
                Resp::Bulk(None)
            } else {
                let mut buf = vec![0; n as usize + 2];
                r.read_exact(&mut buf)?;
                buf.truncate(n as usize);
                Resp::Bulk(Some(buf))
            }
        }
        b'*' => {
            let n: i64 = body.parse().map_err(|_| bad("bad array length"))?;
            if n < 0 {
                Resp::Array(None)
            } else {
                let mut items = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    items.push(read_resp(r)?);
                }
                Resp::Array(Some(items))
            }
        }
        _ => return Err(bad("unknown reply type")),
    })
}

/// Parses `cmdstat_hget:calls=3,usec=…` lines.
fn parse_commandstats(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter_map(|l| l.strip_prefix("cmdstat_"))
        .filter_map(|l| {
            let (name, rest) = l.split_once(':')?;
            let calls = rest
                .split(',')
                .find_map(|kv| kv.strip_prefix("calls="))?
                .trim()
                .parse()
                .ok()?;
            Some((name.to_owned(), calls))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resp_round_trip() {
        assert_eq!(encode(&["GET", "k"]), b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n");
        let mut r = &b"*3\r\n+OK\r\n$-1\r\n*2\r\n:7\r\n$2\r\nab\r\n-ERR x\r\n"[..];
        assert_eq!(
            read_resp(&mut r).unwrap(),
            Resp::Array(Some(vec![
                Resp::Simple("OK".into()),
                Resp::Bulk(None),
                Resp::Array(Some(vec![
                    Resp::Integer(7),
                    Resp::Bulk(Some(b"ab".to_vec()))
                ])),
            ]))
        );
        assert_eq!(read_resp(&mut r).unwrap(), Resp::Error("ERR x".into()));
        assert!(read_resp(&mut r).is_err());
    }

    #[test]
    fn commandstats_lines() {
        let s = "# Commandstats\r\ncmdstat_hget:calls=3,usec=10,usec_per_call=3.33,rejected_calls=0,failed_calls=0\r\ncmdstat_client|setname:calls=1,usec=1\r\n";
        let m = parse_commandstats(s);
        assert_eq!(m["hget"], 3);
        assert_eq!(m["client|setname"], 1);
        assert_eq!(m.len(), 2);
    }
}

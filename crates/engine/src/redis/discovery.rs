//! Where a Redis connection goes: the server of the URL, the master that Redis Sentinels
//! name (`redis://MASTER,s1,s2:26379/db`), or the primary of a Redis Cluster's slot of the
//! volume, found as go-redis finds them for `newRedisMeta` (`pkg/meta/redis.go`:
//! FailoverClient, ClusterClient). Every connection of an engine, the sessions' and the
//! shared one, goes through one [`Dialer`]; through Sentinels or a Cluster, each
//! connection asks again, so a new connection after a failover reaches the new server.
//! The bytes travel over [`super::stream`].

use super::reason::reason_of;
use super::stream::{dial_tcp, dial_unix, Stream, Tls};
use super::wire::Wire;
use crate::url::{Address, MetaUrl, Scheme, REDIS_TLS_OPTIONS};
use std::io;
use std::path::PathBuf;
use std::time::Duration;
use tokio::time::Instant;

/// Where the server listens.
#[derive(Clone)]
enum Endpoint {
    Tcp {
        host: String,
        port: u16,
    },
    Unix(PathBuf),
    /// The master Sentinels name; they are asked in order (go-redis's FailoverClient).
    Sentinel {
        master: String,
        sentinels: Vec<(String, u16)>,
        password: Option<String>,
    },
    /// The primary of a Redis Cluster that serves `slot`, the slot of every key of the
    /// volume (the hash tag `{db}`); the seeds are asked in order (go-redis's
    /// ClusterClient, `MasterForKey`).
    Cluster {
        seeds: Vec<(String, u16)>,
        slot: u16,
        user: String,
        password: Option<String>,
    },
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Tcp { host, port } => write!(f, "{host}:{port}"),
            Endpoint::Unix(p) => write!(f, "{}", p.display()),
            Endpoint::Sentinel {
                master, sentinels, ..
            } => write!(f, "master {master} of Sentinels {sentinels:?}"),
            Endpoint::Cluster { seeds, slot, .. } => {
                write!(f, "the primary of slot {slot} of the Cluster of {seeds:?}")
            }
        }
    }
}

/// Opens connections to one Redis server.
#[derive(Clone)]
pub(crate) struct Dialer {
    endpoint: Endpoint,
    tls: Option<Tls>,
}

impl std::fmt::Debug for Dialer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dialer")
            .field("endpoint", &self.endpoint)
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

impl Dialer {
    /// The dialler of `url`: its address, and for `rediss://` its TLS settings (the CA
    /// file, or the system's roots; a client certificate; the server name to check; or no
    /// check at all with `insecure-skip-verify`). A TLS option on a URL without TLS, or a
    /// file that cannot be read, is a one-line error.
    pub(crate) fn from_url(url: &MetaUrl) -> Result<Self, String> {
        let endpoint = match (url.address(), url.sentinel_master()) {
            (Address::Tcp { .. }, Some(master)) => Endpoint::Sentinel {
                master: master.to_owned(),
                sentinels: url.hosts(),
                password: url.sentinel_password().map(str::to_owned),
            },
            (Address::Tcp { .. }, None) if url.hosts().len() > 1 => Endpoint::Cluster {
                seeds: url.hosts(),
                slot: volume_slot(url.database()),
                user: url.user().to_owned(),
                password: url.password().map(str::to_owned),
            },
            (Address::Tcp { host, port }, None) => Endpoint::Tcp {
                host: host.clone(),
                port: *port,
            },
            (Address::Unix(path), _) => Endpoint::Unix(PathBuf::from(path)),
            (Address::File(_), _) => return Err("a Redis URL names a server, not a file".into()),
        };
        let tls = match (url.scheme(), &endpoint) {
            (
                Scheme::Rediss,
                Endpoint::Tcp { .. } | Endpoint::Sentinel { .. } | Endpoint::Cluster { .. },
            ) => Some(Tls::from_url(url)?),
            _ => {
                if let Some(o) = REDIS_TLS_OPTIONS.iter().find(|o| url.param(o).is_some()) {
                    return Err(format!("the option '{o}' needs a rediss:// URL (TLS)"));
                }
                None
            }
        };
        Ok(Self { endpoint, tls })
    }

    /// Whether connections go to a Redis Cluster's primary (a seed list, or
    /// [`Dialer::into_cluster`]).
    pub(crate) fn is_cluster(&self) -> bool {
        matches!(self.endpoint, Endpoint::Cluster { .. })
    }

    /// The dialler of the Cluster that `url`'s one host belongs to (it answered `CLUSTER
    /// INFO` with a `cluster_state`): that host is the only seed, as in newRedisMeta. A
    /// Unix socket is no seed: the Cluster names its nodes by TCP address.
    pub(crate) fn into_cluster(self, url: &MetaUrl) -> Result<Self, String> {
        if !matches!(url.address(), Address::Tcp { .. }) {
            return Err(
                "this server is a Redis Cluster node: reach the Cluster over TCP, through \
                 its nodes' host:port (a seed list or one of them), not a Unix socket"
                    .into(),
            );
        }
        Ok(Self {
            endpoint: Endpoint::Cluster {
                seeds: url.hosts(),
                slot: volume_slot(url.database()),
                user: url.user().to_owned(),
                password: url.password().map(str::to_owned),
            },
            tls: self.tls,
        })
    }

    /// Dials, and on TLS shakes hands, within `timeout` (through Sentinels: each Sentinel
    /// asked, and then the master, within a `timeout` of its own, as go-redis gives each
    /// dial its `DialTimeout`). TCP connections get TCP_NODELAY, as Go sets it on every
    /// TCP connection.
    pub(crate) async fn dial(&self, timeout: Duration) -> io::Result<Stream> {
        let deadline = Instant::now() + timeout;
        match &self.endpoint {
            Endpoint::Unix(path) => dial_unix(path, deadline).await,
            Endpoint::Tcp { host, port } => self.dial_tcp(host, *port, deadline).await,
            Endpoint::Sentinel {
                master,
                sentinels,
                password,
            } => {
                let (host, port) = self
                    .ask_sentinels(master, sentinels, password.as_deref(), timeout)
                    .await?;
                self.dial_tcp(&host, port, Instant::now() + timeout).await
            }
            Endpoint::Cluster {
                seeds,
                slot,
                user,
                password,
            } => {
                let (host, port) = self
                    .ask_seeds(seeds, *slot, user, password.as_deref(), timeout)
                    .await?;
                self.dial_tcp(&host, port, Instant::now() + timeout)
                    .await
                    .map_err(|e| {
                        let reason = reason_of(&e.into(), password.as_deref());
                        io::Error::other(format!(
                            "the primary of the volume's slot {slot}, {host}:{port} (as the seeds name it): {reason}"
                        ))
                    })
            }
        }
    }

    /// Dials one Cluster node by the address a MOVED answer gave, within `timeout` (TLS
    /// as for every connection of the engine).
    pub(crate) async fn dial_node(
        &self,
        host: &str,
        port: u16,
        timeout: Duration,
    ) -> io::Result<Stream> {
        self.dial_tcp(host, port, Instant::now() + timeout).await
    }

    /// A one-off connection to a Sentinel or a Cluster seed by `deadline`, after `AUTH
    /// [user] password` when a password is given.
    async fn dial_and_auth(
        &self,
        host: &str,
        port: u16,
        user: &str,
        password: Option<&str>,
        deadline: Instant,
    ) -> redis::RedisResult<Wire> {
        let stream = self.dial_tcp(host, port, deadline).await?;
        let mut con = Wire::over(stream, deadline.saturating_duration_since(Instant::now()));
        if let Some(pw) = password {
            let mut auth = redis::cmd("AUTH");
            if !user.is_empty() {
                auth.arg(user);
            }
            auth.arg(pw).query_async::<()>(&mut con).await?;
        }
        Ok(con)
    }

    /// `CLUSTER SLOTS` of each seed in turn (after `AUTH`), until one names the primary
    /// that serves `slot`.
    async fn ask_seeds(
        &self,
        seeds: &[(String, u16)],
        slot: u16,
        user: &str,
        password: Option<&str>,
        timeout: Duration,
    ) -> io::Result<(String, u16)> {
        let mut failures = Vec::new();
        for (host, port) in seeds {
            let deadline = Instant::now() + timeout;
            let ask = async {
                let mut con = self
                    .dial_and_auth(host, *port, user, password, deadline)
                    .await?;
                let slots: redis::Value = redis::cmd("CLUSTER")
                    .arg("SLOTS")
                    .query_async(&mut con)
                    .await?;
                Ok::<_, redis::RedisError>(slot_owner(&slots, slot, host))
            };
            match ask.await {
                Ok(Some(addr)) => return Ok(addr),
                Ok(None) => failures.push(format!("{host}:{port}: no primary serves slot {slot}")),
                Err(e) => failures.push(format!("{host}:{port}: {}", reason_of(&e, password))),
            }
        }
        Err(io::Error::other(format!(
            "no Cluster seed named the primary of the volume's slot ({})",
            failures.join("; ")
        )))
    }

    /// TCP to `host:port`, then TLS when the URL asks for it, by `deadline`
    /// ([`dial_tcp`]).
    async fn dial_tcp(&self, host: &str, port: u16, deadline: Instant) -> io::Result<Stream> {
        dial_tcp(self.tls.as_ref(), host, port, deadline).await
    }

    /// `SENTINEL get-master-addr-by-name` of each Sentinel in turn (after `AUTH` with the
    /// Sentinels' password), until one names the master.
    async fn ask_sentinels(
        &self,
        master: &str,
        sentinels: &[(String, u16)],
        password: Option<&str>,
        timeout: Duration,
    ) -> io::Result<(String, u16)> {
        let mut failures = Vec::new();
        let mut unknown = false;
        for (host, port) in sentinels {
            let deadline = Instant::now() + timeout;
            let ask = async {
                let mut con = self
                    .dial_and_auth(host, *port, "", password, deadline)
                    .await?;
                let addr: Option<(String, u16)> = redis::cmd("SENTINEL")
                    .arg("get-master-addr-by-name")
                    .arg(master)
                    .query_async(&mut con)
                    .await?;
                Ok::<_, redis::RedisError>(addr)
            };
            match ask.await {
                Ok(Some(addr)) => return Ok(addr),
                Ok(None) => unknown = true,
                Err(e) => failures.push(format!("{host}:{port}: {}", reason_of(&e, password))),
            }
        }
        let hint = if failures
            .iter()
            .any(|f| f.contains("NOAUTH") || f.contains("WRONGPASS"))
        {
            "; the Sentinels' own password comes from SENTINEL_PASSWORD"
        } else {
            ""
        };
        Err(io::Error::other(if unknown {
            format!("no Sentinel knows a master named '{master}'")
        } else {
            format!("no Sentinel answered ({}){hint}", failures.join("; "))
        }))
    }
}

/// The hash slot of every key of a Cluster volume: JuiceFS prefixes each with the hash
/// tag `{db}` (newRedisMeta), so the slot is CRC16-XMODEM of `db` mod 16384.
pub(crate) fn volume_slot(db: &str) -> u16 {
    const CRC16: crc::Crc<u16> = crc::Crc::<u16>::new(&crc::CRC_16_XMODEM);
    CRC16.checksum(db.as_bytes()) % 16384
}

/// The primary's address in a `CLUSTER SLOTS` answer for `slot` (`[start, end, [host,
/// port, id, …], replicas…]` per range). An empty, `?` or NULL host means the node asked
/// (`seed`).
fn slot_owner(slots: &redis::Value, slot: u16, seed: &str) -> Option<(String, u16)> {
    use redis::Value;
    let int = |v: &Value| match v {
        Value::Int(i) => Some(*i),
        _ => None,
    };
    let Value::Array(ranges) = slots else {
        return None;
    };
    ranges.iter().find_map(|range| {
        let Value::Array(r) = range else { return None };
        let (start, end) = (int(r.first()?)?, int(r.get(1)?)?);
        if !(start..=end).contains(&i64::from(slot)) {
            return None;
        }
        let Value::Array(primary) = r.get(2)? else {
            return None;
        };
        // A NULL endpoint (`cluster-preferred-endpoint-type unknown-endpoint`) is the
        // node asked, as "" and "?" are.
        let host = match primary.first()? {
            Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
            Value::SimpleString(s) => s.clone(),
            Value::Nil => String::new(),
            _ => return None,
        };
        let host = if host.is_empty() || host == "?" {
            seed.to_owned()
        } else {
            host
        };
        Some((host, u16::try_from(int(primary.get(1)?)?).ok()?))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use redis::Value;

    #[test]
    fn the_volume_slot_is_the_hash_tag_slot() {
        // As `CLUSTER KEYSLOT {1}i1` answers (Redis's own test vectors: "123456789" →
        // 0x31C3 is CRC16-XMODEM's check value).
        assert_eq!(volume_slot("123456789"), 0x31C3);
        assert_eq!(volume_slot("1"), 9842);
        assert_eq!(volume_slot("0"), 13907);
    }

    #[test]
    fn the_primary_of_a_slot_is_found_and_an_empty_host_is_the_seed() {
        let node = |h: &str, p: i64| {
            Value::Array(vec![
                Value::BulkString(h.as_bytes().to_vec()),
                Value::Int(p),
                Value::BulkString(b"id".to_vec()),
            ])
        };
        let slots = Value::Array(vec![
            Value::Array(vec![
                Value::Int(0),
                Value::Int(5460),
                node("10.0.0.1", 7000),
            ]),
            Value::Array(vec![
                Value::Int(5461),
                Value::Int(10922),
                node("", 7001),
                node("10.0.0.9", 7009),
            ]),
        ]);
        assert_eq!(
            slot_owner(&slots, 0, "seed"),
            Some(("10.0.0.1".into(), 7000))
        );
        assert_eq!(
            slot_owner(&slots, 9842, "seed"),
            Some(("seed".into(), 7001))
        );
        assert_eq!(slot_owner(&slots, 16000, "seed"), None);
        assert_eq!(slot_owner(&Value::Nil, 1, "seed"), None);
        for unknown in [Value::Nil, Value::SimpleString("?".into())] {
            let slots = Value::Array(vec![Value::Array(vec![
                Value::Int(0),
                Value::Int(16383),
                Value::Array(vec![unknown, Value::Int(7002)]),
            ])]);
            assert_eq!(
                slot_owner(&slots, 9842, "seed"),
                Some(("seed".into(), 7002))
            );
        }
    }
}

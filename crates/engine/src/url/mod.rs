//! Meta URLs in JuiceFS syntax, with JuiceFS's password sources and redaction.
//!
//! | scheme | form |
//! |---|---|
//! | Redis | `redis://[user][:pass@]host[:port][/db]`, `rediss://…[?tls options]`, `host:port/db`, or `unix://[user][:pass@]/path/redis.sock[?db=N]` |
//! | MySQL / MariaDB | `mysql://user[:pass]@(host:port)/db[?params]` (also `tcp(…)`, `unix(/sock)`) |
//! | PostgreSQL | `postgres://user[:pass]@host[:port]/db[?sslmode=disable]`, or `postgres://user[:pass]@/db?host=/socket/dir[&port=N]` |
//! | SQLite | `sqlite3://path.db` or `sqlite3:///abs/path.db` |
//!
//! When the URL carries no password, Redis reads `REDIS_PASSWORD`, then `META_PASSWORD`,
//! then the file named by `META_PASSWORD_FILE`; MySQL and PostgreSQL read `META_PASSWORD`,
//! then `META_PASSWORD_FILE`, as JuiceFS does. [`MetaUrl`] never prints a password: its
//! `Display` and `Debug` show `****` instead.

use crate::{MetaError, Result};
use std::fmt;

/// Which engine family a URL names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scheme {
    /// `redis://`.
    Redis,
    /// `rediss://` (TLS).
    Rediss,
    /// `unix://` (Redis on a Unix socket).
    Unix,
    /// `mysql://` (MySQL or MariaDB).
    Mysql,
    /// `postgres://`.
    Postgres,
    /// `sqlite3://`.
    Sqlite,
    /// `etcd://` (a TKV store).
    Etcd,
    /// `tikv://` (a TKV store reached through its PD endpoints).
    Tikv,
    /// `memkv://` (metabench's in-process TKV store).
    Memkv,
    /// `fdb://` (FoundationDB, with the `fdb` cargo feature).
    Fdb,
}

impl Scheme {
    /// The URL scheme as written.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Redis => "redis",
            Self::Rediss => "rediss",
            Self::Unix => "unix",
            Self::Mysql => "mysql",
            Self::Postgres => "postgres",
            Self::Sqlite => "sqlite3",
            Self::Etcd => "etcd",
            Self::Tikv => "tikv",
            Self::Memkv => "memkv",
            Self::Fdb => "fdb",
        }
    }
}

/// Where a server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Address {
    /// TCP host and port (default port filled in).
    Tcp {
        /// Host name or address.
        host: String,
        /// Port.
        port: u16,
    },
    /// A Unix socket path (MySQL `unix(/path)`, Redis `unix:///path`).
    Unix(String),
    /// A local file (SQLite).
    File(String),
}

/// A parsed meta URL. Holds the password (if any) but never displays it.
#[derive(Clone, PartialEq, Eq)]
pub struct MetaUrl {
    scheme: Scheme,
    user: String,
    password: Option<String>,
    address: Address,
    database: String,
    query: Vec<(String, String)>,
    /// Further hosts after the first (etcd endpoint lists, Redis Sentinels).
    more_hosts: Vec<(String, u16)>,
    /// The master a Redis Sentinel URL names; its Sentinels are [`MetaUrl::hosts`].
    sentinel_master: Option<String>,
    /// The Sentinels' password (`SENTINEL_PASSWORD`, as JuiceFS reads it). Never print it.
    sentinel_password: Option<String>,
}

impl MetaUrl {
    /// Parses a URL, taking a missing password from the environment as JuiceFS does.
    pub fn parse(s: &str) -> Result<Self> {
        Self::parse_with_env(s, |k| std::env::var(k).ok())
    }

    /// Parses a URL with an explicit environment lookup (for tests).
    pub fn parse_with_env(s: &str, env: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let s = s.trim();
        if s.is_empty() {
            return Err(bad("empty URL"));
        }
        let owned;
        let s = if s.contains("://") {
            s
        } else {
            owned = format!("redis://{s}");
            &owned
        };
        let (scheme, rest) = s.split_once("://").expect("checked above");
        let mut url = match scheme {
            "redis" | "rediss" => parse_redis(scheme, rest)?,
            "unix" => parse_redis_unix(rest)?,
            "mysql" => parse_mysql(rest)?,
            "postgres" | "postgresql" => parse_postgres(rest)?,
            "sqlite3" => parse_sqlite(rest)?,
            "etcd" => parse_etcd(rest)?,
            "tikv" => parse_tikv(rest)?,
            "memkv" => parse_memkv(rest)?,
            "fdb" => parse_fdb(rest)?,
            "badger" | "keydb" | "oceanbase" | "sqlite" => {
                return Err(bad(&format!(
                    "the '{scheme}' engine is not supported yet (supported: redis, mysql, postgres, sqlite3, etcd, tikv, memkv)"
                )))
            }
            other => return Err(bad(&format!("unknown scheme '{other}://'"))),
        };
        if url.sentinel_master.is_some() {
            url.sentinel_password = env("SENTINEL_PASSWORD").filter(|p| !p.is_empty());
        }
        if url.password.is_none() {
            let vars: &[&str] = match url.scheme {
                Scheme::Redis | Scheme::Rediss | Scheme::Unix => {
                    &["REDIS_PASSWORD", "META_PASSWORD"]
                }
                Scheme::Mysql | Scheme::Postgres | Scheme::Etcd => &["META_PASSWORD"],
                Scheme::Sqlite | Scheme::Memkv | Scheme::Fdb | Scheme::Tikv => &[],
            };
            url.password = vars.iter().find_map(|v| env(v).filter(|p| !p.is_empty()));
            if url.password.is_none() && !vars.is_empty() {
                if let Some(file) = env("META_PASSWORD_FILE").filter(|f| !f.is_empty()) {
                    let pw = std::fs::read_to_string(&file)
                        .map_err(|e| bad(&format!("cannot read META_PASSWORD_FILE {file}: {e}")))?;
                    url.password = Some(pw.trim().to_owned());
                }
            }
        }
        Ok(url)
    }

    /// The engine family.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// User name (may be empty).
    pub fn user(&self) -> &str {
        &self.user
    }

    /// Password, if any. Never print it.
    pub fn password(&self) -> Option<&str> {
        self.password.as_deref()
    }

    /// Where the server is.
    pub fn address(&self) -> &Address {
        &self.address
    }

    /// Database: the Redis DB number as text, the SQL database name, or the SQLite path.
    pub fn database(&self) -> &str {
        &self.database
    }

    /// Query parameters in order.
    pub fn query(&self) -> &[(String, String)] {
        &self.query
    }

    /// The value of one query parameter.
    pub fn param(&self, key: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The master a Redis Sentinel URL (`redis://:pw@MASTER,s1:26379,s2/1`) names.
    pub fn sentinel_master(&self) -> Option<&str> {
        self.sentinel_master.as_deref()
    }

    /// The Sentinels' own password (`SENTINEL_PASSWORD`), if any. Never print it.
    pub fn sentinel_password(&self) -> Option<&str> {
        self.sentinel_password.as_deref()
    }

    /// Every host of the URL with its port, the first one first (etcd endpoint lists,
    /// Redis Sentinels).
    pub fn hosts(&self) -> Vec<(String, u16)> {
        let mut v = Vec::new();
        if let Address::Tcp { host, port } = &self.address {
            v.push((host.clone(), *port));
        }
        v.extend(self.more_hosts.iter().cloned());
        v
    }

    /// Every `host:port`, an IPv6 host in brackets.
    pub fn host_ports(&self) -> Vec<String> {
        self.hosts()
            .into_iter()
            .map(|(host, port)| {
                if host.contains(':') {
                    format!("[{host}]:{port}")
                } else {
                    format!("{host}:{port}")
                }
            })
            .collect()
    }

    /// Whether the engine runs inside this process (SQLite, memkv): a call waits on no
    /// socket.
    pub fn in_process(&self) -> bool {
        matches!(self.address, Address::File(_)) || self.scheme == Scheme::Memkv
    }

    /// Whether the engine's server is a process on this machine: a Unix socket, or TCP
    /// hosts that are all loopback (`localhost`, 127.0.0.0/8, `::1`). An in-process engine
    /// (SQLite, memkv) is not: it runs on the calling threads. A Redis Sentinel URL names
    /// its Sentinels, not the master, and is never taken for one.
    pub fn server_on_this_host(&self) -> bool {
        let loopback = |host: &str| {
            host.eq_ignore_ascii_case("localhost")
                || host
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        };
        match &self.address {
            Address::Unix(_) => true,
            Address::File(_) => false,
            Address::Tcp { .. } => {
                // memkv takes a host but runs in process.
                !self.in_process()
                    && self.sentinel_master.is_none()
                    && self.hosts().iter().all(|(host, _)| loopback(host))
            }
        }
    }

    /// Where the engine's server runs, seen from this process, as results record it:
    /// `in-process` (SQLite, memkv), `local socket` (a Unix socket), `loopback` (every
    /// host a loopback address), `this host (<address>)` (an address of one of this
    /// machine's interfaces), `remote`, several of them joined by ` and ` (an etcd
    /// cluster whose members are here and elsewhere), or `unknown (<why>)`. A host name is
    /// resolved (once: call it outside any timed window); an address is this machine's
    /// when a socket can be bound to it.
    pub fn location(&self) -> String {
        if self.in_process() {
            return "in-process".to_owned();
        }
        match &self.address {
            Address::Unix(_) => return "local socket".to_owned(),
            Address::File(_) => return "in-process".to_owned(),
            Address::Tcp { .. } => {}
        }
        if self.sentinel_master.is_some() {
            return "unknown (a Sentinel URL names its Sentinels, not the master)".to_owned();
        }
        let mut places: Vec<String> = Vec::new();
        for (host, port) in self.hosts() {
            let place = host_location(&host, port);
            if !places.contains(&place) {
                places.push(place);
            }
        }
        places.join(" and ")
    }

    /// The URL with the password shown as `****`, as JuiceFS logs it.
    pub fn redacted(&self) -> String {
        let mut s = format!("{}://", self.scheme.as_str());
        let cred = match (&self.user, &self.password) {
            (u, Some(_)) => format!("{u}:****@"),
            (u, None) if !u.is_empty() => format!("{u}@"),
            _ => String::new(),
        };
        match (&self.address, self.scheme) {
            (Address::Tcp { host, port }, Scheme::Mysql) => {
                s += &format!("{cred}({host}:{port})/{}", self.database)
            }
            (Address::Unix(p), Scheme::Unix) => s += &format!("{cred}{p}"),
            // The socket directory is in the query (`?host=/dir`).
            (Address::Unix(_), Scheme::Postgres) => s += &format!("{cred}/{}", self.database),
            (Address::Unix(p), _) => s += &format!("{cred}unix({p})/{}", self.database),
            (Address::Tcp { .. }, _) => {
                let hosts = self.host_ports();
                let master = self
                    .sentinel_master
                    .as_ref()
                    .map_or(String::new(), |m| format!("{m},"));
                s += &format!("{cred}{master}{}/{}", hosts.join(","), self.database)
            }
            (Address::File(p), _) => s += p,
        }
        if !self.query.is_empty() {
            let q: Vec<String> = self.query.iter().map(|(k, v)| format!("{k}={v}")).collect();
            s += "?";
            s += &q.join("&");
        }
        s
    }
}

impl fmt::Display for MetaUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl fmt::Debug for MetaUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MetaUrl({})", self.redacted())
    }
}

fn bad(why: &str) -> MetaError {
    MetaError::BadUrl(why.to_owned())
}

fn decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

fn split_query(rest: &str) -> (&str, Vec<(String, String)>) {
    match rest.split_once('?') {
        None => (rest, Vec::new()),
        Some((head, q)) => (
            head,
            q.split('&')
                .filter(|p| !p.is_empty())
                .map(|p| match p.split_once('=') {
                    Some((k, v)) => (decode(k), decode(v)),
                    None => (decode(p), String::new()),
                })
                .collect(),
        ),
    }
}

/// Splits `user:pass@rest` at the last `@` before the host part.
fn split_userinfo(s: &str) -> (String, Option<String>, &str) {
    match s.rfind('@') {
        None => (String::new(), None, s),
        Some(at) => {
            let (info, host) = (&s[..at], &s[at + 1..]);
            match info.split_once(':') {
                Some((u, p)) => (decode(u), Some(decode(p)), host),
                None => (decode(info), None, host),
            }
        }
    }
}

fn parse_host_port(hp: &str, default_port: u16) -> Result<(String, u16)> {
    if hp.is_empty() {
        return Err(bad("no host"));
    }
    if hp.contains(',') {
        return Err(bad("several hosts are not supported here"));
    }
    let (host, port) = if let Some(v6) = hp.strip_prefix('[') {
        let (h, tail) = v6
            .split_once(']')
            .ok_or_else(|| bad("unclosed '[' in host"))?;
        (h.to_owned(), tail.strip_prefix(':'))
    } else {
        match hp.rsplit_once(':') {
            Some((h, p)) => (h.to_owned(), Some(p)),
            None => (hp.to_owned(), None),
        }
    };
    if host.is_empty() || host.contains(['/', ' ', '(', ')']) {
        return Err(bad(&format!("bad host '{host}'")));
    }
    let port = match port {
        None | Some("") => default_port,
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| bad(&format!("bad port '{p}'")))?,
    };
    Ok((host, port))
}

/// The query options of a Redis URL that metabench honours: on `rediss://`, JuiceFS's
/// TLS options (`newRedisMeta`); on `unix://`, the database. Any other option (JuiceFS's
/// timeouts and retries, its client-side cache, go-redis's pool settings) would change
/// what is measured without metabench modelling it, so it is refused.
pub(crate) const REDIS_TLS_OPTIONS: [&str; 5] = [
    "tls-cert-file",
    "tls-key-file",
    "tls-ca-cert-file",
    "tls-server-name",
    "insecure-skip-verify",
];

fn check_redis_options(query: &[(String, String)], also: &[&str]) -> Result<()> {
    match query
        .iter()
        .find(|(k, _)| !REDIS_TLS_OPTIONS.contains(&k.as_str()) && !also.contains(&k.as_str()))
    {
        Some((k, _)) => Err(bad(&format!(
            "metabench does not honour the Redis URL option '{k}' (it takes {} on \
             rediss://, and db on unix://)",
            REDIS_TLS_OPTIONS.join(", ")
        ))),
        None => Ok(()),
    }
}

/// The database number as go-redis reads it (`strconv.Atoi`): `01` and `+1` are 1, which
/// is what `SELECT` gets and what a Cluster's hash tag `{1}` holds.
fn redis_db(db: &str) -> Result<String> {
    match db.parse::<u32>() {
        Ok(n) => Ok(n.to_string()),
        Err(_) => Err(bad(&format!("Redis database must be a number, got '{db}'"))),
    }
}

/// `unix://[user][:pass@]/path/to/redis.sock[?db=N]`, as go-redis's `ParseURL` reads it.
fn parse_redis_unix(rest: &str) -> Result<MetaUrl> {
    let (rest, query) = split_query(rest);
    check_redis_options(&query, &["db"])?;
    let (user, password, path) = split_userinfo(rest);
    if !path.starts_with('/') || path.len() < 2 {
        return Err(bad(
            "Redis socket URLs look like unix:///path/to/redis.sock?db=1",
        ));
    }
    let db = query
        .iter()
        .find(|(k, _)| k == "db")
        .map_or("0", |(_, v)| v.as_str());
    let db = redis_db(db)?;
    Ok(MetaUrl::server(
        Scheme::Unix,
        (user, password),
        Address::Unix(decode(path)),
        &db,
        query,
    ))
}

fn parse_redis(scheme: &str, rest: &str) -> Result<MetaUrl> {
    let (rest, query) = split_query(rest);
    check_redis_options(&query, &[])?;
    let (authority, path) = match rest.split_once('/') {
        Some((a, p)) => (a, p),
        None => (rest, ""),
    };
    let (user, password, hp) = split_userinfo(authority);
    let db = redis_db(if path.is_empty() { "0" } else { path })?;
    let scheme = if scheme == "rediss" {
        Scheme::Rediss
    } else {
        Scheme::Redis
    };
    // newRedisMeta: several hosts are Sentinels when the first ',' comes before the first
    // ':' (`MASTER,s1,s2:26379`), else a Cluster's seed list.
    let (master, hosts) = match (hp.find(','), hp.find(':')) {
        (None, _) => (None, vec![parse_host_port(hp, 6379)?]),
        (Some(comma), Some(colon)) if comma < colon => {
            let mut parts = hp.split(',');
            let master = parts.next().unwrap_or_default();
            let addrs: Vec<&str> = parts.collect();
            // Sentinels without a port take the last one's, or 26379.
            let default_port = addrs
                .last()
                .and_then(|a| a.rsplit_once(':'))
                .and_then(|(_, p)| p.parse().ok())
                .unwrap_or(26379);
            let hosts = addrs
                .iter()
                .map(|a| parse_host_port(a, default_port))
                .collect::<Result<Vec<_>>>()?;
            (Some(decode(master)), hosts)
        }
        // A Redis Cluster's seed list (go-redis's ClusterOptions.Addrs).
        _ => (
            None,
            hp.split(',')
                .map(|a| parse_host_port(a, 6379))
                .collect::<Result<Vec<_>>>()?,
        ),
    };
    let mut url = MetaUrl::cluster(scheme, (user, password), hosts, &db, query)?;
    url.sentinel_master = master;
    Ok(url)
}

fn parse_mysql(rest: &str) -> Result<MetaUrl> {
    let (rest, query) = split_query(rest);
    let open = rest
        .find('(')
        .ok_or_else(|| bad("MySQL URLs look like mysql://user:pass@(host:port)/db"))?;
    let close = rest[open..]
        .find(')')
        .map(|c| c + open)
        .ok_or_else(|| bad("unclosed '(' in MySQL address"))?;
    let head = &rest[..open];
    let at = head
        .rfind('@')
        .ok_or_else(|| bad("MySQL URLs need a user: mysql://user:pass@(host:port)/db"))?;
    let (user, password, _) = split_userinfo(&head[..=at]);
    let proto = &head[at + 1..];
    let addr = &rest[open + 1..close];
    let address = match proto {
        "" | "tcp" => {
            let (host, port) = parse_host_port(addr, 3306)?;
            Address::Tcp { host, port }
        }
        "unix" => Address::Unix(addr.to_owned()),
        other => return Err(bad(&format!("unknown MySQL protocol '{other}'"))),
    };
    let db = rest[close + 1..]
        .strip_prefix('/')
        .filter(|d| !d.is_empty())
        .ok_or_else(|| bad("MySQL URL has no database name"))?;
    if user.is_empty() {
        return Err(bad("MySQL URL has no user"));
    }
    Ok(MetaUrl::server(
        Scheme::Mysql,
        (user, password),
        address,
        db,
        query,
    ))
}

fn parse_postgres(rest: &str) -> Result<MetaUrl> {
    let (rest, query) = split_query(rest);
    let (authority, db) = rest
        .split_once('/')
        .ok_or_else(|| bad("PostgreSQL URLs look like postgres://user:pass@host:port/db"))?;
    if db.is_empty() {
        return Err(bad("PostgreSQL URL has no database name"));
    }
    let (user, password, hp) = split_userinfo(authority);
    // libpq's form for a Unix socket: no host in the authority, the socket's directory as
    // `?host=/dir` (and the port, which names the socket file, as `?port=N`).
    let socket_dir = query
        .iter()
        .find(|(k, _)| k == "host")
        .map(|(_, v)| v.as_str())
        .filter(|h| h.starts_with('/'));
    // pgx lets `?host=` and `?port=` override the URL's host; metabench takes them only
    // for a socket, and refuses them beside a host rather than measure another server.
    if !hp.is_empty() {
        if let Some((k, _)) = query.iter().find(|(k, _)| k == "host" || k == "port") {
            return Err(bad(&format!(
                "give the server either as host:port or as ?host=/socket/dir, not both \
                 (the URL has a host and ?{k}=)"
            )));
        }
    }
    let address = match (hp, socket_dir) {
        ("", Some(dir)) => Address::Unix(dir.to_owned()),
        ("", None) => {
            return Err(bad(
                "no host (give host:port, or a socket directory as ?host=/var/run/postgresql)",
            ))
        }
        _ => {
            let (host, port) = parse_host_port(hp, 5432)?;
            Address::Tcp { host, port }
        }
    };
    Ok(MetaUrl::server(
        Scheme::Postgres,
        (user, password),
        address,
        db,
        query,
    ))
}

fn parse_sqlite(rest: &str) -> Result<MetaUrl> {
    let (path, query) = split_query(rest);
    if path.is_empty() {
        return Err(bad("SQLite URLs look like sqlite3://path/to/file.db"));
    }
    Ok(MetaUrl::local(Scheme::Sqlite, path, query))
}

impl MetaUrl {
    /// A URL of an engine reached over the network at `address`, as `user` with
    /// `password` (an empty one counts as none), on `database`.
    fn server(
        scheme: Scheme,
        (user, password): (String, Option<String>),
        address: Address,
        database: &str,
        query: Vec<(String, String)>,
    ) -> Self {
        MetaUrl {
            scheme,
            user,
            password: password.filter(|p| !p.is_empty()),
            address,
            database: database.to_owned(),
            query,
            more_hosts: Vec::new(),
            sentinel_master: None,
            sentinel_password: None,
        }
    }

    /// A URL of a server reached at the first of `hosts`, the others kept as its
    /// cluster's (or Sentinels') other hosts; "no host" when there is none.
    fn cluster(
        scheme: Scheme,
        userinfo: (String, Option<String>),
        hosts: Vec<(String, u16)>,
        database: &str,
        query: Vec<(String, String)>,
    ) -> Result<Self> {
        let mut hosts = hosts.into_iter();
        let (host, port) = hosts.next().ok_or_else(|| bad("no host"))?;
        let address = Address::Tcp { host, port };
        let mut url = Self::server(scheme, userinfo, address, database, query);
        url.more_hosts = hosts.collect();
        Ok(url)
    }

    /// A URL of an engine with no server: `path` names its file (or in-process store),
    /// and is its database too.
    fn local(scheme: Scheme, path: &str, query: Vec<(String, String)>) -> Self {
        MetaUrl {
            scheme,
            user: String::new(),
            password: None,
            address: Address::File(path.to_owned()),
            database: path.to_owned(),
            query,
            more_hosts: Vec::new(),
            sentinel_master: None,
            sentinel_password: None,
        }
    }
}

/// `etcd://[user:pass@]h1[:2379][,h2[:2379]…][/name][?tls options]`; the database is the
/// path without its leading `/` (the key prefix is `/name` + 0xFD).
fn parse_etcd(rest: &str) -> Result<MetaUrl> {
    parse_endpoints(Scheme::Etcd, rest, None)
}

/// `tikv://pd1[:2379][,pd2[:2379]…][/name][?tls options]`: PD endpoints; the database is
/// the path without its leading `/` (the key prefix is `name` + 0xFD). PD takes no password.
fn parse_tikv(rest: &str) -> Result<MetaUrl> {
    let refusal = "tikv URLs carry no user or password: tikv://pd1:2379[,pd2]/name";
    parse_endpoints(Scheme::Tikv, rest, Some(refusal))
}

/// The form etcd and TiKV URLs share: `[user:pass@]h1[:2379][,h2[:2379]…][/name][?query]`,
/// the database the path without its leading `/`. `refuse_userinfo`, when given, is the
/// error for an authority with a user or password in it.
fn parse_endpoints(scheme: Scheme, rest: &str, refuse_userinfo: Option<&str>) -> Result<MetaUrl> {
    let (rest, query) = split_query(rest);
    let (authority, path) = match rest.split_once('/') {
        Some((a, p)) => (a, p),
        None => (rest, ""),
    };
    if let Some(refusal) = refuse_userinfo.filter(|_| authority.contains('@')) {
        return Err(bad(refusal));
    }
    let (user, password, hps) = split_userinfo(authority);
    let hosts = hps
        .split(',')
        .map(|hp| parse_host_port(hp, 2379))
        .collect::<Result<Vec<_>>>()?;
    MetaUrl::cluster(scheme, (user, password), hosts, path, query)
}

/// `memkv://name`: an in-process store shared by every session of this process that
/// names it (the name may be empty).
fn parse_memkv(rest: &str) -> Result<MetaUrl> {
    let (name, query) = split_query(rest);
    Ok(MetaUrl::local(Scheme::Memkv, name, query))
}

/// `fdb://path/to/fdb.cluster?prefix=NAME`: the database is the cluster file path (empty:
/// FoundationDB's default cluster file).
fn parse_fdb(rest: &str) -> Result<MetaUrl> {
    let (path, query) = split_query(rest);
    Ok(MetaUrl::local(Scheme::Fdb, path, query))
}

/// Where `host` (port `port`) is, seen from this machine ([`MetaUrl::location`]).
fn host_location(host: &str, port: u16) -> String {
    use std::net::ToSocketAddrs;
    let addrs: Vec<std::net::IpAddr> = match (host, port).to_socket_addrs() {
        Ok(addrs) => addrs.map(|a| a.ip()).collect(),
        Err(e) => return format!("unknown (cannot resolve {host}: {e})"),
    };
    if addrs.is_empty() {
        return format!("unknown ({host} resolves to no address)");
    }
    if addrs.iter().all(std::net::IpAddr::is_loopback) {
        return "loopback".to_owned();
    }
    // An address a socket can be bound to belongs to one of this machine's interfaces.
    match addrs
        .iter()
        .find(|ip| std::net::UdpSocket::bind((**ip, 0)).is_ok())
    {
        Some(ip) => format!("this host ({ip})"),
        None => "remote".to_owned(),
    }
}

#[cfg(test)]
mod tests;

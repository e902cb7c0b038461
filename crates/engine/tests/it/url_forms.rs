//! The meta URL forms of production, against real servers: Redis over TLS (`rediss://`
//! with JuiceFS's TLS options: a CA file, a client certificate, a server name, or no
//! check), over its Unix socket (`unix:///path?db=N`) and through a Sentinel
//! (`redis://:pw@MASTER,sentinel:port/db`); PostgreSQL and MariaDB over TLS and over their
//! Unix sockets; etcd over TLS with a client certificate. `juicefs` formats and reads
//! through the same URL, so each form is proven both ways; bad TLS settings and options
//! metabench cannot honour are one-line errors.

use metabench_engine::Address;
use metabench_engine::{Ctx, Engine, MetaError, MetaUrl, SessionOptions, VolumeState};
use metabench_schema::ROOT_INODE;
use metabench_testkit::{
    dump_tree, fresh_database, juicefs_dump, juicefs_format_with, temp_dir, Kind, RedisServer,
    Resp, SentinelSet, TestCerts,
};
use std::path::Path;
use std::sync::Arc;

fn q(key: &str, path: &Path) -> String {
    format!("{key}={}", path.display())
}

pub(crate) async fn open(url: &str) -> Result<Arc<dyn Engine>, MetaError> {
    metabench_engine::open(&MetaUrl::parse(url)?).await
}

/// `juicefs format` through `url`; metabench finds that volume through the same URL and
/// creates a file in a directory, which `juicefs dump` through the URL then lists.
pub(crate) async fn both_ways(url: &str, name: &str) {
    let bucket = temp_dir();
    juicefs_format_with(url, name, bucket.path(), &["--trash-days", "0"]);
    let engine = open(url).await.unwrap();
    match engine.probe().await.unwrap() {
        VolumeState::Volume(f) => assert_eq!(f.name, name),
        other => panic!("{other:?}"),
    }
    let mut s = engine.session(&SessionOptions::default()).await.unwrap();
    let ctx = Ctx::root();
    let (d, _) = s.mkdir(&ctx, ROOT_INODE, b"d", 0o755, 0o022).await.unwrap();
    s.create(&ctx, d, b"f", 0o644, 0o022).await.unwrap();
    s.close().await.unwrap();
    let tree = dump_tree(&juicefs_dump(url));
    assert!(tree.contains_key("/d/f"), "{:?}", tree.keys());
    let cluster_notes = engine
        .fidelity_notes()
        .iter()
        .filter(|n| n.starts_with("Redis Cluster: "))
        .count();
    let is_cluster = engine
        .server_info()
        .await
        .unwrap()
        .settings
        .contains_key("cluster");
    assert_eq!(cluster_notes, usize::from(is_cluster), "{url}");
}

#[tokio::test]
async fn tls_with_the_ca_and_a_client_certificate_works_both_ways_with_juicefs() {
    let certs = TestCerts::generate();
    let server = RedisServer::start_tls(&certs);
    let (cert, key) = certs.client();
    let url = server.tls_url(
        1,
        &format!(
            "?{}&{}&{}",
            q("tls-ca-cert-file", &certs.ca()),
            q("tls-cert-file", &cert),
            q("tls-key-file", &key)
        ),
    );
    both_ways(&url, "tls-volume").await;
    // TLS options on a URL without TLS are refused, not ignored.
    let plain = url.replacen("rediss://", "redis://", 1);
    let err = open(&plain).await.err().unwrap();
    assert!(err.to_string().contains("needs a rediss:// URL"), "{err}");
}

#[tokio::test]
async fn a_wrong_ca_or_server_name_is_one_line_and_insecure_skip_verify_takes_any() {
    let certs = TestCerts::generate();
    let server = RedisServer::start_tls(&certs);
    let ca = q("tls-ca-cert-file", &certs.ca());
    let wrong_ca = q("tls-ca-cert-file", &certs.other_ca());
    for (query, want) in [
        (format!("?{wrong_ca}"), "UnknownIssuer"),
        // As in newRedisMeta, a bare insecure-skip-verify (an empty value) still checks.
        (format!("?{wrong_ca}&insecure-skip-verify"), "UnknownIssuer"),
        (
            format!("?{ca}&tls-server-name=db.example.com"),
            "certificate not valid for name \"db.example.com\"",
        ),
        (
            "?tls-ca-cert-file=/nonexistent/ca.pem".to_owned(),
            "cannot read tls-ca-cert-file /nonexistent/ca.pem",
        ),
        (
            format!("?{ca}&{}", q("tls-cert-file", &certs.client().0)),
            "tls-cert-file and tls-key-file go together",
        ),
    ] {
        let url = server.tls_url(1, &query);
        let err = open(&url).await.err().unwrap();
        let text = err.to_string();
        assert!(text.contains(want), "{query}: {text}");
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(!text.contains(server.password()), "{text}");
    }
    // The server name the certificate holds, or no check at all, go through.
    for query in [
        format!("?{ca}&tls-server-name=localhost"),
        format!("?{wrong_ca}&insecure-skip-verify=true"),
    ] {
        let engine = open(&server.tls_url(1, &query)).await.unwrap();
        assert_eq!(engine.probe().await.unwrap(), VolumeState::Empty, "{query}");
    }
}

#[tokio::test]
async fn a_unix_socket_works_both_ways_with_juicefs() {
    let server = RedisServer::start();
    let url = server.unix_url(3);
    assert_eq!(
        MetaUrl::parse(&url).unwrap().to_string(),
        format!("unix://:****@{}?db=3", server.socket().display())
    );
    both_ways(&url, "socket-volume").await;
    // The volume is in database 3, where the TCP URL finds it too.
    let engine = open(&server.url(3)).await.unwrap();
    assert!(matches!(
        engine.probe().await.unwrap(),
        VolumeState::Volume(_)
    ));
}

/// Through a Sentinel, metabench and juicefs reach the primary it names, and write there
/// (the replica copies it); an unknown master name, or no Sentinel listening, is one line.
#[tokio::test]
async fn a_sentinel_names_the_primary_both_ways_with_juicefs() {
    let set = SentinelSet::start();
    both_ways(&set.url(2), "sentinel-volume").await;
    let keyspace = |server: &RedisServer| match server.command(&["INFO", "keyspace"]) {
        Resp::Bulk(Some(b)) => String::from_utf8_lossy(&b).into_owned(),
        other => panic!("{other:?}"),
    };
    assert!(
        keyspace(&set.primary).contains("db2:keys="),
        "{}",
        keyspace(&set.primary)
    );
    let unknown = set.url(2).replace("mymaster,", "nosuchmaster,");
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let nobody = format!("redis://:n0b0dy-s3cret@mymaster,127.0.0.1:{closed}/2");
    for (url, want) in [
        (
            unknown,
            "no Sentinel knows a master named 'nosuchmaster'".to_owned(),
        ),
        (
            nobody,
            format!("no Sentinel answered (127.0.0.1:{closed}: connection refused"),
        ),
    ] {
        let err = open(&url).await.err().unwrap().to_string();
        assert!(err.contains(&want), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(!err.contains(set.primary.password()), "{err}");
        assert!(!err.contains("n0b0dy-s3cret"), "{err}");
    }
}

/// A Sentinel with a password of its own: metabench takes it from `SENTINEL_PASSWORD`, as
/// JuiceFS does; without it, the one-line error names the refusal, never a password.
#[tokio::test]
async fn a_sentinel_password_comes_from_sentinel_password() {
    let secret = "s3ntinel-only-pw";
    let set = SentinelSet::start_with_password(secret);
    let with = |value: Option<&'static str>| {
        move |k: &str| {
            (k == "SENTINEL_PASSWORD")
                .then_some(value)
                .flatten()
                .map(str::to_owned)
        }
    };
    let url = MetaUrl::parse_with_env(&set.url(4), with(Some("s3ntinel-only-pw"))).unwrap();
    assert_eq!(url.sentinel_password(), Some(secret));
    assert!(!url.to_string().contains(secret) && !format!("{url:?}").contains(secret));
    let engine = metabench_engine::open(&url).await.unwrap();
    assert_eq!(engine.probe().await.unwrap(), VolumeState::Empty);
    for env in [with(None), with(Some("wrong-pw"))] {
        let url = MetaUrl::parse_with_env(&set.url(4), env).unwrap();
        let err = metabench_engine::open(&url)
            .await
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("no Sentinel answered"), "{err}");
        assert!(err.contains("NOAUTH") || err.contains("WRONGPASS"), "{err}");
        assert!(err.contains("comes from SENTINEL_PASSWORD"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(!err.contains(secret) && !err.contains("wrong-pw"), "{err}");
    }
}

#[test]
fn options_metabench_does_not_honour_are_refused_in_one_line() {
    for (url, want) in [
        (
            "redis://127.0.0.1:6379/1?read-timeout=5s",
            "does not honour the Redis URL option 'read-timeout'",
        ),
        (
            "rediss://127.0.0.1:6379/1?client-cache=true",
            "does not honour the Redis URL option 'client-cache'",
        ),
        ("unix:///run/redis.sock?db=x", "must be a number, got 'x'"),
        ("unix://relative.sock", "unix:///path/to/redis.sock"),
    ] {
        let err = MetaUrl::parse(url).err().unwrap().to_string();
        assert!(err.contains(want), "{url}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

/// The directory `scripts/test.sh` keeps the shared engines' data (and sockets) in.
fn engines_dir() -> String {
    std::env::var("METABENCH_ENGINES_DIR")
        .expect("METABENCH_ENGINES_DIR is not set: run the tests with scripts/test.sh")
}

fn tcp_port(url: &str) -> u16 {
    match MetaUrl::parse(url).unwrap().address() {
        Address::Tcp { port, .. } => *port,
        other => panic!("{other:?}"),
    }
}

/// libpq's socket form. The server trusts local connections and asks TCP ones for a
/// password; this URL has none, so going through proves the socket was used.
#[tokio::test]
async fn postgres_over_its_unix_socket_works_both_ways_with_juicefs() {
    let db = fresh_database(Kind::Postgres);
    let url = format!(
        "postgres://metabench@/{}?host={}/pg&port={}&sslmode=disable",
        db.name(),
        engines_dir(),
        tcp_port(db.url())
    );
    let parsed = MetaUrl::parse_with_env(&url, |_| None).unwrap();
    assert!(matches!(parsed.address(), Address::Unix(_)), "{parsed:?}");
    assert_eq!(parsed.password(), None);
    both_ways(&url, "pg-socket-volume").await;
}

/// go-sql-driver's `unix(/path)` form; the server lists the connection as from
/// `localhost`, not from a TCP address.
#[tokio::test]
async fn mariadb_over_its_unix_socket_works_both_ways_with_juicefs() {
    let db = fresh_database(Kind::Mysql);
    let tcp = MetaUrl::parse(db.url()).unwrap();
    let url = format!(
        "mysql://metabench:{}@unix({}/mysql/mysqld.sock)/{}",
        tcp.password().unwrap(),
        engines_dir(),
        db.name()
    );
    both_ways(&url, "mysql-socket-volume").await;
    let engine = open(&url).await.unwrap();
    let _s = engine.session(&SessionOptions::default()).await.unwrap();
    let hosts = db.query(&format!(
        "SELECT host FROM information_schema.processlist WHERE db = '{}' AND id <> CONNECTION_ID()",
        db.name()
    ));
    assert!(!hosts.is_empty());
    assert!(hosts.iter().all(|h| h[0] == "localhost"), "{hosts:?}");
}

/// The CA of the certificate the shared MariaDB and PostgreSQL take TLS with.
fn test_ca() -> String {
    std::env::var("METABENCH_TLS_CA")
        .expect("METABENCH_TLS_CA is not set: run the tests with scripts/test.sh")
}

/// TLS options that cannot work are one line, before anything is sent.
#[tokio::test]
async fn sql_tls_options_that_cannot_work_are_one_line() {
    for (url, want) in [
        (
            "postgres://u:pw@127.0.0.1:1/db?sslmode=verify-full&sslrootcert=/no/ca.pem",
            "sslrootcert: no file /no/ca.pem",
        ),
        (
            "postgres://u:pw@127.0.0.1:1/db?sslmode=required",
            "unknown sslmode 'required'",
        ),
        (
            "mysql://u:pw@(127.0.0.1:1)/db?tls=custom",
            "tls=custom: MySQL takes tls=true, skip-verify, preferred or false",
        ),
    ] {
        let err = open(url).await.err().unwrap();
        assert!(matches!(err, MetaError::BadUrl(_)), "{err:?}");
        let text = err.to_string();
        assert!(text.contains(want), "{url}: {text}");
        assert_eq!(text.lines().count(), 1, "{text}");
    }
}

/// PostgreSQL with `sslmode=verify-full` and the CA as `sslrootcert` (as pgx reads them):
/// `juicefs` and metabench both go through; the server lists metabench's connections as
/// TLS ones (`pg_stat_ssl`). A CA that did not sign the server's certificate is one line.
#[tokio::test]
async fn postgres_over_tls_verify_full_works_both_ways_with_juicefs() {
    let db = fresh_database(Kind::Postgres);
    // The test database's URL without its `?sslmode=disable`.
    let base = db.url().split('?').next().unwrap().to_owned();
    let url = format!("{base}?sslmode=verify-full&sslrootcert={}", test_ca());
    both_ways(&url, "pg-tls-volume").await;
    let engine = open(&url).await.unwrap();
    let _s = engine.session(&SessionOptions::default()).await.unwrap();
    let tls = db.query(
        "SELECT count(*) FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) \
         WHERE datname = current_database() AND ssl AND pid <> pg_backend_pid()",
    );
    let n: u32 = tls[0][0].parse().unwrap();
    assert!(n >= 1, "no TLS connection of metabench: {tls:?}");
    let plain = format!("{base}?sslmode=disable");
    let _p = open(&plain)
        .await
        .unwrap()
        .session(&SessionOptions::default())
        .await
        .unwrap();
    let all = db.query(
        "SELECT count(*) FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) \
         WHERE datname = current_database() AND NOT ssl AND pid <> pg_backend_pid()",
    );
    assert!(all[0][0].parse::<u32>().unwrap() >= 1, "{all:?}");

    let other = TestCerts::generate();
    let wrong = format!(
        "{base}?sslmode=verify-full&sslrootcert={}",
        other.ca().display()
    );
    let err = open(&wrong).await.err().unwrap().to_string();
    assert!(err.to_lowercase().contains("certificate"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!err.contains("metabench-test-pw"), "{err}");
}

/// MariaDB over TLS with go-sql-driver's `tls=skip-verify` and `tls=preferred`: a user
/// the server admits over TLS only (`REQUIRE SSL`) gets in, and `juicefs` too; without
/// `tls`, the same user is refused in one line.
#[tokio::test]
async fn mariadb_over_tls_works_both_ways_with_juicefs() {
    let db = fresh_database(Kind::Mysql);
    let user = format!("tls{}", std::process::id());
    for sql in [
        format!("CREATE USER '{user}'@'127.0.0.1' IDENTIFIED BY 'tls-pw' REQUIRE SSL"),
        format!(
            "GRANT ALL PRIVILEGES ON `{}`.* TO '{user}'@'127.0.0.1'",
            db.name()
        ),
    ] {
        db.query(&sql);
    }
    let url = |tls: &str| {
        format!(
            "mysql://{user}:tls-pw@(127.0.0.1:{})/{}{tls}",
            tcp_port(db.url()),
            db.name()
        )
    };
    both_ways(&url("?tls=skip-verify"), "mysql-tls-volume").await;
    let preferred = open(&url("?tls=preferred")).await.unwrap();
    assert!(matches!(
        preferred.probe().await.unwrap(),
        VolumeState::Volume(_)
    ));
    let err = open(&url("")).await.err().unwrap().to_string();
    assert!(
        err.contains("access denied for user") && err.contains("must come over TLS"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!err.contains("tls-pw"), "{err}");
    db.query(&format!("DROP USER '{user}'@'127.0.0.1'"));
}

/// etcd over TLS with JuiceFS's options (`cacert`, `cert`, `key`): `juicefs` and metabench
/// both go through a server that asks for a client certificate; a wrong CA, no client
/// certificate, and `insecure-skip-verify` are one line each.
#[cfg(feature = "etcd")]
#[tokio::test]
async fn etcd_over_tls_works_both_ways_with_juicefs() {
    let certs = TestCerts::generate();
    let server = metabench_testkit::EtcdServer::start_tls(&certs);
    let (cert, key) = certs.client();
    let base = format!("etcd://127.0.0.1:{}/jfs", server.port());
    let url = format!(
        "{base}?{}&{}&{}",
        q("cacert", &certs.ca()),
        q("cert", &cert),
        q("key", &key)
    );
    both_ways(&url, "etcd-tls-volume").await;
    for (bad, want) in [
        (
            format!(
                "{base}?{}&{}&{}",
                q("cacert", &certs.other_ca()),
                q("cert", &cert),
                q("key", &key)
            ),
            "not signed by the CA given as cacert",
        ),
        (
            format!("{base}?{}", q("cacert", &certs.ca())),
            "client certificate",
        ),
        (
            format!("{url}&insecure-skip-verify=1"),
            "insecure-skip-verify is not available for etcd",
        ),
    ] {
        let err = open(&bad).await.err().unwrap().to_string();
        assert!(err.contains(want), "{err}");
        assert!(err.starts_with("cannot connect to etcd://"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

//! Tests of [`super`]: every meta URL form, its errors and its redaction.

use super::*;

fn no_env(_: &str) -> Option<String> {
    None
}

#[test]
fn locations_say_in_process_socket_loopback_this_host_or_remote() {
    let at = |s: &str| MetaUrl::parse_with_env(s, no_env).unwrap().location();
    for (url, want) in [
        ("sqlite3:///tmp/x.db", "in-process"),
        ("memkv://jfs", "in-process"),
        ("unix:///tmp/redis.sock?db=1", "local socket"),
        (
            "mysql://u:p@unix(/run/mysqld/mysqld.sock)/db",
            "local socket",
        ),
        ("redis://127.0.0.1:6379/1", "loopback"),
        ("postgres://u:p@[::1]:5432/db", "loopback"),
        ("etcd://127.0.0.1:2379,127.0.0.2:2379/jfs", "loopback"),
        // TEST-NET-1 (RFC 5737) is never an address of this machine.
        ("redis://192.0.2.1:6379/1", "remote"),
        (
            "etcd://127.0.0.1:2379,192.0.2.1:2379/jfs",
            "loopback and remote",
        ),
    ] {
        assert_eq!(at(url), want, "{url}");
    }
    for (url, starts) in [
        (
            "redis://master,127.0.0.1:26379/1",
            "unknown (a Sentinel URL",
        ),
        (
            "redis://no-such-host.invalid:6379/1",
            "unknown (cannot resolve",
        ),
    ] {
        let got = at(url);
        assert!(got.starts_with(starts), "{got}");
    }
    // An address of one of this machine's interfaces, where it has one besides
    // loopback: the one it would reach TEST-NET-1 from.
    let probe = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
    if probe.connect("192.0.2.1:9").is_ok() {
        let ip = probe.local_addr().unwrap().ip();
        if !ip.is_unspecified() && !ip.is_loopback() {
            assert_eq!(
                at(&format!("redis://{ip}:6379/1")),
                format!("this host ({ip})")
            );
        }
    }
}

#[test]
fn a_server_on_this_host_is_one_at_a_loopback_address_or_a_unix_socket() {
    let local = |s: &str| {
        MetaUrl::parse_with_env(s, no_env)
            .unwrap()
            .server_on_this_host()
    };
    for url in [
        "redis://127.0.0.1:6379/1",
        "redis://localhost/2",
        "unix:///tmp/redis.sock?db=1",
        "mysql://u:p@(127.0.0.1:3306)/db",
        "mysql://u:p@unix(/run/mysqld/mysqld.sock)/db",
        "postgres://u:p@[::1]:5432/db",
        "etcd://127.0.0.1:2379,127.0.0.2:2379/jfs",
        "tikv://localhost:2379/jfs",
    ] {
        assert!(local(url), "{url}");
    }
    for url in [
        "redis://10.0.0.5:6379/1",
        "redis://redis.example.com/1",
        "etcd://127.0.0.1:2379,10.0.0.5:2379/jfs",
        "redis://mymaster,127.0.0.1:26379/1",
        "sqlite3:///tmp/jfs.db",
        "memkv://local",
    ] {
        assert!(!local(url), "{url}");
    }
}

#[test]
fn only_sqlite_and_memkv_run_in_process() {
    let in_process = |s: &str| MetaUrl::parse_with_env(s, no_env).unwrap().in_process();
    for url in ["sqlite3:///tmp/jfs.db", "memkv://local"] {
        assert!(in_process(url), "{url}");
    }
    for url in [
        "redis://127.0.0.1:6379/1",
        "unix:///tmp/redis.sock?db=1",
        "postgres://u:p@[::1]:5432/db",
        "etcd://10.0.0.5:2379/jfs",
    ] {
        assert!(!in_process(url), "{url}");
    }
}

#[test]
fn redis_forms() {
    let u = MetaUrl::parse_with_env("redis://:s3cret@127.0.0.1:6380/3", no_env).unwrap();
    assert_eq!(u.scheme(), Scheme::Redis);
    assert_eq!(u.password(), Some("s3cret"));
    assert_eq!(u.database(), "3");
    assert_eq!(
        u.address(),
        &Address::Tcp {
            host: "127.0.0.1".into(),
            port: 6380
        }
    );
    assert_eq!(u.to_string(), "redis://:****@127.0.0.1:6380/3");
    assert!(!format!("{u:?}").contains("s3cret"));
    let bare = MetaUrl::parse_with_env("localhost", no_env).unwrap();
    assert_eq!(bare.to_string(), "redis://localhost:6379/0");
    assert!(MetaUrl::parse_with_env("redis://h:99999/1", no_env).is_err());
    assert!(MetaUrl::parse_with_env("redis://h:6379/x", no_env).is_err());
    let cluster = MetaUrl::parse_with_env("redis://:pw@h1:7000,h2:7001/1", no_env).unwrap();
    assert_eq!(cluster.sentinel_master(), None);
    assert_eq!(
        cluster.hosts(),
        [("h1".to_owned(), 7000), ("h2".to_owned(), 7001)]
    );
    assert_eq!(cluster.database(), "1");
    // As go-redis's Atoi reads it: the tag of `/01` is `{1}`, as JuiceFS writes it.
    for db in ["01", "+1", "001"] {
        let u = MetaUrl::parse_with_env(&format!("redis://h1:7000,h2:7001/{db}"), no_env);
        assert_eq!(u.unwrap().database(), "1", "{db}");
    }
    assert_eq!(cluster.to_string(), "redis://:****@h1:7000,h2:7001/1");
    // JuiceFS's rule: no ':' at all is a Cluster seed list too (port 6379 each).
    let seeds = MetaUrl::parse_with_env("redis://m,h1,h2/1", no_env).unwrap();
    assert_eq!(seeds.hosts().len(), 3);
    assert_eq!(seeds.sentinel_master(), None);
    assert!(MetaUrl::parse_with_env("redis://h1:7000,/1", no_env).is_err());
    let env = |k: &str| (k == "SENTINEL_PASSWORD").then(|| "sentinel-pw".to_owned());
    let sentinel =
        MetaUrl::parse_with_env("redis://:pw@mymaster,10.0.0.1,10.0.0.2:26380/1", env).unwrap();
    assert_eq!(sentinel.sentinel_master(), Some("mymaster"));
    assert_eq!(
        sentinel.hosts(),
        [
            ("10.0.0.1".to_owned(), 26380),
            ("10.0.0.2".to_owned(), 26380)
        ]
    );
    assert_eq!(sentinel.sentinel_password(), Some("sentinel-pw"));
    assert_eq!(sentinel.password(), Some("pw"));
    assert_eq!(
        sentinel.to_string(),
        "redis://:****@mymaster,10.0.0.1:26380,10.0.0.2:26380/1"
    );
    assert!(!format!("{sentinel:?}").contains("sentinel-pw"));
    let one = MetaUrl::parse_with_env("redis://mymaster,10.0.0.1:5000/2", no_env).unwrap();
    assert_eq!(one.hosts(), [("10.0.0.1".to_owned(), 5000)]);
    let tls = MetaUrl::parse_with_env(
        "rediss://:pw@cache.example.com/2?tls-ca-cert-file=/ca.pem&insecure-skip-verify",
        no_env,
    )
    .unwrap();
    assert_eq!(tls.scheme(), Scheme::Rediss);
    assert_eq!(tls.param("insecure-skip-verify"), Some(""));
    assert_eq!(
        tls.to_string(),
        "rediss://:****@cache.example.com:6379/2?tls-ca-cert-file=/ca.pem&insecure-skip-verify="
    );
    let sock = MetaUrl::parse_with_env("unix://u:pw@/run/redis/redis.sock?db=4", no_env).unwrap();
    assert_eq!(sock.scheme(), Scheme::Unix);
    assert_eq!(
        sock.address(),
        &Address::Unix("/run/redis/redis.sock".into())
    );
    assert_eq!(
        (sock.user(), sock.password(), sock.database()),
        ("u", Some("pw"), "4")
    );
    assert_eq!(sock.to_string(), "unix://u:****@/run/redis/redis.sock?db=4");
    let env = |k: &str| (k == "REDIS_PASSWORD").then(|| "from-env".to_owned());
    let sock = MetaUrl::parse_with_env("unix:///run/redis.sock", env).unwrap();
    assert_eq!((sock.password(), sock.database()), (Some("from-env"), "0"));
}

#[test]
fn mysql_forms() {
    let u = MetaUrl::parse_with_env("mysql://jfs:p%40ss@(127.0.0.1:3307)/juicefs", no_env).unwrap();
    assert_eq!(u.user(), "jfs");
    assert_eq!(u.password(), Some("p@ss"));
    assert_eq!(u.database(), "juicefs");
    assert_eq!(u.to_string(), "mysql://jfs:****@(127.0.0.1:3307)/juicefs");
    let t = MetaUrl::parse_with_env("mysql://root@tcp(h)/db?x=1", no_env).unwrap();
    assert_eq!(
        t.address(),
        &Address::Tcp {
            host: "h".into(),
            port: 3306
        }
    );
    assert_eq!(t.param("x"), Some("1"));
    assert!(MetaUrl::parse_with_env("mysql://root@127.0.0.1:3306/db", no_env).is_err());
    assert!(MetaUrl::parse_with_env("mysql://root@(h:1)/", no_env).is_err());
}

#[test]
fn postgres_and_sqlite() {
    let u = MetaUrl::parse_with_env(
        "postgres://u:pw@localhost:5433/meta?sslmode=disable",
        no_env,
    )
    .unwrap();
    assert_eq!(u.param("sslmode"), Some("disable"));
    assert_eq!(
        u.to_string(),
        "postgres://u:****@localhost:5433/meta?sslmode=disable"
    );
    let sock = MetaUrl::parse_with_env(
        "postgres://u:pw@/meta?host=/var/run/postgresql&port=5433",
        no_env,
    )
    .unwrap();
    assert_eq!(sock.address(), &Address::Unix("/var/run/postgresql".into()));
    assert_eq!(
        sock.to_string(),
        "postgres://u:****@/meta?host=/var/run/postgresql&port=5433"
    );
    let err = MetaUrl::parse_with_env("postgres://u@/meta", no_env).unwrap_err();
    assert!(
        err.to_string().contains("?host=/var/run/postgresql"),
        "{err}"
    );
    let s = MetaUrl::parse_with_env("sqlite3:///tmp/x.db", no_env).unwrap();
    assert_eq!(s.address(), &Address::File("/tmp/x.db".into()));
    assert_eq!(s.to_string(), "sqlite3:///tmp/x.db");
    assert!(MetaUrl::parse_with_env("sqlite3://", no_env).is_err());
    assert!(MetaUrl::parse_with_env("ftp://x", no_env).is_err());
    assert!(MetaUrl::parse_with_env("", no_env).is_err());
}

#[test]
fn tkv_forms() {
    let e = MetaUrl::parse_with_env("etcd://u:pw@h1,h2:2380/jfs", no_env).unwrap();
    assert_eq!(e.scheme(), Scheme::Etcd);
    assert_eq!(e.database(), "jfs");
    assert_eq!(
        e.hosts(),
        vec![("h1".to_owned(), 2379), ("h2".to_owned(), 2380)]
    );
    assert_eq!(e.redacted(), "etcd://u:****@h1:2379,h2:2380/jfs");
    let m = MetaUrl::parse_with_env("memkv://bench", no_env).unwrap();
    assert_eq!((m.scheme(), m.database()), (Scheme::Memkv, "bench"));
    assert_eq!(m.redacted(), "memkv://bench");
    let f =
        MetaUrl::parse_with_env("fdb:///etc/foundationdb/fdb.cluster?prefix=jfs", no_env).unwrap();
    assert_eq!(f.scheme(), Scheme::Fdb);
    assert_eq!(f.database(), "/etc/foundationdb/fdb.cluster");
    assert_eq!(f.param("prefix"), Some("jfs"));
    assert!(MetaUrl::parse_with_env("badger:///tmp/x", no_env).is_err());
    let t = MetaUrl::parse_with_env("tikv://pd1,pd2:2400/jfs", no_env).unwrap();
    assert_eq!(t.scheme(), Scheme::Tikv);
    assert_eq!(
        t.hosts(),
        vec![("pd1".to_owned(), 2379), ("pd2".to_owned(), 2400)]
    );
    assert_eq!(t.database(), "jfs");
    assert!(MetaUrl::parse_with_env("tikv://u:pw@pd/x", no_env).is_err());
    assert!(MetaUrl::parse_with_env("tikv://pd:notaport/x", no_env).is_err());
}

#[test]
fn password_from_environment_like_juicefs() {
    let env = |k: &str| match k {
        "META_PASSWORD" => Some("fromenv".to_owned()),
        _ => None,
    };
    let u = MetaUrl::parse_with_env("mysql://jfs:@(h:3306)/db", env).unwrap();
    assert_eq!(u.password(), Some("fromenv"));
    let kept = MetaUrl::parse_with_env("postgres://u:inurl@h/db", env).unwrap();
    assert_eq!(kept.password(), Some("inurl"));
    let redis_first = |k: &str| Some(k.to_owned());
    let r = MetaUrl::parse_with_env("redis://h/1", redis_first).unwrap();
    assert_eq!(r.password(), Some("REDIS_PASSWORD"));
    let dir = std::env::temp_dir().join(format!("mbpw-{}", std::process::id()));
    std::fs::write(&dir, "filepw\n").unwrap();
    let path = dir.to_string_lossy().into_owned();
    let file_env = move |k: &str| (k == "META_PASSWORD_FILE").then(|| path.clone());
    let f = MetaUrl::parse_with_env("postgres://u@h/db", file_env).unwrap();
    assert_eq!(f.password(), Some("filepw"));
    std::fs::remove_file(dir).unwrap();
}

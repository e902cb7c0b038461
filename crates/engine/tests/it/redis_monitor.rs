//! The exact command sequence of each operation, in order and with its keys, as Redis's
//! `MONITOR` shows it, against MONITOR traces of the Go client (`pkg/meta/redis.go`).
//! Binary values (attributes, dentries, slices) are matched by `*`.

use super::common::redis_volume;
use metabench_engine::{namespace, Ctx, Meta, SessionOptions, SetAttr, XattrFlags};
use metabench_schema::{Ino, Slice, Timestamp, ROOT_INODE};
use metabench_testkit::RedisServer;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A `MONITOR` connection read by a thread; lines are kept as argument vectors.
struct Monitor {
    lines: Arc<Mutex<Vec<Vec<String>>>>,
    marks: usize,
}

impl Monitor {
    fn start(server: &RedisServer) -> Monitor {
        let mut s = TcpStream::connect(("127.0.0.1", server.port())).unwrap();
        let pw = server.password();
        write!(
            s,
            "*2\r\n$4\r\nAUTH\r\n${}\r\n{pw}\r\n*1\r\n$7\r\nMONITOR\r\n",
            pw.len()
        )
        .unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        std::thread::spawn(move || {
            let r = BufReader::new(s);
            for line in r.lines() {
                let Ok(line) = line else { return };
                if let Some(args) = parse_monitor_line(&line) {
                    sink.lock().unwrap().push(args);
                }
            }
        });
        Monitor { lines, marks: 0 }
    }

    /// Sends `ECHO mark-N` on another connection and waits until MONITOR shows it;
    /// returns the position of the mark.
    fn mark(&mut self, server: &RedisServer) -> usize {
        self.marks += 1;
        let tag = format!("mark-{}", self.marks);
        server.command(&["ECHO", &tag]);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(i) = self
                .lines
                .lock()
                .unwrap()
                .iter()
                .position(|l| l.len() == 2 && l[0] == "ECHO" && l[1] == tag)
            {
                return i;
            }
            assert!(Instant::now() < deadline, "MONITOR never showed {tag}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The commands between two marks, without the marks' own AUTH/ECHO.
    fn between(&self, a: usize, b: usize) -> Vec<Vec<String>> {
        self.lines.lock().unwrap()[a + 1..b]
            .iter()
            .filter(|l| !matches!(l[0].as_str(), "AUTH" | "ECHO" | "INFO"))
            .cloned()
            .collect()
    }
}

/// `1712345678.123456 [1 127.0.0.1:5555] "SET" "k" "v\x00"` → `["SET", "k", "v\x00"]`
/// (escapes kept as text, the command upper-cased).
fn parse_monitor_line(line: &str) -> Option<Vec<String>> {
    let rest = &line[line.find("] ")? + 2..];
    let mut args = Vec::new();
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        if c != '"' {
            continue;
        }
        let mut arg = String::new();
        loop {
            match chars.next()? {
                '\\' => {
                    let e = chars.next()?;
                    if e == '"' || e == '\\' {
                        arg.push(e);
                    } else {
                        arg.push('\\');
                        arg.push(e);
                    }
                }
                '"' => break,
                ch => arg.push(ch),
            }
        }
        args.push(arg);
    }
    if let Some(first) = args.first_mut() {
        *first = first.to_uppercase();
    }
    (!args.is_empty()).then_some(args)
}

struct Fixture {
    server: RedisServer,
    mon: Monitor,
    meta: Box<dyn Meta>,
    ctx: Ctx,
}

impl Fixture {
    async fn new() -> Fixture {
        let (server, _, meta) = redis_volume(
            2,
            "monitor",
            "11111111-2222-4333-8444-555555555555",
            &SessionOptions::default(),
        )
        .await;
        let mon = Monitor::start(&server);
        Fixture {
            server,
            mon,
            meta,
            ctx: Ctx::root(),
        }
    }

    async fn parent(&mut self, name: &str) -> Ino {
        namespace::remove_tree(self.meta.as_mut(), ROOT_INODE, name.as_bytes())
            .await
            .unwrap();
        let p = self
            .meta
            .mkdir(&self.ctx, ROOT_INODE, name.as_bytes(), 0o755, 0)
            .await
            .unwrap()
            .0;
        self.meta.flush().await.unwrap();
        p
    }

    /// A fixture with a parent `seq` and an empty file `name` in it: (it, the parent, the
    /// file).
    async fn with_file(name: &[u8]) -> (Fixture, Ino, Ino) {
        let mut fx = Fixture::new().await;
        let p = fx.parent("seq").await;
        let (f, _) = fx
            .meta
            .create(&fx.ctx, p, name, 0o644, 0o022)
            .await
            .unwrap();
        (fx, p, f)
    }
}

/// Runs `$call` between two marks and returns (its value, the commands it sent).
macro_rules! trace {
    ($fx:expr, $call:expr) => {{
        let a = $fx.mon.mark(&$fx.server);
        let out = $call;
        let b = $fx.mon.mark(&$fx.server);
        (out, $fx.mon.between(a, b))
    }};
}

/// Asserts that `got` is the sequence `want`, a line per command with its arguments
/// separated by spaces; a `*` argument matches any value.
fn assert_trace(got: &[Vec<String>], want: &[String]) {
    let ok = got.len() == want.len()
        && got.iter().zip(want).all(|(g, w)| {
            let w: Vec<&str> = w.split(' ').collect();
            g.len() == w.len() && g.iter().zip(w).all(|(a, b)| b == "*" || a == b)
        });
    let got: Vec<String> = got.iter().map(|l| l.join(" ")).collect();
    assert!(
        ok,
        "command sequence differs\n--- got\n{}\n--- want\n{}",
        got.join("\n"),
        want.join("\n")
    );
}

/// Expected lines, from space-separated strings.
macro_rules! want {
    ($($line:expr),* $(,)?) => {
        [$(String::from($line)),*]
    };
}

/// Runs `$call` between two marks, asserts that it sent the commands `$want` and returns
/// its value.
macro_rules! expect_trace {
    ($fx:expr, $call:expr, $want:expr) => {{
        let (out, got) = trace!($fx, $call);
        assert_trace(&got, &$want);
        out
    }};
}

/// `doMknod`'s sequence making `name`, inode `ino`, in `p`: `target` is a symlink's,
/// `records` a directory's dir-stat records.
fn mknod_trace(p: Ino, name: &str, ino: Ino, target: &[String], records: &[String]) -> Vec<String> {
    let mut want = Vec::from(want![
        format!("WATCH i{p} d{p}"),
        format!("GET i{p}"),
        format!("HGET d{p} {name}"),
        "MULTI",
        format!("SET i{ino} *"),
        format!("SET i{p} *"),
    ]);
    want.extend_from_slice(target);
    want.push(format!("HSET d{p} {name} *"));
    want.extend_from_slice(records);
    want.extend(want![
        "INCRBY usedSpace 4096",
        "INCR totalInodes",
        "EXEC",
        "UNWATCH"
    ]);
    want
}

/// `doUpdateDirStat` of `p`'s batched deltas, its record existing: a pipelined HEXISTS,
/// then a pipelined HINCRBY of each.
fn dir_stat_trace(p: Ino, space: i64, inodes: i64) -> [String; 3] {
    want![
        format!("HEXISTS dirUsedSpace {p}"),
        format!("HINCRBY dirUsedSpace {p} {space}"),
        format!("HINCRBY dirUsedInodes {p} {inodes}"),
    ]
}

#[tokio::test]
async fn create_and_delete_sequences() {
    let mut fx = Fixture::new().await;
    let p = fx.parent("seq").await;

    let ((n, _), got) = trace!(
        fx,
        fx.meta.mkdir(&fx.ctx, p, b"d0", 0o755, 0).await.unwrap()
    );
    let records = want![
        format!("HSET dirUsedInodes {n} 0"),
        format!("HSET dirDataLength {n} 0"),
        format!("HSET dirUsedSpace {n} 0"),
    ];
    assert_trace(&got, &mknod_trace(p, "d0", n, &[], &records));

    let ((f, _), got) = trace!(
        fx,
        fx.meta
            .create(&fx.ctx, p, b"file", 0o644, 0o022)
            .await
            .unwrap()
    );
    assert_trace(&got, &mknod_trace(p, "file", f, &[], &[]));

    // The dir stats of `p` (a record exists): pipelined HEXISTS, then pipelined HINCRBY.
    expect_trace!(
        fx,
        fx.meta.flush().await.unwrap(),
        dir_stat_trace(p, 8192, 2)
    );

    let ((s, _), got) = trace!(
        fx,
        fx.meta.symlink(&fx.ctx, p, b"sym", b"file").await.unwrap()
    );
    assert_trace(
        &got,
        &mknod_trace(p, "sym", s, &want![format!("SET s{s} file")], &[]),
    );

    expect_trace!(
        fx,
        fx.meta.link(&fx.ctx, f, p, b"l0").await.unwrap(),
        want![
            format!("GET i{f}"),
            format!("WATCH i{p} d{p} i{f}"),
            format!("MGET i{p} i{f}"),
            format!("HGET d{p} l0"),
            "MULTI",
            format!("HSET d{p} l0 *"),
            format!("SET i{p} *"),
            format!("SET i{f} *"),
            format!("HINCRBY p{f} {p} 1"),
            format!("HINCRBY p{f} {p} 1"),
            "EXEC",
            "UNWATCH",
        ]
    );

    // Unlinking one of two links keeps the inode: SET and HINCRBY -1 instead of deletes.
    expect_trace!(
        fx,
        fx.meta.unlink(&fx.ctx, p, b"l0").await.unwrap(),
        want![
            format!("WATCH i{p} d{p}"),
            format!("HGET d{p} l0"),
            format!("WATCH i{f}"),
            format!("MGET i{p} i{f}"),
            "MULTI",
            format!("HDEL d{p} l0"),
            format!("SET i{p} *"),
            format!("SET i{f} *"),
            format!("HINCRBY p{f} {p} -1"),
            "EXEC",
            "UNWATCH",
        ]
    );

    // The last link of a hard-linked file: its parent counters go too.
    expect_trace!(
        fx,
        fx.meta.unlink(&fx.ctx, p, b"file").await.unwrap(),
        want![
            format!("WATCH i{p} d{p}"),
            format!("HGET d{p} file"),
            format!("WATCH i{f}"),
            format!("MGET i{p} i{f}"),
            "MULTI",
            format!("HDEL d{p} file"),
            format!("SET i{p} *"),
            "ZADD delfiles *".to_owned() + &format!(" {f}:0"),
            format!("DEL i{f}"),
            "INCRBY usedSpace -4096",
            "DECR totalInodes",
            format!("DEL x{f}"),
            format!("DEL p{f}"),
            "EXEC",
            "UNWATCH",
        ]
    );

    expect_trace!(
        fx,
        fx.meta.unlink(&fx.ctx, p, b"sym").await.unwrap(),
        want![
            format!("WATCH i{p} d{p}"),
            format!("HGET d{p} sym"),
            format!("WATCH i{s}"),
            format!("MGET i{p} i{s}"),
            "MULTI",
            format!("HDEL d{p} sym"),
            format!("SET i{p} *"),
            format!("DEL s{s}"),
            format!("DEL i{s}"),
            "INCRBY usedSpace -4096",
            "DECR totalInodes",
            format!("DEL x{s}"),
            "EXEC",
            "UNWATCH",
        ]
    );

    expect_trace!(
        fx,
        fx.meta.rmdir(&fx.ctx, p, b"d0").await.unwrap(),
        want![
            format!("WATCH i{p} d{p}"),
            format!("HGET d{p} d0"),
            format!("WATCH i{n} d{n}"),
            format!("MGET i{p} i{n}"),
            format!("HLEN d{n}"),
            "MULTI",
            format!("HDEL d{p} d0"),
            format!("SET i{p} *"),
            format!("DEL i{n}"),
            format!("DEL x{n}"),
            "INCRBY usedSpace -4096",
            "DECR totalInodes",
            format!("HDEL dirDataLength {n}"),
            format!("HDEL dirUsedSpace {n}"),
            format!("HDEL dirUsedInodes {n}"),
            format!("HDEL dirQuota {n}"),
            format!("HDEL dirQuotaUsedSpace {n}"),
            format!("HDEL dirQuotaUsedInodes {n}"),
            "EXEC",
            "UNWATCH",
        ]
    );

    // The background part: the dir stats of `p` (sym, l0 made; l0, file, sym, d0 gone),
    // then a 0-byte file's data, which is one ZREM.
    let mut want = dir_stat_trace(p, -8192, -2).to_vec();
    want.push(format!("ZREM delfiles {f}:0"));
    expect_trace!(fx, fx.meta.flush().await.unwrap(), want);
}

#[tokio::test]
async fn rename_lookup_readdir_and_attr_sequences() {
    let (mut fx, p, f) = Fixture::with_file(b"f0").await;

    expect_trace!(
        fx,
        fx.meta
            .rename(&fx.ctx, p, b"f0", p, b"f1", 0)
            .await
            .unwrap(),
        want![
            format!("WATCH i{p} d{p} i{p} d{p}"),
            format!("HGET d{p} f0"),
            format!("HGET d{p} f1"),
            format!("WATCH i{f}"),
            format!("MGET i{p} i{p} i{f}"),
            "MULTI",
            format!("HDEL d{p} f0"),
            format!("SET i{f} *"),
            format!("HSET d{p} f1 *"),
            format!("SET i{p} *"),
            "EXEC",
            "UNWATCH",
        ]
    );

    expect_trace!(
        fx,
        fx.meta.lookup(&fx.ctx, p, b"f1").await.unwrap(),
        want![format!("HGET d{p} f1"), format!("GET i{f}")]
    );

    expect_trace!(
        fx,
        fx.meta.readdir(&fx.ctx, p, true).await.unwrap(),
        want![
            format!("GET i{p}"),
            format!("HSCAN d{p} 0 MATCH * COUNT 10000"),
            format!("MGET i{p} i1 i{f}"),
        ]
    );
    // Without attributes JuiceFS does not MGET.
    expect_trace!(
        fx,
        fx.meta.readdir(&fx.ctx, p, false).await.unwrap(),
        want![
            format!("GET i{p}"),
            format!("HSCAN d{p} 0 MATCH * COUNT 10000")
        ]
    );

    let set = SetAttr {
        mode: Some(0o600),
        ..Default::default()
    };
    expect_trace!(
        fx,
        fx.meta.setattr(&fx.ctx, f, &set).await.unwrap(),
        want![
            format!("WATCH i{f}"),
            format!("GET i{f}"),
            "MULTI",
            format!("SET i{f} *"),
            "EXEC",
            "UNWATCH",
        ]
    );
    // Nothing changes: no MULTI/EXEC at all.
    expect_trace!(
        fx,
        fx.meta.setattr(&fx.ctx, f, &set).await.unwrap(),
        want![format!("WATCH i{f}"), format!("GET i{f}"), "UNWATCH"]
    );

    // `Replace` first checks that the name exists.
    for (v, flags) in [("v1", XattrFlags::Any), ("v2", XattrFlags::Replace)] {
        let mut want = Vec::from(want![
            format!("WATCH x{f}"),
            "MULTI",
            format!("HSET x{f} user.k {v}"),
            "EXEC",
            "UNWATCH",
        ]);
        if flags == XattrFlags::Replace {
            want.insert(1, format!("HEXISTS x{f} user.k"));
        }
        expect_trace!(
            fx,
            fx.meta
                .setxattr(f, b"user.k", v.as_bytes(), flags)
                .await
                .unwrap(),
            want
        );
    }
    expect_trace!(
        fx,
        fx.meta.listxattr(f).await.unwrap(),
        want![format!("HKEYS x{f}"), format!("GET i{f}")]
    );
    expect_trace!(
        fx,
        fx.meta.getxattr(f, b"user.k").await.unwrap(),
        want![format!("HGET x{f} user.k")]
    );
    expect_trace!(
        fx,
        fx.meta.removexattr(f, b"user.k").await.unwrap(),
        want![
            format!("WATCH x{f}"),
            format!("HDEL x{f} user.k"),
            "UNWATCH"
        ]
    );
}

#[tokio::test]
async fn data_and_background_sequences() {
    let (mut fx, p, f) = Fixture::with_file(b"f").await;
    let id = expect_trace!(
        fx,
        fx.meta.new_slice().await.unwrap(),
        want!["INCRBY nextchunk 4096"]
    );
    let slice = Slice::whole(0, id, 5000);
    expect_trace!(
        fx,
        fx.meta.write(f, 0, slice, Timestamp::now()).await.unwrap(),
        want![
            format!("WATCH i{f}"),
            format!("GET i{f}"),
            "MULTI",
            format!("RPUSH c{f}_0 *"),
            format!("SET i{f} *"),
            "INCRBY usedSpace 4096",
            "EXEC",
            "UNWATCH",
        ]
    );
    expect_trace!(
        fx,
        fx.meta.read(f, 0).await.unwrap(),
        want![format!("LRANGE c{f}_0 0 -1")]
    );
    // An empty chunk also reads the attribute (EPERM for non-files).
    expect_trace!(
        fx,
        fx.meta.read(f, 1).await.unwrap(),
        want![format!("LRANGE c{f}_1 0 -1"), format!("GET i{f}")]
    );

    fx.meta.unlink(&fx.ctx, p, b"f").await.unwrap();
    expect_trace!(
        fx,
        fx.meta.flush().await.unwrap(),
        want![
            // dir stat of p: +1 file, +5000 B, then −1 file, −5000 B. The directory stays
            // in the batch (JuiceFS keeps it in its `dirStats` map), so `doUpdateDirStat`
            // asks whether its record exists and then has nothing to add.
            format!("HEXISTS dirUsedSpace {p}"),
            format!("LLEN c{f}_0"),
            format!("WATCH c{f}_0"),
            format!("LRANGE c{f}_0 0 -1"),
            "MULTI",
            format!("DEL c{f}_0"),
            format!("HINCRBY sliceRef k{id}_5000 -1"),
            "EXEC",
            "UNWATCH",
            format!("HDEL sliceRef k{id}_5000"),
            format!("ZREM delfiles {f}:5000"),
        ]
    );
}

#[tokio::test]
async fn root_dir_stat_is_synced_on_first_flush() {
    let mut fx = Fixture::new().await;
    let (d, _) = fx
        .meta
        .mkdir(&fx.ctx, ROOT_INODE, b"top", 0o755, 0)
        .await
        .unwrap();
    expect_trace!(
        fx,
        fx.meta.flush().await.unwrap(),
        want![
            "HEXISTS dirUsedSpace 1",
            "HSCAN d1 0 MATCH * COUNT 10000",
            format!("MGET i{d}"),
            "WATCH i1",
            "EXISTS i1",
            "MULTI",
            "HSET dirDataLength 1 0",
            "HSET dirUsedSpace 1 4096",
            "HSET dirUsedInodes 1 1",
            "EXEC",
            "UNWATCH",
        ]
    );
}

//! The registered sessions (the `mount` profile's `NewSession(true)`) and the workers of
//! one client (`--threads-per-client`), over every engine as in `conformance`, on its
//! volumes.

use super::conformance::{errno, volume};
use metabench_engine::base::SLICE_RUN;
use metabench_engine::{Ctx, SessionOptions, SetAttr, TxLock};
use metabench_schema::{FileType, ROOT_INODE};
use metabench_testkit::{Kind, TestEngine};

/// Asserts that `$result` is the error `$errno`.
macro_rules! assert_errno {
    ($result:expr, $errno:literal) => {
        assert_eq!(errno($result), $errno, "{}", stringify!($result))
    };
}

metabench_testkit::engine_matrix!(
    [memkv, etcd, etcd34, tikv, redis, redis_cluster, sqlite, mysql, postgres] =>
    registered_sessions,
    workers_share_one_client,
);

/// The sessions of this process that `juicefs status` lists: their ids, sorted.
fn sessions_listed(url: &str) -> Vec<u64> {
    let status = metabench_testkit::juicefs_status(url);
    let mut sids: Vec<u64> = status["Sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["ProcessID"] == std::process::id())
        .inspect(|s| {
            assert!(
                s["Version"].as_str().unwrap().starts_with("metabench "),
                "{s}"
            );
        })
        .map(|s| s["Sid"].as_u64().unwrap())
        .collect();
    sids.sort();
    sids
}

/// `NewSession(true)` under the mount profile: each session gets an id and a record that
/// `juicefs status` lists, works as any session (on Redis, lookup and resolve go through
/// the Lua scripts), and leaves no record once closed, or once the engine cleans up the
/// sessions that were never closed.
async fn registered_sessions(on: TestEngine) {
    let mut v = volume(on).await;
    let opts = SessionOptions {
        register: true,
        ..Default::default()
    };
    let mut a = v.engine.session(&opts).await.unwrap();
    let mut b = v.engine.session(&opts).await.unwrap();
    let (sa, sb) = (a.sid(), b.sid());
    assert!(sa > 0 && sb > sa, "session ids {sa}, {sb}");
    assert_eq!(v.s.sid(), 0, "an unregistered session has sid 0");
    assert_eq!(v.engine.sessions().open(), vec![sa, sb]);
    // juicefs reads the records (memkv lives in this process only).
    let juicefs_sees = on != TestEngine::Memkv;
    if juicefs_sees {
        assert_eq!(sessions_listed(&v.url), vec![sa, sb]);
    }

    let ctx = v.ctx.clone();
    let (d, _) = a.mkdir(&ctx, ROOT_INODE, b"rs", 0o755, 0).await.unwrap();
    let (f, _) = a.create(&ctx, d, b"f", 0o644, 0).await.unwrap();
    assert_eq!(b.lookup(&ctx, d, b"f").await.unwrap().0, f);
    assert_errno!(b.lookup(&ctx, d, b"nope").await, "ENOENT");
    // With the Cluster's key prefix JuiceFS never uses its scripts: no resolve.
    if on == TestEngine::RedisCluster {
        assert_errno!(b.resolve(&ctx, ROOT_INODE, b"rs/f").await, "ENOTSUP");
    }
    if on == TestEngine::Db(Kind::Redis) {
        let (ino, attr) = b.resolve(&ctx, ROOT_INODE, b"rs/f").await.unwrap();
        assert_eq!((ino, attr.typ), (f, FileType::File));
        assert_errno!(b.resolve(&ctx, ROOT_INODE, b"rs/nope").await, "ENOENT");
        assert_errno!(b.resolve(&ctx, ROOT_INODE, b"rs/f/x").await, "ENOTDIR");
        let user = Ctx {
            uid: 7,
            gids: vec![7],
            pid: 1,
        };
        a.setattr(
            &ctx,
            d,
            &metabench_engine::SetAttr {
                mode: Some(0o700),
                ..Default::default()
            },
        )
        .await
        .unwrap();
        assert_errno!(b.resolve(&user, ROOT_INODE, b"rs/f").await, "EACCES");
        a.symlink(&ctx, d, b"l", b"f").await.unwrap();
        assert_errno!(b.resolve(&ctx, ROOT_INODE, b"rs/l/x").await, "ENOTSUP");
    } else {
        assert_errno!(b.resolve(&ctx, ROOT_INODE, b"rs/f").await, "ENOTSUP");
    }

    // Closing removes the record; the engine's clean-up removes what was never closed.
    a.close().await.unwrap();
    assert_eq!(a.sid(), 0);
    assert_eq!(v.engine.sessions().open(), vec![sb]);
    if juicefs_sees {
        assert_eq!(sessions_listed(&v.url), vec![sb]);
    }
    assert_eq!(v.engine.close_sessions().await.unwrap(), 1);
    assert!(v.engine.sessions().open().is_empty());
    // A session still in use does not write its record back at its next heartbeat.
    b.flush().await.unwrap();
    assert_eq!(b.sid(), 0);
    if juicefs_sees {
        assert!(sessions_listed(&v.url).is_empty());
    }
    // The sessions go on working, unregistered.
    assert_eq!(a.lookup(&ctx, d, b"f").await.unwrap().0, f);
    drop(b);
    v.finish().await;
}

/// Workers of one client (`--threads-per-client`): one registered session, one id batch,
/// and JuiceFS's process-local transaction locks, which another client does not share.
async fn workers_share_one_client(on: TestEngine) {
    let v = volume(on).await;
    let opts = SessionOptions {
        register: true,
        ..Default::default()
    };
    let mut a = v.engine.session(&opts).await.unwrap();
    let mut a2 = v.engine.worker(&opts, &a.client()).await.unwrap();
    let mut b = v.engine.session(&opts).await.unwrap();
    assert!(a.client().same_client(&a2.client()));
    assert!(!a.client().same_client(&b.client()));
    let (sa, sb) = (a.sid(), b.sid());
    assert!(sa > 0 && a2.sid() == sa, "one session for both workers");
    assert_eq!(v.engine.sessions().open(), vec![sa, sb]);
    if on != TestEngine::Memkv {
        assert_eq!(sessions_listed(&v.url), vec![sa, sb]);
    }

    // One inode batch and one slice batch for the client's workers; the other client
    // takes batches of its own.
    let ctx = v.ctx.clone();
    let (d1, _) = a.mkdir(&ctx, ROOT_INODE, b"w1", 0o755, 0).await.unwrap();
    let (d2, _) = a2.mkdir(&ctx, ROOT_INODE, b"w2", 0o755, 0).await.unwrap();
    let (d3, _) = b.mkdir(&ctx, ROOT_INODE, b"w3", 0o755, 0).await.unwrap();
    assert_eq!(
        d2,
        d1 + 1,
        "the second worker takes the next id of the batch"
    );
    assert!(
        d3 / 1024 > d1 / 1024,
        "another client has a batch of its own: {d1} {d3}"
    );
    // Each worker takes its slice ids in runs from the client's batch: the second worker
    // gets the run after the first's, from the same batch.
    let s1 = a2.new_slice().await.unwrap();
    assert_eq!(a.new_slice().await.unwrap(), s1 + SLICE_RUN);
    assert_eq!(a2.new_slice().await.unwrap(), s1 + 1);
    assert!(b.new_slice().await.unwrap() / 4096 > s1 / 4096);

    // setattr's transaction locks the inode (Redis: the hash of its first key, the
    // inode's; SQLite: inode 1 for every transaction). While the client holds that lock,
    // its worker waits; the other client does not.
    // A Cluster's keys carry the hash tag, and JuiceFS hashes the whole first key.
    let lock_key = match on {
        TestEngine::RedisCluster => format!("{{1}}i{d1}"),
        _ => format!("i{d1}"),
    };
    let lock = match on {
        TestEngine::Db(Kind::Redis) | TestEngine::RedisCluster => TxLock::Key(&lock_key),
        TestEngine::Db(Kind::Sqlite) => TxLock::Inodes(&[ROOT_INODE]),
        _ => TxLock::Inodes(&[d1]),
    };
    let chmod = |mode| SetAttr {
        mode: Some(mode),
        ..Default::default()
    };
    let held = a.client().tx_lock(lock).await;
    let waited = tokio::time::timeout(
        std::time::Duration::from_millis(300),
        a2.setattr(&ctx, d1, &chmod(0o700)),
    )
    .await;
    assert!(waited.is_err(), "the worker waited for its client's lock");
    let other = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        b.setattr(&ctx, d1, &chmod(0o711)),
    )
    .await;
    assert_eq!(
        other.expect("another client is not held").unwrap().mode,
        0o711
    );
    drop(held);
    assert_eq!(
        a2.setattr(&ctx, d1, &chmod(0o750)).await.unwrap().mode,
        0o750
    );

    // Either worker's close removes the one record; the other then closes nothing.
    a2.close().await.unwrap();
    assert_eq!((a.sid(), a2.sid()), (0, 0));
    assert_eq!(v.engine.sessions().open(), vec![sb]);
    a.close().await.unwrap();
    b.close().await.unwrap();
    assert!(v.engine.sessions().open().is_empty());
    if on != TestEngine::Memkv {
        assert!(sessions_listed(&v.url).is_empty());
    }
    v.finish().await;
}

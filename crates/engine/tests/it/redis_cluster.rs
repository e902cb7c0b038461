//! A three-primary Redis Cluster, as JuiceFS uses one (`newRedisMeta`): every key of the
//! volume on database N carries the hash tag `{N}`, so all of them live on the primary of
//! that one slot, and no `SELECT` is sent. Reached through a seed list or through one
//! node that answers `CLUSTER INFO` as a Cluster node; `juicefs` writes and reads the
//! same keys both ways; only the volume's tagged keys count, and only they are removed.

use super::common::volume_format;
use super::url_forms::{both_ways, open};
use metabench_engine::{Ctx, SessionOptions, VolumeState};
use metabench_schema::ROOT_INODE;
use metabench_testkit::{
    dump_tree, juicefs_dump, juicefs_format_with, temp_dir, RedisCluster, RedisServer, Resp,
};

/// Every key a node holds (`KEYS *`: the test's own private nodes are small).
fn keys_of(node: &RedisServer) -> Vec<String> {
    match node.command(&["KEYS", "*"]) {
        Resp::Array(Some(keys)) => keys
            .into_iter()
            .map(|k| match k {
                Resp::Bulk(Some(b)) => String::from_utf8(b).unwrap(),
                other => panic!("{other:?}"),
            })
            .collect(),
        other => panic!("KEYS answered {other:?}"),
    }
}

/// Sets `key` on whichever node serves its slot (the others answer MOVED).
fn set_anywhere(cluster: &RedisCluster, key: &str) {
    let set = cluster
        .nodes
        .iter()
        .any(|n| n.command(&["SET", key, "not-juicefs"]) == Resp::Simple("OK".into()));
    assert!(set, "no node took {key}");
}

/// `juicefs format` through the seed list, metabench writes, `juicefs dump` reads; then
/// metabench formats another database and `juicefs` reads it. Every key sits on the
/// primary of the `{db}` slot, prefixed with the tag; the other primaries hold none.
#[tokio::test]
async fn a_cluster_volume_works_both_ways_with_juicefs_through_the_seed_list() {
    let cluster = RedisCluster::start();
    both_ways(&cluster.url(1), "cluster-volume").await;
    let owner = cluster.owner_of(1);
    for (i, node) in cluster.nodes.iter().enumerate() {
        let keys = keys_of(node);
        if i == owner {
            assert!(keys.contains(&"{1}setting".to_owned()), "{keys:?}");
            assert!(keys.contains(&"{1}d1".to_owned()), "{keys:?}");
            assert!(keys.iter().all(|k| k.starts_with("{1}")), "{keys:?}");
        } else {
            assert!(keys.is_empty(), "node {i}: {keys:?}");
        }
    }

    // The other way: metabench formats database 2; juicefs reads the tree it wrote.
    let url = cluster.url(2);
    let engine = open(&url).await.unwrap();
    assert_eq!(engine.probe().await.unwrap(), VolumeState::Empty);
    let uuid = uuid::Uuid::new_v4().to_string();
    engine
        .format(&volume_format("mb-cluster", &uuid))
        .await
        .unwrap();
    let mut s = engine.session(&SessionOptions::default()).await.unwrap();
    let ctx = Ctx::root();
    let (d, _) = s.mkdir(&ctx, ROOT_INODE, b"m", 0o755, 0o022).await.unwrap();
    s.symlink(&ctx, d, b"l", b"/target").await.unwrap();
    s.close().await.unwrap();
    let dump = juicefs_dump(&url);
    assert_eq!(dump["Setting"]["Name"], "mb-cluster");
    let tree = dump_tree(&dump);
    assert!(tree.contains_key("/m/l"), "{:?}", tree.keys());
    let info = engine.server_info().await.unwrap();
    let line = &info.settings["cluster"];
    assert!(
        line.starts_with("3 primaries; the volume's slot 5649"),
        "{line}"
    );
    let notes = engine.fidelity_notes();
    assert!(
        notes.last().unwrap().starts_with("Redis Cluster: "),
        "{notes:?}"
    );

    // Destroying database 2's volume leaves database 1's untouched.
    let before = keys_of(&cluster.nodes[owner]);
    let ones = before.iter().filter(|k| k.starts_with("{1}")).count();
    engine.destroy(&uuid).await.unwrap();
    let after: Vec<String> = cluster.nodes.iter().flat_map(keys_of).collect();
    assert!(!after.iter().any(|k| k.starts_with("{2}")), "{after:?}");
    assert_eq!(after.iter().filter(|k| k.starts_with("{1}")).count(), ones);
}

/// One node's URL, as newRedisMeta tells: a node in cluster mode (it refuses `SELECT`, or
/// answers `CLUSTER INFO` with a `cluster_state`) is a Cluster, whichever primary it is.
/// juicefs formats through it; metabench finds the volume through it and through the
/// seed list.
#[tokio::test]
async fn one_node_of_a_cluster_is_taken_for_the_cluster_as_juicefs_takes_it() {
    let cluster = RedisCluster::start();
    let other = (cluster.owner_of(3) + 1) % 3;
    let single = cluster.nodes[other].url(3);
    let bucket = temp_dir();
    juicefs_format_with(&single, "one-node", bucket.path(), &["--trash-days", "0"]);
    for url in [single.clone(), cluster.url(3)] {
        match open(&url).await.unwrap().probe().await.unwrap() {
            VolumeState::Volume(f) => assert_eq!(f.name, "one-node"),
            other => panic!("{url}: {other:?}"),
        }
    }
    let keys = keys_of(&cluster.nodes[cluster.owner_of(3)]);
    assert!(keys.contains(&"{3}setting".to_owned()), "{keys:?}");
    // Database 0 sends no SELECT at all: CLUSTER INFO answers.
    let zero = open(&cluster.nodes[other].url(0)).await.unwrap();
    assert_eq!(zero.probe().await.unwrap(), VolumeState::Empty);
    assert!(zero.server_info().await.unwrap().settings["cluster"].contains("slot 13907"));
}

/// Only keys with the volume's tag count: a stranger's `{5}` key makes database 5
/// foreign (format refuses, nothing is written); keys without the tag, or another
/// database's, neither stop a format nor go with a destroy.
#[tokio::test]
async fn only_the_volumes_tagged_keys_count_and_only_they_are_removed() {
    let cluster = RedisCluster::start();
    let url = cluster.url(5);
    let engine = open(&url).await.unwrap();
    set_anywhere(&cluster, "{5}someone-else");
    match engine.probe().await.unwrap() {
        VolumeState::Foreign(why) => {
            assert_eq!(why, "keys tagged {5} and no JuiceFS setting")
        }
        other => panic!("{other:?}"),
    }
    let uuid = uuid::Uuid::new_v4().to_string();
    let format = volume_format("tagged", &uuid);
    let err = engine.format(&format).await.unwrap_err().to_string();
    assert!(err.contains("not empty (keys tagged {5})"), "{err}");
    let all: Vec<String> = cluster.nodes.iter().flat_map(keys_of).collect();
    assert_eq!(all, ["{5}someone-else"]);
    for n in &cluster.nodes {
        n.command(&["DEL", "{5}someone-else"]);
    }

    for key in ["i1", "setting", "{6}i1"] {
        set_anywhere(&cluster, key);
    }
    assert_eq!(engine.probe().await.unwrap(), VolumeState::Empty);
    engine.format(&format).await.unwrap();
    let mut s = engine.session(&SessionOptions::default()).await.unwrap();
    s.create(&Ctx::root(), ROOT_INODE, b"f", 0o644, 0)
        .await
        .unwrap();
    s.close().await.unwrap();
    // A key with the volume's tag that is no JuiceFS key stays too.
    set_anywhere(&cluster, "{5}not-juicefs");
    engine.destroy(&uuid).await.unwrap();
    let mut left: Vec<String> = cluster.nodes.iter().flat_map(keys_of).collect();
    left.sort();
    assert_eq!(left, ["i1", "setting", "{5}not-juicefs", "{6}i1"]);
}

/// The database number is read as go-redis reads it: `/02` is database 2, whose keys carry
/// `{2}`, on the primary of slot 5649; "02" would hash to slot 4996, on another primary.
#[tokio::test]
async fn a_database_written_02_is_the_tag_2() {
    let cluster = RedisCluster::start();
    assert_ne!(
        cluster.serving("{02}setting"),
        cluster.serving("{2}setting")
    );
    let bucket = temp_dir();
    let url = cluster.url(2);
    juicefs_format_with(&url, "db-two", bucket.path(), &["--trash-days", "0"]);
    let url = url.replace("/2", "/02");
    match open(&url).await.unwrap().probe().await.unwrap() {
        VolumeState::Volume(f) => assert_eq!(f.name, "db-two"),
        other => panic!("{url}: {other:?}"),
    }
}

/// A primary that the seeds still name but that does not answer is one line naming it; a
/// Cluster node's Unix socket is refused, as the Cluster names its nodes by TCP address.
#[tokio::test]
async fn a_dead_primary_is_named_and_a_nodes_unix_socket_is_refused() {
    let mut cluster = RedisCluster::start();
    let socket = cluster.nodes[0].unix_url(0);
    let err = open(&socket).await.err().unwrap().to_string();
    assert!(err.contains("reach the Cluster over TCP"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let owner = cluster.owner_of(1);
    let port = cluster.nodes[owner].port();
    cluster.nodes[owner].kill();
    let err = open(&cluster.url(1)).await.err().unwrap().to_string();
    assert!(
        err.contains(&format!(
            "the primary of the volume's slot 9842, 127.0.0.1:{port} (as the seeds name it): \
             connection refused"
        )),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        !err.contains(cluster.nodes[(owner + 1) % 3].password()),
        "{err}"
    );
}

/// Seeds that do not answer, or refuse the password, are one line that names each seed,
/// never the password.
#[tokio::test]
async fn seeds_that_do_not_answer_or_refuse_the_password_are_one_line() {
    let cluster = RedisCluster::start();
    let closed = |_| {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let (a, b) = (closed(0), closed(1));
    let nobody = format!("redis://:n0b0dy-s3cret@127.0.0.1:{a},127.0.0.1:{b}/1");
    let wrong = cluster
        .url(1)
        .replace(cluster.nodes[0].password(), "wr0ng-s3cret");
    for (url, want) in [
        (
            nobody,
            format!(
                "no Cluster seed named the primary of the volume's slot \
                 (127.0.0.1:{a}: connection refused; 127.0.0.1:{b}: connection refused)"
            ),
        ),
        (wrong, "WRONGPASS".to_owned()),
    ] {
        let err = open(&url).await.err().unwrap().to_string();
        assert!(err.contains(&want), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(!err.contains("s3cret"), "{err}");
    }
}

/// After a Cluster failover (`CLUSTER FAILOVER` on the replica of the volume's primary),
/// sessions whose connections still reach the old primary meet MOVED on their next
/// request, whatever its kind, and follow it within the call as go-redis does: a single
/// command (getattr), a transaction (create), a transaction whose write is a plain
/// pipeline (removexattr), a listing, and the background flush's plain pipelines. None
/// fails, none counts a retry, and they all land on the new primary.
#[tokio::test]
async fn after_a_failover_every_kind_of_request_follows_moved() {
    let mut cluster = RedisCluster::start();
    let owner = cluster.owner_of(1);
    let replica = cluster.add_replica(owner);
    let engine = open(&cluster.url(1)).await.unwrap();
    let uuid = uuid::Uuid::new_v4().to_string();
    engine.format(&volume_format("moved", &uuid)).await.unwrap();
    let ctx = Ctx::root();
    let mut sessions = Vec::new();
    for _ in 0..5 {
        sessions.push(engine.session(&SessionOptions::default()).await.unwrap());
    }
    let s = &mut sessions[0];
    let (d, _) = s.mkdir(&ctx, ROOT_INODE, b"d", 0o755, 0).await.unwrap();
    let (f, _) = s.create(&ctx, d, b"f", 0o644, 0).await.unwrap();
    s.setxattr(f, b"user.a", b"1", metabench_engine::XattrFlags::Any)
        .await
        .unwrap();
    s.flush().await.unwrap();
    // The last session has dir stats of its own to flush, for two directories: its
    // flush opens with a pipeline of two HEXISTS.
    sessions[4].create(&ctx, d, b"h", 0o644, 0).await.unwrap();
    sessions[4]
        .create(&ctx, ROOT_INODE, b"r", 0o644, 0)
        .await
        .unwrap();
    let retries: Vec<u64> = sessions.iter().map(|s| s.stats().retries).collect();
    cluster.fail_over_to(replica);
    let new_primary = &cluster.nodes[replica];
    new_primary.reset_stats();
    sessions[0].getattr(f).await.unwrap();
    sessions[1].removexattr(f, b"user.a").await.unwrap();
    sessions[2].create(&ctx, d, b"g", 0o644, 0).await.unwrap();
    let names: Vec<Vec<u8>> = sessions[3]
        .readdir(&ctx, d, true)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert!(names.contains(&b"g".to_vec()), "{names:?}");
    sessions[4].flush().await.unwrap();
    let stats = new_primary.commandstats();
    for cmd in ["get", "hscan", "mget", "watch", "hdel", "exec", "hincrby"] {
        assert!(stats.get(cmd).copied().unwrap_or(0) > 0, "{cmd}: {stats:?}");
    }
    let after: Vec<u64> = sessions.iter().map(|s| s.stats().retries).collect();
    assert_eq!(after, retries, "a followed MOVED is no conflict");
    for s in &mut sessions {
        s.close().await.unwrap();
    }
    engine.destroy(&uuid).await.unwrap();
}

//! HDFS against a real NameNode and DataNode: the MiniDFSCluster that `scripts/engines.sh`
//! starts from Apache Hadoop's jars (`METABENCH_HDFS_URL`).

use hdfs_native::{ClientBuilder, WriteOptions};
use metabench_hdfs::{HdfsTarget, HdfsUrl};
use metabench_pathfs::tree::{run_smoke, Phase};
use metabench_pathfs::PathSystem;
use std::time::{Duration, Instant};

/// The test cluster's URL, with a directory of this test's own.
fn url(tag: &str) -> HdfsUrl {
    let base = std::env::var("METABENCH_HDFS_URL").expect(
        "METABENCH_HDFS_URL is not set: run the tests through scripts/test.sh, which starts HDFS",
    );
    HdfsUrl::parse(&format!(
        "{base}/it-{tag}-{}",
        uuid::Uuid::new_v4().simple()
    ))
    .unwrap()
}

fn run_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..8].to_owned()
}

/// A client of the test cluster for looking at what metabench left.
fn observer(url: &HdfsUrl) -> hdfs_native::Client {
    ClientBuilder::new()
        .with_url(&url.namenode)
        .build()
        .unwrap()
}

/// Writes an empty file at `path` as someone else would.
async fn put_theirs(url: &HdfsUrl, path: &str) {
    observer(url)
        .create(path, WriteOptions::default().create_parent(true))
        .await
        .unwrap()
        .close()
        .await
        .unwrap();
}

async fn exists(url: &HdfsUrl, path: &str) -> bool {
    match observer(url).get_file_info(path).await {
        Ok(_) => true,
        Err(hdfs_native::HdfsError::FileNotFound(_)) => false,
        Err(e) => panic!("stat {path}: {e}"),
    }
}

#[tokio::test]
async fn mdtest_phases_run_on_hdfs_and_the_run_leaves_nothing() {
    let url = url("tree");
    let target = HdfsTarget::open(&url, &run_id(), false).await.unwrap();
    assert!(target
        .root()
        .starts_with(&format!("{}/metabench-", url.path)));
    let clients = vec![target.fs().unwrap(), target.fs().unwrap()];
    let results = run_smoke(clients, target.root().to_owned()).await.unwrap();
    assert!(results.iter().all(|r| r.ops_per_s > 0.0), "{results:?}");
    assert!(results.iter().any(|r| r.phase == Phase::FileRead));
    // The removal phases took away every item and tree: the run's directory is empty.
    let left = observer(&url)
        .list_status(target.root(), true)
        .await
        .unwrap();
    assert!(left.is_empty(), "{left:?}");
    target.cleanup().await.unwrap();
    assert!(
        !exists(&url, &url.path).await,
        "the path metabench made is removed"
    );
}

#[tokio::test]
async fn files_written_are_on_the_datanode_and_read_back() {
    let url = url("rw");
    let target = HdfsTarget::open(&url, &run_id(), false).await.unwrap();
    let mut fs = target.fs().unwrap();
    let root = target.root().to_owned();
    use metabench_pathfs::FsOps;
    fs.create(&root, "f", 3000).await.unwrap();
    let status = observer(&url)
        .get_file_info(&format!("{root}/f"))
        .await
        .unwrap();
    assert_eq!(status.length, 3000);
    fs.read(&root, "f", 3000).await.unwrap();
    fs.open(&root, "f").await.unwrap();
    let e = fs.create(&root, "f", 1).await.unwrap_err().to_string();
    assert!(e.contains("hdfs create") && e.contains("f"), "{e}");
    fs.rename(&root, "f", "g").await.unwrap();
    let e = fs.open(&root, "f").await.unwrap_err().to_string();
    assert!(e.contains("not found"), "{e}");
    assert_eq!(
        observer(&url)
            .get_file_info(&format!("{root}/g"))
            .await
            .unwrap()
            .length,
        3000
    );
    fs.unlink(&root, "g").await.unwrap();
    let e = fs.stat(&root, "g").await.unwrap_err().to_string();
    assert!(e.contains("not found"), "{e}");
    target.cleanup().await.unwrap();
}

#[tokio::test]
async fn a_directory_that_holds_data_is_refused_unless_existing_and_is_left_alone() {
    let url = url("held");
    let theirs = format!("{}/theirs", url.path);
    put_theirs(&url, &theirs).await;
    let e = HdfsTarget::open(&url, &run_id(), false)
        .await
        .err()
        .expect("refused")
        .to_string();
    assert!(
        e.contains("holds 1 entries") && e.contains("--existing"),
        "{e}"
    );
    assert!(!e.contains('\n'), "{e}");
    let listed = |u: &HdfsUrl| {
        let u = u.clone();
        async move {
            let mut names: Vec<String> = observer(&u)
                .list_status(&u.path, false)
                .await
                .unwrap()
                .into_iter()
                .map(|s| s.path.rsplit('/').next().unwrap().to_owned())
                .collect();
            names.sort();
            names
        }
    };
    assert_eq!(
        listed(&url).await,
        ["theirs"],
        "nothing written when refused"
    );

    let target = HdfsTarget::open(&url, "own", true).await.unwrap();
    assert_eq!(listed(&url).await, ["metabench-own", "theirs"]);
    target.cleanup().await.unwrap();
    assert_eq!(
        listed(&url).await,
        ["theirs"],
        "only its own directory removed"
    );
    observer(&url).delete(&url.path, true).await.unwrap();
}

#[tokio::test]
async fn a_file_as_the_path_is_refused() {
    let url = url("file");
    put_theirs(&url, &url.path).await;
    let e = HdfsTarget::open(&url, &run_id(), false)
        .await
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("is a file"), "{e}");
    observer(&url).delete(&url.path, false).await.unwrap();
}

#[tokio::test]
async fn an_unreachable_namenode_is_one_line_and_quick() {
    // A port nothing listens on (bound, then released).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = HdfsUrl::parse(&format!("hdfs://127.0.0.1:{port}/x")).unwrap();
    let t0 = Instant::now();
    let e = HdfsTarget::open(&url, &run_id(), false)
        .await
        .err()
        .expect("unreachable")
        .to_string();
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    assert!(e.contains("cannot reach the NameNode"), "{e}");
    assert!(!e.contains('\n'), "{e}");
}

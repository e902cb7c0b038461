//! S3 against a real S3-compatible server: the versitygw gateway (POSIX backend) that
//! `scripts/engines.sh` starts (`METABENCH_S3_URL`, with its keys in
//! `METABENCH_S3_ACCESS_KEY` and `METABENCH_S3_SECRET_KEY`).

use metabench_pathfs::tree::run_smoke;
use metabench_pathfs::{FsOps, PathSystem};
use metabench_s3::{S3Keys, S3Target, S3Url};
use object_store::aws::AmazonS3Builder;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use std::time::{Duration, Instant};

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!(
            "{name} is not set: run the tests through scripts/test.sh, which starts the S3 server"
        )
    })
}

fn keys() -> S3Keys {
    S3Keys {
        access_key_id: env("METABENCH_S3_ACCESS_KEY"),
        secret_access_key: env("METABENCH_S3_SECRET_KEY"),
    }
}

/// The test server's bucket, with a prefix of this test's own.
fn url(tag: &str) -> S3Url {
    let base = S3Url::parse(&env("METABENCH_S3_URL")).unwrap();
    S3Url {
        prefix: format!("it-{tag}-{}", uuid::Uuid::new_v4().simple()),
        ..base
    }
}

fn run_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..8].to_owned()
}

/// A target on a fresh prefix `tag` of the test bucket (see [`url`]).
async fn open_target(tag: &str) -> (S3Url, S3Target) {
    let url = url(tag);
    let target = S3Target::open(&url, Some(&keys()), &run_id(), false)
        .await
        .unwrap();
    (url, target)
}

/// The error `S3Target::open` answers for `url` and `keys` (`what`: why it must refuse).
async fn refusal(url: &S3Url, keys: &S3Keys, what: &str) -> String {
    S3Target::open(url, Some(keys), &run_id(), false)
        .await
        .err()
        .expect(what)
        .to_string()
}

/// A client of the test bucket for looking at what metabench left.
fn observer(url: &S3Url) -> impl ObjectStore {
    let k = keys();
    rustls_default();
    AmazonS3Builder::new()
        .with_bucket_name(&url.bucket)
        .with_endpoint(url.endpoint.as_deref().unwrap())
        .with_allow_http(true)
        .with_region(url.region.as_deref().unwrap_or("us-east-1"))
        .with_access_key_id(k.access_key_id)
        .with_secret_access_key(k.secret_access_key)
        .build()
        .unwrap()
}

fn rustls_default() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

async fn keys_below(url: &S3Url, prefix: &str) -> Vec<String> {
    use futures_util::TryStreamExt;
    let mut keys: Vec<String> = observer(url)
        .list(Some(&Path::from(prefix)))
        .map_ok(|m| m.location.to_string())
        .try_collect()
        .await
        .unwrap();
    keys.sort();
    keys
}

#[tokio::test]
async fn mdtest_phases_run_on_s3_and_the_run_leaves_nothing() {
    let (url, target) = open_target("tree").await;
    let root = target.root().to_owned();
    assert!(root.starts_with(&format!("{}/metabench-", url.prefix)));
    let clients = vec![target.fs().unwrap(), target.fs().unwrap()];
    let results = run_smoke(clients, root.clone()).await.unwrap();
    assert!(results.iter().all(|r| r.ops_per_s > 0.0), "{results:?}");
    assert_eq!(
        keys_below(&url, &root).await,
        Vec::<String>::new(),
        "the removal phases took every key"
    );
    target.cleanup().await.unwrap();
}

#[tokio::test]
async fn objects_are_written_read_renamed_by_copy_and_deleted() {
    let (url, target) = open_target("rw").await;
    let root = target.root().to_owned();
    let mut fs = target.fs().unwrap();
    fs.mkdir(&root, "d").await.unwrap();
    fs.create(&root, "f", 3000).await.unwrap();
    let meta = observer(&url)
        .head(&Path::from(format!("{root}/f")))
        .await
        .unwrap();
    assert_eq!(meta.size, 3000);
    fs.read(&root, "f", 3000).await.unwrap();
    fs.open(&root, "f").await.unwrap();
    fs.stat(&root, "d").await.unwrap();
    fs.rename(&root, "f", "g").await.unwrap();
    assert_eq!(
        keys_below(&url, &root).await,
        [format!("{root}/d"), format!("{root}/g")],
        "the marker d/ (listed without its slash) and the renamed object"
    );
    let e = fs.stat(&root, "f").await.unwrap_err().to_string();
    assert!(e.contains("not found"), "{e}");
    let e = fs.open(&root, "f").await.unwrap_err().to_string();
    assert!(e.contains("s3 head") && e.contains("not found"), "{e}");
    fs.create(&root, "d/x", 1).await.unwrap();
    let e = fs.rmdir(&root, "d").await.unwrap_err().to_string();
    assert!(e.contains("not empty"), "{e}");
    target.cleanup().await.unwrap();
    assert_eq!(keys_below(&url, &root).await, Vec::<String>::new());
}

#[tokio::test]
async fn a_prefix_that_holds_data_is_refused_unless_existing_and_is_left_alone() {
    let url = url("held");
    let theirs = format!("{}/theirs", url.prefix);
    observer(&url)
        .put(&Path::from(theirs.as_str()), b"data".to_vec().into())
        .await
        .unwrap();
    let e = refusal(&url, &keys(), "refused").await;
    assert!(e.contains("holds data") && e.contains("--existing"), "{e}");
    assert!(!e.contains('\n'), "{e}");

    let target = S3Target::open(&url, Some(&keys()), "own", true)
        .await
        .unwrap();
    let mut fs = target.fs().unwrap();
    fs.create(&target.root().to_owned(), "mine", 1)
        .await
        .unwrap();
    assert_eq!(
        keys_below(&url, &url.prefix).await,
        [format!("{}/metabench-own/mine", url.prefix), theirs.clone()]
    );
    target.cleanup().await.unwrap();
    assert_eq!(
        keys_below(&url, &url.prefix).await,
        std::slice::from_ref(&theirs)
    );
    observer(&url).delete(&Path::from(theirs)).await.unwrap();
}

#[tokio::test]
async fn wrong_keys_a_missing_bucket_and_an_unreachable_endpoint_are_one_line() {
    let good = url("bad");
    let wrong = S3Keys {
        secret_access_key: "not-the-secret".into(),
        ..keys()
    };
    let e = refusal(&good, &wrong, "wrong keys refused").await;
    assert!(!e.contains('\n') && !e.contains("not-the-secret"), "{e}");
    assert!(
        e.contains("s3 list") && e.contains("SignatureDoesNotMatch"),
        "{e}"
    );

    let missing = S3Url {
        bucket: format!("no-such-bucket-{}", run_id()),
        ..good.clone()
    };
    let e = refusal(&missing, &keys(), "missing bucket refused").await;
    assert!(!e.contains('\n'), "{e}");
    assert!(
        e.contains(&missing.bucket) && e.contains("NoSuchBucket"),
        "{e}"
    );

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let nowhere = S3Url {
        endpoint: Some(format!("http://127.0.0.1:{port}")),
        ..good
    };
    let t0 = Instant::now();
    let e = refusal(&nowhere, &keys(), "unreachable").await;
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    assert!(e.contains("cannot reach the endpoint"), "{e}");
    assert!(!e.contains('\n'), "{e}");
}

//! S3 beside JuiceFS: `s3://bucket/prefix?endpoint=…&region=…` as a path-level target.
//!
//! The calls go through [`object_store`]'s S3 client, one REST request per call, shaped as
//! Hadoop's S3A connector makes them (S3 has no directories and no rename):
//!
//! | call | requests |
//! |---|---|
//! | mkdir | PUT of an empty `dir/` marker |
//! | rmdir | LIST of `dir/` (it must be empty), DELETE of the marker |
//! | stat | HEAD of the key; when absent, a LIST of `key/` (a directory) |
//! | create | PUT of the object with its bytes (S3A uploads on close) |
//! | open (read) | HEAD, then GET (of the bytes read, when any) |
//! | unlink | DELETE |
//! | rename | COPY, then DELETE of the source |
//!
//! S3A also checks parents and existing keys around mkdir and create (more HEAD and LIST
//! requests); these calls are the least a file system on S3 must make.
//!
//! Credentials come from the usual environment variables (`AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_DEFAULT_REGION`) and are never
//! printed. Safety as for the engines: [`S3Target::open`] works only below
//! `prefix/metabench-<run>/`, refuses a prefix that holds objects unless the caller says it
//! may be used (`existing`), and [`S3Target::cleanup`] deletes only what is below its own
//! prefix.

use async_trait::async_trait;
use futures_util::TryStreamExt;
use metabench_pathfs::{FsError, FsOps, Result};
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path;
use object_store::{ClientOptions, ObjectStore, ObjectStoreExt, PutPayload, RetryConfig};
use std::sync::Arc;
use std::time::Duration;

/// A parsed `s3://bucket[/prefix][?endpoint=URL&region=R]` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Url {
    /// The bucket.
    pub bucket: String,
    /// The key prefix below which metabench works, without slashes at either end (may be
    /// empty: the bucket's top).
    pub prefix: String,
    /// An S3-compatible endpoint (`http://host:port`); none: AWS.
    pub endpoint: Option<String>,
    /// The region; none: `AWS_DEFAULT_REGION`, else `us-east-1`.
    pub region: Option<String>,
}

impl S3Url {
    /// Parses the URL: one line naming what is wrong otherwise.
    pub fn parse(text: &str) -> Result<Self> {
        let shown = redacted(text);
        let bad = |why: &str| FsError::Command(format!("bad S3 URL '{shown}': {why}"));
        let url = url::Url::parse(text).map_err(|e| bad(&e.to_string()))?;
        if url.scheme() != "s3" {
            return Err(bad("the scheme must be s3://"));
        }
        let bucket = url
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| bad("no bucket"))?
            .to_owned();
        if !url.username().is_empty() || url.password().is_some() {
            return Err(bad(
                "credentials do not go in the URL: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
            ));
        }
        let (mut endpoint, mut region) = (None, None);
        for (k, v) in url.query_pairs() {
            match k.as_ref() {
                "endpoint" => {
                    let e = url::Url::parse(&v).map_err(|_| bad("endpoint= must be a URL"))?;
                    if !matches!(e.scheme(), "http" | "https") {
                        return Err(bad("endpoint= must be http:// or https://"));
                    }
                    endpoint = Some(v.trim_end_matches('/').to_owned());
                }
                "region" => region = Some(v.into_owned()),
                other => {
                    return Err(bad(&format!(
                        "unknown option '{other}' (supported: endpoint, region)"
                    )))
                }
            }
        }
        Ok(Self {
            bucket,
            prefix: url.path().trim_matches('/').to_owned(),
            endpoint,
            region,
        })
    }

    /// `s3://bucket/prefix`, for messages.
    pub fn display(&self) -> String {
        format!("s3://{}/{}", self.bucket, self.prefix)
    }
}

/// `text` without whatever credentials it carries, for messages.
fn redacted(text: &str) -> String {
    match url::Url::parse(text) {
        Ok(mut u) => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.to_string()
        }
        Err(_) if text.contains('@') => "s3://…".to_owned(),
        Err(_) => text.to_owned(),
    }
}

/// An access key, when it does not come from the environment. Its `Debug` hides the
/// secret.
#[derive(Clone)]
pub struct S3Keys {
    /// The access key id.
    pub access_key_id: String,
    /// The secret access key.
    pub secret_access_key: String,
}

impl std::fmt::Debug for S3Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Keys")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"…")
            .finish()
    }
}

/// A one-line error from an S3 request: the S3 error code and message when the server
/// sent one (`NoSuchBucket`, `SignatureDoesNotMatch`, …), else what failed.
fn s3_error(what: &str, key: &str, e: object_store::Error) -> FsError {
    let full = e.to_string();
    let tag = |name: &str| {
        let open = format!("<{name}>");
        let close = format!("</{name}>");
        full.split(open.as_str())
            .nth(1)
            .and_then(|rest| rest.split(close.as_str()).next())
            .map(str::to_owned)
    };
    let text = match (tag("Code"), &e) {
        (Some(code), _) => match tag("Message") {
            Some(message) => format!("{code}: {message}"),
            None => code,
        },
        (None, object_store::Error::NotFound { .. }) => "not found".to_owned(),
        (None, _) if full.contains("error sending request") => {
            "cannot reach the endpoint (error sending request)".to_owned()
        }
        (None, _) => full.lines().next().unwrap_or("").to_owned(),
    };
    FsError::Io(format!("s3 {what} {key}: {text}"))
}

/// How long a request may take before it is an error (a frozen server shows as one).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The store for `url`: no retries (a failed request is the target's answer, not
/// metabench's to hide), path-style requests, HTTP only towards an `http://` endpoint.
fn store(url: &S3Url, keys: Option<&S3Keys>) -> Result<AmazonS3> {
    // reqwest speaks TLS through rustls with the process's provider: ring, as the engines'.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut b = AmazonS3Builder::from_env()
        .with_bucket_name(&url.bucket)
        .with_disable_bulk_delete(true)
        .with_retry(RetryConfig {
            max_retries: 0,
            ..RetryConfig::default()
        })
        .with_client_options(
            ClientOptions::new()
                .with_timeout(REQUEST_TIMEOUT)
                .with_connect_timeout(Duration::from_secs(5)),
        );
    if let Some(e) = &url.endpoint {
        b = b
            .with_endpoint(e)
            .with_allow_http(e.starts_with("http://"))
            .with_virtual_hosted_style_request(false);
    }
    if let Some(k) = keys {
        b = b
            .with_access_key_id(&k.access_key_id)
            .with_secret_access_key(&k.secret_access_key);
    }
    if let Some(r) = &url.region {
        b = b.with_region(r);
    }
    b.build().map_err(|e| {
        FsError::Command(format!(
            "s3 {}: {}",
            url.display(),
            e.to_string().lines().next().unwrap_or("")
        ))
    })
}

/// S3 at a URL, with a prefix of metabench's own below the URL's.
pub struct S3Target {
    url: S3Url,
    /// The keys given to [`S3Target::open`] (none: the environment's), for each task's
    /// own store.
    keys: Option<S3Keys>,
    store: Arc<AmazonS3>,
    /// `prefix/metabench-<run>`: the only keys metabench writes are below it.
    root: String,
}

fn under(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{prefix}/{name}")
    }
}

impl S3Target {
    /// Connects with `keys` (none: the environment's) and checks the URL's prefix. The prefix may hold no object; one that holds
    /// any is refused unless `existing`. An unreachable endpoint, wrong credentials or a
    /// missing bucket is one line. Nothing is written before these checks pass (S3 needs no
    /// directory to be made: the run's prefix exists once a key is put below it).
    pub async fn open(
        url: &S3Url,
        keys: Option<&S3Keys>,
        run_id: &str,
        existing: bool,
    ) -> Result<Self> {
        let store = Arc::new(store(url, keys)?);
        let prefix = (!url.prefix.is_empty()).then(|| Path::from(url.prefix.as_str()));
        let held = store
            .list_with_delimiter(prefix.as_ref())
            .await
            .map_err(|e| s3_error("list", &url.display(), e))?;
        let n = held.objects.len() + held.common_prefixes.len();
        if n > 0 && !existing {
            return Err(FsError::Command(format!(
                "{} holds data that metabench did not write ({n} keys or prefixes at its top): \
                 name an empty prefix, or pass --existing to work below a prefix of \
                 metabench's own in it",
                url.display()
            )));
        }
        Ok(Self {
            url: url.clone(),
            keys: keys.cloned(),
            store,
            root: under(&url.prefix, &format!("metabench-{run_id}")),
        })
    }

    /// The run's own prefix: every key metabench writes is below it.
    pub fn root(&self) -> &str {
        &self.root
    }

    /// Deletes every key below the run's prefix, one DELETE each. A listed key loses its
    /// trailing slash on the way (`Path`), so an empty one may be a directory marker: its
    /// `key/` form is deleted too (deleting an absent key is no error in S3).
    pub async fn cleanup(&self) -> Result<()> {
        delete_below(&self.store, &self.root).await.map(drop)
    }
}

/// Deletes every key below `prefix/`, one DELETE each. A listed key loses its trailing
/// slash on the way (`Path`), so an empty one may be a directory marker: its `key/` form
/// is deleted too (deleting an absent key is no error in S3). The marker of `prefix`
/// itself goes last. Returns the requests made.
async fn delete_below(store: &AmazonS3, prefix: &str) -> Result<u64> {
    let root = Path::from(prefix);
    let listed: Vec<(Path, u64)> = store
        .list(Some(&root))
        .map_ok(|m| (m.location, m.size))
        .try_collect()
        .await
        .map_err(|e| s3_error("list", prefix, e))?;
    let own_marker = [(root.clone(), 0)];
    let mut requests = 1;
    for (key, size) in listed.into_iter().chain(own_marker) {
        let marker = (size == 0).then(|| key.clone().join(""));
        for k in std::iter::once(key).chain(marker) {
            requests += 1;
            match store.delete(&k).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(s3_error("delete", k.as_ref(), e)),
            }
        }
    }
    Ok(requests)
}

impl metabench_pathfs::PathSystem for S3Target {
    type Fs = S3Fs;

    fn name(&self) -> &'static str {
        "s3"
    }

    /// A store of its own: its HTTP connections are made, and served, on the calling
    /// thread's runtime.
    fn fs(&self) -> Result<S3Fs> {
        Ok(S3Fs {
            store: Arc::new(store(&self.url, self.keys.as_ref())?),
            requests: 0,
        })
    }

    fn root(&self) -> String {
        self.root.clone()
    }

    fn url(&self) -> String {
        self.url.display()
    }

    fn client(&self) -> &'static str {
        "object_store 0.14 (S3 REST over HTTP/1.1, calls shaped as Hadoop's S3A makes them; a connection pool per task, no retries)"
    }

    fn fidelity_notes(&self) -> Vec<String> {
        let mut notes = vec![
            "S3 calls: create_write = PUT of 1 KiB; open = HEAD + GET; rename = COPY + DELETE (S3 has no rename); unlink = DELETE. S3A adds HEAD and LIST requests around create and mkdir that these calls leave out. Round trips are HTTP requests, counted per request metabench asks object_store for (with its retries off, one each).".to_owned(),
        ];
        if let Some(endpoint) = self.url.endpoint.as_deref().filter(|e| !is_aws(e)) {
            notes.push(format!(
                "Stand-in: an S3-compatible server at {endpoint}, not Amazon S3. It speaks the same REST API and answers the same calls, but keeps its objects in one local file system: read its figures as the request path's cost, not as Amazon S3's (whose index is a distributed service a network away)."
            ));
        }
        notes
    }

    async fn cleanup(&self) -> Result<()> {
        S3Target::cleanup(self).await
    }
}

/// Whether `endpoint` is Amazon S3's own.
pub fn is_aws(endpoint: &str) -> bool {
    url::Url::parse(endpoint)
        .ok()
        .and_then(|u| u.host_str().map(|h| h.ends_with(".amazonaws.com")))
        .unwrap_or(false)
}

/// One task's S3 requests, for the tree driver: directories are key prefixes.
pub struct S3Fs {
    store: Arc<AmazonS3>,
    /// HTTP requests sent (metabench asks object_store for no retries; a listing counts
    /// as one request per call).
    requests: u64,
}

impl S3Fs {
    /// The marker object of directory `dir` (`dir/`, as S3A writes it).
    fn marker(dir: &str) -> Path {
        // An empty last part: `Path` would drop a trailing slash given in the string.
        Path::from(dir).join("")
    }

    /// Whether anything is below `dir/` other than its marker.
    async fn has_children(&mut self, dir: &str) -> Result<bool> {
        self.requests += 1;
        let listed = self
            .store
            .list_with_delimiter(Some(&Path::from(dir)))
            .await
            .map_err(|e| s3_error("list", dir, e))?;
        let marker = format!("{dir}/");
        Ok(!listed.common_prefixes.is_empty()
            || listed
                .objects
                .iter()
                .any(|o| o.location.as_ref() != marker && o.location.as_ref() != dir))
    }

    /// DELETE of `key`: one request.
    async fn delete(&mut self, key: &Path) -> Result<()> {
        self.requests += 1;
        self.store
            .delete(key)
            .await
            .map_err(|e| s3_error("delete", key.as_ref(), e))
    }
}

#[async_trait]
impl FsOps for S3Fs {
    type Dir = String;

    async fn mkdir(&mut self, parent: &String, name: &str) -> Result<String> {
        let dir = under(parent, name);
        self.requests += 1;
        self.store
            .put(&Self::marker(&dir), PutPayload::new())
            .await
            .map_err(|e| s3_error("mkdir", &dir, e))?;
        Ok(dir)
    }

    async fn rmdir(&mut self, parent: &String, name: &str) -> Result<()> {
        let dir = under(parent, name);
        if self.has_children(&dir).await? {
            return Err(FsError::Io(format!("s3 rmdir {dir}: not empty")));
        }
        self.requests += 1;
        self.store
            .delete(&Self::marker(&dir))
            .await
            .map_err(|e| s3_error("rmdir", &dir, e))
    }

    async fn stat(&mut self, parent: &String, name: &str) -> Result<()> {
        let key = under(parent, name);
        self.requests += 1;
        match self.store.head(&Path::from(key.as_str())).await {
            Ok(_) => Ok(()),
            Err(object_store::Error::NotFound { .. }) => {
                self.requests += 1;
                let listed = self
                    .store
                    .list_with_delimiter(Some(&Path::from(key.as_str())))
                    .await
                    .map_err(|e| s3_error("list", &key, e))?;
                if listed.objects.is_empty() && listed.common_prefixes.is_empty() {
                    Err(FsError::Io(format!("s3 stat {key}: not found")))
                } else {
                    Ok(())
                }
            }
            Err(e) => Err(s3_error("head", &key, e)),
        }
    }

    async fn create(&mut self, parent: &String, name: &str, bytes: u64) -> Result<()> {
        let key = under(parent, name);
        self.requests += 1;
        self.store
            .put(&Path::from(key.as_str()), vec![b'x'; bytes as usize].into())
            .await
            .map_err(|e| s3_error("put", &key, e))?;
        Ok(())
    }

    async fn read(&mut self, parent: &String, name: &str, bytes: u64) -> Result<()> {
        let key = Path::from(under(parent, name));
        self.requests += 1;
        let meta = self
            .store
            .head(&key)
            .await
            .map_err(|e| s3_error("head", key.as_ref(), e))?;
        let len = bytes.min(meta.size);
        self.requests += 1;
        let got = if len > 0 {
            self.store.get_range(&key, 0..len).await.map(drop)
        } else {
            match self.store.get(&key).await {
                Ok(r) => r.bytes().await.map(drop),
                Err(e) => Err(e),
            }
        };
        got.map_err(|e| s3_error("get", key.as_ref(), e))
    }

    /// HEAD, then GET of the whole object (S3A's open reads on the first read; NNBench's
    /// open of an empty file is the two requests).
    async fn open(&mut self, parent: &String, name: &str) -> Result<()> {
        self.read(parent, name, 0).await
    }

    /// `rename(2)` as S3A does it for a file: COPY, then DELETE of the source.
    async fn rename(&mut self, parent: &String, from: &str, to: &str) -> Result<()> {
        let (src, dst) = (
            Path::from(under(parent, from)),
            Path::from(under(parent, to)),
        );
        self.requests += 1;
        self.store
            .copy(&src, &dst)
            .await
            .map_err(|e| s3_error("copy", src.as_ref(), e))?;
        self.delete(&src).await
    }

    async fn unlink(&mut self, parent: &String, name: &str) -> Result<()> {
        self.delete(&Path::from(under(parent, name))).await
    }

    /// Every key below `parent/name/`, one DELETE each (no bulk delete: S3A deletes in
    /// pages of up to 1,000, versitygw's POSIX backend one by one either way).
    async fn remove_tree(&mut self, parent: &String, name: &str) -> Result<()> {
        self.requests += delete_below(&self.store, &under(parent, name)).await?;
        Ok(())
    }

    /// HEAD of a key that is never there: one request, answered 404.
    async fn null_round_trip(&mut self, dir: &String) -> Result<&'static str> {
        let key = under(dir, ".metabench-absent");
        self.requests += 1;
        match self.store.head(&Path::from(key.as_str())).await {
            Err(object_store::Error::NotFound { .. }) => Ok("HEAD (absent key)"),
            Ok(_) => Err(FsError::Io(format!("s3 {key}: exists"))),
            Err(e) => Err(s3_error("head", &key, e)),
        }
    }

    fn requests(&self) -> u64 {
        self.requests
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_a_bucket_a_prefix_and_an_endpoint() {
        let u = S3Url::parse("s3://b/p/q/?endpoint=http://127.0.0.1:9000/&region=r1").unwrap();
        assert_eq!(u.bucket, "b");
        assert_eq!(u.prefix, "p/q");
        assert_eq!(u.endpoint.as_deref(), Some("http://127.0.0.1:9000"));
        assert_eq!(u.region.as_deref(), Some("r1"));
        let u = S3Url::parse("s3://b").unwrap();
        assert_eq!((u.prefix.as_str(), u.endpoint, u.region), ("", None, None));
    }

    #[test]
    fn bad_urls_say_why_on_one_line_and_never_echo_a_secret() {
        for (url, why) in [
            ("hdfs://b/x", "scheme"),
            ("s3:///x", "no bucket"),
            ("s3://b/x?endpoint=ftp://h", "http:// or https://"),
            ("s3://b/x?foo=1", "unknown option 'foo'"),
            ("s3://ak:secret@b/x", "credentials do not go in the URL"),
            ("s3://ak:secret@b:x/y", "bad S3 URL"),
        ] {
            let e = S3Url::parse(url).unwrap_err().to_string();
            assert!(e.contains(why), "{url}: {e}");
            assert!(!e.contains("secret"), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn a_directory_marker_keeps_its_slash() {
        assert_eq!(S3Fs::marker("a/b").as_ref(), "a/b/");
    }
}

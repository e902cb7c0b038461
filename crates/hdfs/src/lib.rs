//! HDFS beside JuiceFS: `hdfs://host:port/path` as a path-level target.
//!
//! The calls go through [`hdfs_native`], HDFS's own client protocol (NameNode RPC and
//! DataNode data transfer) written in Rust: no JVM in metabench. [`HdfsFs`] implements the
//! tree driver's [`FsOps`], so mdtest's phases and NNBench's operations run on HDFS through
//! the same code as through a JuiceFS mount or JuiceFS sessions.
//!
//! Safety as for the engines: [`HdfsTarget::open`] works only in a directory of its own,
//! `PATH/metabench-<run>`, below the URL's path, and [`HdfsTarget::cleanup`] removes it. A
//! URL path that already holds anything is refused unless the caller says it may be used
//! (`existing`): metabench never writes beside someone else's files unasked, and never
//! removes anything it did not create.

use async_trait::async_trait;
use bytes::Bytes;
use hdfs_native::{Client, ClientBuilder, HdfsError, WriteOptions};
use metabench_pathfs::{FsError, FsOps, Result};

/// A parsed `hdfs://host[:port]/path` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HdfsUrl {
    /// `hdfs://host:port`: the NameNode (or a name service that the Hadoop configuration in
    /// `HADOOP_CONF_DIR` resolves).
    pub namenode: String,
    /// The absolute path below which metabench works (never `/`).
    pub path: String,
}

/// NameNode RPC port when the URL names none (`dfs.namenode.rpc-address`'s default).
pub const DEFAULT_PORT: u16 = 8020;

impl HdfsUrl {
    /// Parses `hdfs://host[:port]/path`: one line naming what is wrong otherwise.
    pub fn parse(text: &str) -> Result<Self> {
        let bad = |why: &str| FsError::Command(format!("bad HDFS URL '{text}': {why}"));
        let url = url::Url::parse(text).map_err(|e| bad(&e.to_string()))?;
        if url.scheme() != "hdfs" {
            return Err(bad("the scheme must be hdfs://"));
        }
        let host = url
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| bad("no host"))?;
        if url.query().is_some() || url.fragment().is_some() {
            return Err(bad("HDFS URLs take no options"));
        }
        let path = url.path().trim_end_matches('/');
        if path.is_empty() {
            return Err(bad(
                "name a directory to work under (e.g. hdfs://host:8020/tmp/metabench), not /",
            ));
        }
        Ok(Self {
            namenode: format!("hdfs://{host}:{}", url.port().unwrap_or(DEFAULT_PORT)),
            path: path.to_owned(),
        })
    }
}

/// A one-line error from an HDFS call on `path`.
fn hdfs_error(what: &str, path: &str, e: HdfsError) -> FsError {
    let reason = match e {
        HdfsError::IOError(io) => format!("cannot reach the NameNode ({io})"),
        HdfsError::RPCError(class, msg) | HdfsError::FatalRPCError(class, msg) => {
            let class = class.rsplit('.').next().unwrap_or(&class).to_owned();
            let msg = msg.lines().next().unwrap_or("").to_owned();
            format!("{class}: {msg}")
        }
        other => other.to_string().lines().next().unwrap_or("").to_owned(),
    };
    FsError::Io(format!("hdfs {what} {path}: {reason}"))
}

/// A client of one NameNode, built the way metabench needs it: a refused connection is
/// reported at once rather than after minutes of the client's own retries.
fn client(namenode: &str) -> Result<Client> {
    ClientBuilder::new()
        .with_url(namenode)
        .with_config([
            ("dfs.client.failover.max.attempts", "0"),
            ("dfs.client.socket-timeout", "10000"),
        ])
        .build()
        .map_err(|e| hdfs_error("connect", namenode, e))
}

/// HDFS at a URL, with a directory of metabench's own below the URL's path.
pub struct HdfsTarget {
    url: HdfsUrl,
    client: Client,
    /// `PATH/metabench-<run>`: the only place metabench writes.
    root: String,
    /// Whether metabench made the URL's path itself (then cleanup removes it too).
    made_path: bool,
}

impl HdfsTarget {
    /// Connects, checks the URL's path and makes the run's own directory in it.
    ///
    /// The path may be absent (it is made, and removed by [`HdfsTarget::cleanup`]) or an
    /// empty directory. One that holds anything is refused unless `existing`; a file is
    /// always refused. Nothing is written before these checks pass.
    pub async fn open(url: &HdfsUrl, run_id: &str, existing: bool) -> Result<Self> {
        let client = client(&url.namenode)?;
        let made_path = match client.get_file_info(&url.path).await {
            Ok(status) if !status.isdir => {
                return Err(FsError::Command(format!(
                    "hdfs {}: is a file, not a directory to work under",
                    url.path
                )))
            }
            Ok(_) => {
                let held = client
                    .list_status(&url.path, false)
                    .await
                    .map_err(|e| hdfs_error("list", &url.path, e))?;
                if !held.is_empty() && !existing {
                    return Err(FsError::Command(format!(
                        "hdfs {} holds {} entries that metabench did not write: name an empty \
                         or absent directory, or pass --existing to work in a directory of \
                         metabench's own below it",
                        url.path,
                        held.len()
                    )));
                }
                false
            }
            Err(HdfsError::FileNotFound(_)) => {
                client
                    .mkdirs(&url.path, 0o755, true)
                    .await
                    .map_err(|e| hdfs_error("mkdir", &url.path, e))?;
                true
            }
            Err(e) => return Err(hdfs_error("stat", &url.path, e)),
        };
        let root = format!("{}/metabench-{run_id}", url.path);
        let target = Self {
            url: url.clone(),
            client,
            root,
            made_path,
        };
        if let Err(e) = target.client.mkdirs(&target.root, 0o755, false).await {
            let _ = target.cleanup().await;
            return Err(hdfs_error("mkdir", &target.root, e));
        }
        Ok(target)
    }

    /// The run's own directory: every path metabench touches is below it.
    pub fn root(&self) -> &str {
        &self.root
    }

    /// Removes the run's directory, and the URL's path when metabench made it.
    pub async fn cleanup(&self) -> Result<()> {
        let gone = if self.made_path {
            &self.url.path
        } else {
            &self.root
        };
        match self.client.delete(gone, true).await {
            Ok(_) | Err(HdfsError::FileNotFound(_)) => Ok(()),
            Err(e) => Err(hdfs_error("remove", gone, e)),
        }
    }
}

impl metabench_pathfs::PathSystem for HdfsTarget {
    type Fs = HdfsFs;

    fn name(&self) -> &'static str {
        "hdfs"
    }

    /// A `Client` of its own, whose NameNode connection and DataNode streams run on
    /// the calling thread's runtime.
    fn fs(&self) -> Result<HdfsFs> {
        Ok(HdfsFs {
            client: client(&self.url.namenode)?,
            requests: 0,
        })
    }

    fn root(&self) -> String {
        self.root.clone()
    }

    fn url(&self) -> String {
        format!("{}{}", self.url.namenode, self.url.path)
    }

    fn client(&self) -> &'static str {
        "hdfs-native 0.14 (HDFS's own RPC in Rust, as DFSClient makes the calls; a client per task, as NNBench's tasks each had one)"
    }

    fn fidelity_notes(&self) -> Vec<String> {
        vec![
            "HDFS calls: create_write = create, one 1 KiB block written through a DataNode, complete; open = getFileInfo + getBlockLocations; rename = rename; unlink = delete. Round trips are NameNode RPCs, each counted once where the call makes it (create_write: create, addBlock, complete = 3); a complete asked again while the block report is pending, a client's one getServerDefaults before its first create, its background renewLease, and DataNode traffic happen inside hdfs-native and are not counted.".to_owned(),
            "NNBench's tasks were JVMs with a DFSClient each; here each task has an hdfs-native client of its own, whose NameNode connection is served by a task on the same thread (hdfs-native multiplexes calls through it, as DFSClient through its connection thread).".to_owned(),
            "create_write's close asks the NameNode to complete the file; one that has not yet processed the DataNode's report of the block answers false, and the client waits (hdfs-native 500 ms, DFSClient 400 ms) before asking again. When the report loses that race, create_write measures about half a second: the client's wait, not the NameNode's work (on the loopback test cluster it lost on nearly every call).".to_owned(),
        ]
    }

    async fn cleanup(&self) -> Result<()> {
        HdfsTarget::cleanup(self).await
    }
}

/// One task's HDFS calls, for the tree driver: directories are absolute paths.
pub struct HdfsFs {
    client: Client,
    /// NameNode RPCs sent, each counted once where the call names it (a `complete`
    /// asked again while the block report is pending, `getServerDefaults`, `renewLease`
    /// and DataNode traffic are made inside hdfs-native, unseen).
    requests: u64,
}

fn join(parent: &str, name: &str) -> String {
    format!("{parent}/{name}")
}

impl HdfsFs {
    /// `delete(path, false)` of `name` in `parent` for `what` (`rmdir` or `unlink`): one
    /// request, an error when there was no such `kind` (HDFS answers `false`).
    async fn delete_one(&mut self, what: &str, parent: &str, name: &str, kind: &str) -> Result<()> {
        self.requests += 1;
        let path = join(parent, name);
        match self.client.delete(&path, false).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(FsError::Io(format!("hdfs {what} {path}: no such {kind}"))),
            Err(e) => Err(hdfs_error(what, &path, e)),
        }
    }
}

#[async_trait]
impl FsOps for HdfsFs {
    type Dir = String;

    /// `mkdirs` of one new directory (`FileSystem.mkdirs`, mode 0755).
    async fn mkdir(&mut self, parent: &String, name: &str) -> Result<String> {
        self.requests += 1;
        let path = join(parent, name);
        self.client
            .mkdirs(&path, 0o755, false)
            .await
            .map_err(|e| hdfs_error("mkdir", &path, e))?;
        Ok(path)
    }

    /// `delete(path, false)`: HDFS has no rmdir of its own.
    async fn rmdir(&mut self, parent: &String, name: &str) -> Result<()> {
        self.delete_one("rmdir", parent, name, "directory").await
    }

    /// `getFileInfo`.
    async fn stat(&mut self, parent: &String, name: &str) -> Result<()> {
        self.requests += 1;
        let path = join(parent, name);
        self.client
            .get_file_info(&path)
            .await
            .map_err(|e| hdfs_error("stat", &path, e))?;
        Ok(())
    }

    /// `create` (no overwrite), the bytes written to a DataNode (after `addBlock`),
    /// `complete` on close.
    async fn create(&mut self, parent: &String, name: &str, bytes: u64) -> Result<()> {
        self.requests += 1;
        let path = join(parent, name);
        let options = WriteOptions::default().create_parent(false);
        let mut writer = self
            .client
            .create(&path, &options)
            .await
            .map_err(|e| hdfs_error("create", &path, e))?;
        if bytes > 0 {
            self.requests += 1;
            writer
                .write_bytes(Bytes::from(vec![b'x'; bytes as usize]))
                .await
                .map_err(|e| hdfs_error("write", &path, e))?;
        }
        self.requests += 1;
        writer
            .close()
            .await
            .map_err(|e| hdfs_error("close", &path, e))
    }

    /// `open` (`getBlockLocations`), then the first `bytes` read from a DataNode.
    async fn read(&mut self, parent: &String, name: &str, bytes: u64) -> Result<()> {
        self.requests += 1;
        let path = join(parent, name);
        let reader = self
            .client
            .read(&path)
            .await
            .map_err(|e| hdfs_error("open", &path, e))?;
        let len = (bytes as usize).min(reader.file_length());
        if len > 0 {
            reader
                .read_range(0, len)
                .await
                .map_err(|e| hdfs_error("read", &path, e))?;
        }
        Ok(())
    }

    /// `getFileInfo`, then `open` (`getBlockLocations`), reading nothing.
    async fn open(&mut self, parent: &String, name: &str) -> Result<()> {
        self.stat(parent, name).await?;
        let path = join(parent, name);
        self.requests += 1;
        self.client
            .read(&path)
            .await
            .map_err(|e| hdfs_error("open", &path, e))?;
        Ok(())
    }

    /// `rename(src, dst)`, not overwriting.
    async fn rename(&mut self, parent: &String, from: &str, to: &str) -> Result<()> {
        self.requests += 1;
        let (src, dst) = (join(parent, from), join(parent, to));
        self.client
            .rename(&src, &dst, false)
            .await
            .map_err(|e| hdfs_error("rename", &src, e))
    }

    /// `delete(path, false)`.
    async fn unlink(&mut self, parent: &String, name: &str) -> Result<()> {
        self.delete_one("unlink", parent, name, "file").await
    }

    /// `delete(path, true)`.
    async fn remove_tree(&mut self, parent: &String, name: &str) -> Result<()> {
        self.requests += 1;
        let path = join(parent, name);
        match self.client.delete(&path, true).await {
            Ok(_) | Err(HdfsError::FileNotFound(_)) => Ok(()),
            Err(e) => Err(hdfs_error("remove", &path, e)),
        }
    }

    /// `getFileInfo` of a path that is never there: one NameNode RPC, answered
    /// `FileNotFound` from its namespace in memory.
    async fn null_round_trip(&mut self, dir: &String) -> Result<&'static str> {
        self.requests += 1;
        let path = join(dir, ".metabench-absent");
        match self.client.get_file_info(&path).await {
            Err(HdfsError::FileNotFound(_)) => Ok("getFileInfo (absent)"),
            Ok(_) => Err(FsError::Io(format!("hdfs {path}: exists"))),
            Err(e) => Err(hdfs_error("stat", &path, e)),
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
    fn urls_name_a_namenode_and_a_directory() {
        let u = HdfsUrl::parse("hdfs://127.0.0.1:9000/tmp/mb/").unwrap();
        assert_eq!(u.namenode, "hdfs://127.0.0.1:9000");
        assert_eq!(u.path, "/tmp/mb");
        let u = HdfsUrl::parse("hdfs://nn/x").unwrap();
        assert_eq!(u.namenode, format!("hdfs://nn:{DEFAULT_PORT}"));
    }

    #[test]
    fn bad_urls_say_why_on_one_line() {
        for (url, why) in [
            ("hdfs://127.0.0.1:9000", "not /"),
            ("hdfs://127.0.0.1:9000/", "not /"),
            ("s3://bucket/x", "scheme"),
            ("hdfs:///x", "no host"),
            ("hdfs://nn/x?a=b", "no options"),
            ("not a url", "bad HDFS URL"),
        ] {
            let e = HdfsUrl::parse(url).unwrap_err().to_string();
            assert!(e.contains(why), "{url}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }
}

//! Flattening a `juicefs dump` into `path -> node`, for comparing two volumes.

use serde_json::Value;
use std::collections::BTreeMap;

/// One slice of a chunk, as dumped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpSlice {
    /// Slice id (`id`, or the old `chunkid`); 0 for a hole.
    pub id: u64,
    /// Offset of the slice within the chunk.
    pub pos: u32,
    /// Size of the slice object.
    pub size: u32,
    /// Offset of the used part within the slice.
    pub off: u32,
    /// Length of the used part.
    pub len: u32,
}

/// One chunk of a file, as dumped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpChunk {
    /// Chunk index (file offset / 64 MiB).
    pub index: u32,
    /// Its slices, oldest first.
    pub slices: Vec<DumpSlice>,
}

/// One entry of a dumped tree, without times: what two volumes holding the same tree
/// must agree on (use [`DumpNode::without_ids`] when they were written independently).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpNode {
    /// Inode number.
    pub inode: u64,
    /// `"regular"`, `"directory"`, `"symlink"`, `"fifo"`, `"blockdev"`, `"chardev"` or
    /// `"socket"`.
    pub typ: String,
    /// Permission bits (with setuid/setgid/sticky), without the type bits.
    pub mode: u16,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Link count.
    pub nlink: u32,
    /// Length (4096 for directories; the target length for symlinks).
    pub length: u64,
    /// Device number for device nodes.
    pub rdev: u32,
    /// Symlink target (unescaped; non-UTF-8 bytes become U+FFFD).
    pub symlink: Option<String>,
    /// Extended attributes: name -> value (unescaped).
    pub xattrs: BTreeMap<String, Vec<u8>>,
    /// File chunks.
    pub chunks: Vec<DumpChunk>,
}

impl DumpNode {
    /// A copy with the inode and slice ids set to 0, for comparing trees that were written
    /// by different clients (which allocate ids differently).
    pub fn without_ids(&self) -> DumpNode {
        let mut n = self.clone();
        n.inode = 0;
        for c in &mut n.chunks {
            for s in &mut c.slices {
                s.id = 0;
            }
        }
        n
    }
}

/// The volume tree of a dump (`FSTree`) as `path -> node`, the root as `"/"`, children as
/// `"/a"`, `"/a/b"` (names unescaped; non-UTF-8 bytes become U+FFFD). Hard links appear at
/// every path, with the same inode.
pub fn dump_tree(dump: &Value) -> BTreeMap<String, DumpNode> {
    dump_tree_at(&dump["FSTree"], "/")
}

/// Flattens one dumped entry and its descendants, `entry` being at `path`; e.g.
/// `dump_tree_at(&dump["Trash"], "/.trash")` for the trash.
pub fn dump_tree_at(entry: &Value, path: &str) -> BTreeMap<String, DumpNode> {
    let mut out = BTreeMap::new();
    walk(entry, path, &mut out);
    out
}

fn walk(entry: &Value, path: &str, out: &mut BTreeMap<String, DumpNode>) {
    if entry.is_null() {
        return;
    }
    out.insert(path.to_owned(), node(entry));
    if let Some(entries) = entry.get("entries").and_then(Value::as_object) {
        for (name, child) in entries {
            let name = String::from_utf8_lossy(&unescape(name)).into_owned();
            let child_path = if path.ends_with('/') {
                format!("{path}{name}")
            } else {
                format!("{path}/{name}")
            };
            walk(child, &child_path, out);
        }
    }
}

fn num(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

fn node(entry: &Value) -> DumpNode {
    let attr = &entry["attr"];
    let xattrs = entry
        .get("xattrs")
        .and_then(Value::as_array)
        .map(|xs| {
            xs.iter()
                .map(|x| {
                    (
                        x["name"].as_str().unwrap_or_default().to_owned(),
                        unescape(x["value"].as_str().unwrap_or_default()),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let chunks = entry
        .get("chunks")
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .map(|c| DumpChunk {
                    index: num(c, "index") as u32,
                    slices: c
                        .get("slices")
                        .and_then(Value::as_array)
                        .map(|ss| {
                            ss.iter()
                                .map(|s| DumpSlice {
                                    id: s
                                        .get("id")
                                        .and_then(Value::as_u64)
                                        .filter(|&id| id != 0)
                                        .unwrap_or_else(|| num(s, "chunkid")),
                                    pos: num(s, "pos") as u32,
                                    size: num(s, "size") as u32,
                                    off: num(s, "off") as u32,
                                    len: num(s, "len") as u32,
                                })
                                .collect()
                        })
                        .unwrap_or_default(),
                })
                .collect()
        })
        .unwrap_or_default();
    DumpNode {
        inode: num(attr, "inode"),
        typ: attr["type"].as_str().unwrap_or_default().to_owned(),
        mode: num(attr, "mode") as u16,
        uid: num(attr, "uid") as u32,
        gid: num(attr, "gid") as u32,
        nlink: num(attr, "nlink") as u32,
        length: num(attr, "length"),
        rdev: num(attr, "rdev") as u32,
        symlink: entry
            .get("symlink")
            .and_then(Value::as_str)
            .map(|s| String::from_utf8_lossy(&unescape(s)).into_owned()),
        xattrs,
        chunks,
    }
}

/// Undoes the `%XX` escaping JuiceFS's dump applies to names, symlink targets and xattr
/// values (bytes ≤ 0x20, `%`, `"`, `\` and invalid UTF-8; upper-case hex).
pub fn unescape(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let hex = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    };
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push(h * 16 + l);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unescaping_matches_juicefs() {
        assert_eq!(unescape("a%20b%25c"), b"a b%c");
        assert_eq!(unescape("%FF%0A"), vec![0xff, b'\n']);
        assert_eq!(unescape("50%"), b"50%");
        assert_eq!(unescape("%zz"), b"%zz");
        // JuiceFS only decodes upper-case hex.
        assert_eq!(unescape("%0a"), b"%0a");
    }

    #[test]
    fn walks_a_dump() {
        let dump: Value = serde_json::from_str(
            r#"{"FSTree": {
                "attr": {"inode":1,"type":"directory","mode":511,"uid":0,"gid":0,"nlink":3,"length":4096},
                "xattrs": [{"name":"user.k","value":"v%0A"}],
                "entries": {
                  "d%20x": {"attr": {"inode":2,"type":"directory","mode":493,"nlink":2,"length":4096},
                            "entries": {
                              "f": {"attr": {"inode":3,"type":"regular","mode":420,"nlink":2,"length":5},
                                    "chunks": [{"index":0,"slices":[{"id":7,"size":5,"len":5}]}]}
                            }},
                  "h": {"attr": {"inode":3,"type":"regular","mode":420,"nlink":2,"length":5}},
                  "l": {"attr": {"inode":4,"type":"symlink","mode":511,"nlink":1,"length":3},
                        "symlink": "a%25b"}
                }}}"#,
        )
        .unwrap();
        let t = dump_tree(&dump);
        assert_eq!(
            t.keys().collect::<Vec<_>>(),
            ["/", "/d x", "/d x/f", "/h", "/l"]
        );
        assert_eq!(t["/"].nlink, 3);
        assert_eq!(t["/"].xattrs["user.k"], b"v\n");
        assert_eq!(t["/d x/f"].inode, t["/h"].inode);
        assert_eq!(
            t["/d x/f"].chunks,
            vec![DumpChunk {
                index: 0,
                slices: vec![DumpSlice {
                    id: 7,
                    pos: 0,
                    size: 5,
                    off: 0,
                    len: 5
                }]
            }]
        );
        assert_eq!(t["/d x/f"].without_ids().chunks[0].slices[0].id, 0);
        assert_eq!(t["/l"].symlink.as_deref(), Some("a%b"));
        assert_eq!(t["/l"].typ, "symlink");
    }
}

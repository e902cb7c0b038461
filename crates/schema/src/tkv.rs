//! The TKV key encoding (`kvMeta.fmtKey`, `tkv_prefix.go`).
//!
//! Inodes are 8 bytes little-endian; other integers big-endian; letters are one ASCII byte;
//! there are no separators. Every key of a volume starts with the driver's prefix
//! (etcd: the URL path with its leading `/`, then `0xFD`; TiKV: the name, then `0xFD`).

use crate::Ino;

/// Builds the keys of one volume in a transactional KV store.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TkvKeys {
    prefix: Vec<u8>,
}

impl TkvKeys {
    /// Keys under a raw prefix (empty for badger/memkv).
    pub fn new(prefix: impl Into<Vec<u8>>) -> Self {
        Self {
            prefix: prefix.into(),
        }
    }

    /// The prefix a driver uses for a volume name: `name` followed by `0xFD`, or nothing
    /// when the name is empty.
    pub fn for_volume(name: &[u8]) -> Self {
        if name.is_empty() {
            return Self::default();
        }
        let mut p = name.to_vec();
        p.push(0xFD);
        Self { prefix: p }
    }

    /// The prefix in use.
    pub fn prefix(&self) -> &[u8] {
        &self.prefix
    }

    fn key(&self, parts: &[&[u8]]) -> Vec<u8> {
        let len = self.prefix.len() + parts.iter().map(|p| p.len()).sum::<usize>();
        let mut k = Vec::with_capacity(len);
        k.extend_from_slice(&self.prefix);
        for p in parts {
            k.extend_from_slice(p);
        }
        k
    }

    /// `setting`.
    pub fn setting(&self) -> Vec<u8> {
        self.key(&[b"setting"])
    }

    /// `C<name>`: a counter (value int64 LE).
    pub fn counter(&self, name: &str) -> Vec<u8> {
        self.key(&[b"C", name.as_bytes()])
    }

    /// `A<ino>I`: the attribute.
    pub fn inode(&self, ino: Ino) -> Vec<u8> {
        self.key(&[b"A", &ino.to_le_bytes(), b"I"])
    }

    /// `A<ino>D<name>`: one directory entry.
    pub fn entry(&self, parent: Ino, name: &[u8]) -> Vec<u8> {
        self.key(&[b"A", &parent.to_le_bytes(), b"D", name])
    }

    /// `A<ino>D`: the prefix of all entries of a directory.
    pub fn entry_prefix(&self, parent: Ino) -> Vec<u8> {
        self.entry(parent, b"")
    }

    /// `A<ino>P<parent>`: a hard-link parent counter.
    pub fn parent(&self, ino: Ino, parent: Ino) -> Vec<u8> {
        self.key(&[b"A", &ino.to_le_bytes(), b"P", &parent.to_le_bytes()])
    }

    /// `A<ino>P`: the prefix of all hard-link parent counters of an inode.
    pub fn parent_prefix(&self, ino: Ino) -> Vec<u8> {
        self.key(&[b"A", &ino.to_le_bytes(), b"P"])
    }

    /// `A<ino>C`: the prefix of all chunks of an inode.
    pub fn chunk_prefix(&self, ino: Ino) -> Vec<u8> {
        self.key(&[b"A", &ino.to_le_bytes(), b"C"])
    }

    /// `A<ino>C<indx BE>`: the slices of one chunk.
    pub fn chunk(&self, ino: Ino, indx: u32) -> Vec<u8> {
        self.key(&[b"A", &ino.to_le_bytes(), b"C", &indx.to_be_bytes()])
    }

    /// `A<ino>S`: a symlink target.
    pub fn symlink(&self, ino: Ino) -> Vec<u8> {
        self.key(&[b"A", &ino.to_le_bytes(), b"S"])
    }

    /// `A<ino>X<name>`: one xattr.
    pub fn xattr(&self, ino: Ino, name: &[u8]) -> Vec<u8> {
        self.key(&[b"A", &ino.to_le_bytes(), b"X", name])
    }

    /// `D<ino><length BE>`: a deleted-file marker.
    pub fn delfile(&self, ino: Ino, length: u64) -> Vec<u8> {
        self.key(&[b"D", &ino.to_le_bytes(), &length.to_be_bytes()])
    }

    /// `K<id BE><size BE>`: a slice reference count.
    pub fn slice_ref(&self, id: u64, size: u32) -> Vec<u8> {
        self.key(&[b"K", &id.to_be_bytes(), &size.to_be_bytes()])
    }

    /// `U<ino>`: a directory's usage.
    pub fn dir_stat(&self, ino: Ino) -> Vec<u8> {
        self.key(&[b"U", &ino.to_le_bytes()])
    }

    /// `QD<ino>`: a directory quota.
    pub fn dir_quota(&self, ino: Ino) -> Vec<u8> {
        self.key(&[b"QD", &ino.to_le_bytes()])
    }

    /// `SE<sid BE>`: a session's expiry (`packInt64`: int64 BE).
    pub fn session(&self, sid: u64) -> Vec<u8> {
        self.key(&[b"SE", &sid.to_be_bytes()])
    }

    /// `SI<sid BE>`: a session's info (`SessionInfo` JSON).
    pub fn session_info(&self, sid: u64) -> Vec<u8> {
        self.key(&[b"SI", &sid.to_be_bytes()])
    }

    /// `SH<sid BE>`: a session's legacy heartbeat key.
    pub fn legacy_session(&self, sid: u64) -> Vec<u8> {
        self.key(&[b"SH", &sid.to_be_bytes()])
    }

    /// `SS<sid BE>`: the prefix of a session's sustained inodes.
    pub fn sustained_prefix(&self, sid: u64) -> Vec<u8> {
        self.key(&[b"SS", &sid.to_be_bytes()])
    }

    /// `F` and `P`: the prefixes of the BSD (`flock`) and POSIX (`plock`) lock records.
    pub fn lock_prefixes(&self) -> [Vec<u8>; 2] {
        [self.key(&[b"F"]), self.key(&[b"P"])]
    }

    /// The exclusive end of a prefix scan: the prefix with its last byte incremented
    /// (`A<ino>D` ends at `A<ino>E`).
    pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
        let mut end = prefix.to_vec();
        while let Some(last) = end.pop() {
            if last < 0xFF {
                end.push(last + 1);
                return end;
            }
        }
        end
    }
}

/// Encodes a counter value (`packCounter`: int64 LE).
pub fn pack_counter(v: i64) -> [u8; 8] {
    v.to_le_bytes()
}

/// Decodes a counter value; an absent key is 0.
pub fn parse_counter(v: Option<&[u8]>) -> i64 {
    match v {
        Some(b) if b.len() == 8 => i64::from_le_bytes(b.try_into().expect("8 bytes")),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The root attribute key juicefs 1.4 wrote to etcd for `etcd://h:2379/jfs`
    /// (`pkg/meta/tkv.go` `inodeKey`, under the client's prefix).
    #[test]
    fn golden_etcd_root_key() {
        let k = TkvKeys::for_volume(b"/jfs");
        assert_eq!(
            k.inode(1),
            b"/jfs\xfdA\x01\x00\x00\x00\x00\x00\x00\x00I".to_vec()
        );
        let trash = TkvKeys::default().inode(crate::TRASH_INODE);
        assert_eq!(trash, b"A\x00\x00\x00\x10\xff\xff\xff\x7fI".to_vec());
    }

    #[test]
    fn layouts() {
        let k = TkvKeys::default();
        assert_eq!(k.entry(2, b"a"), b"A\x02\0\0\0\0\0\0\0Da".to_vec());
        assert_eq!(k.chunk(2, 1), b"A\x02\0\0\0\0\0\0\0C\0\0\0\x01".to_vec());
        assert_eq!(k.counter("nextInode"), b"CnextInode".to_vec());
        assert_eq!(
            TkvKeys::prefix_end(&k.entry_prefix(2)),
            b"A\x02\0\0\0\0\0\0\0E".to_vec()
        );
        assert_eq!(TkvKeys::prefix_end(b"a\xff"), b"b".to_vec());
        assert_eq!(parse_counter(Some(&pack_counter(-5))), -5);
        assert_eq!(parse_counter(None), 0);
    }
}

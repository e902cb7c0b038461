//! Directory entry values (`packEntry`): 9 bytes, the type then the inode, big-endian.

use crate::{DecodeError, FileType, Ino};

/// What a directory entry points to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dentry {
    /// Type of the child.
    pub typ: FileType,
    /// Inode of the child.
    pub inode: Ino,
}

impl Dentry {
    /// Encodes as Redis `d{parent}` field values and TKV `A<p>D<name>` values.
    pub fn encode(&self) -> [u8; 9] {
        let mut b = [0u8; 9];
        b[0] = self.typ.as_u8();
        b[1..].copy_from_slice(&self.inode.to_be_bytes());
        b
    }

    /// Decodes a 9-byte entry value.
    pub fn decode(buf: &[u8]) -> Result<Self, DecodeError> {
        DecodeError::check_len("dentry", buf, 9)?;
        Ok(Self {
            typ: FileType::from_u8(buf[0])?,
            inode: u64::from_be_bytes(buf[1..9].try_into().expect("9 bytes")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let d = Dentry {
            typ: FileType::Directory,
            inode: 0x0102030405060708,
        };
        assert_eq!(d.encode(), [2, 1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(Dentry::decode(&d.encode()).unwrap(), d);
        assert!(Dentry::decode(&[1, 2]).is_err());
        assert!(Dentry::decode(&[9, 0, 0, 0, 0, 0, 0, 0, 1]).is_err());
    }
}

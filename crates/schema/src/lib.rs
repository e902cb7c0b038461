//! The JuiceFS metadata data model, with no I/O.
//!
//! Everything here mirrors `pkg/meta` of JuiceFS byte for byte: the attribute record,
//! directory entries, slice records, dir stats, the Redis key names, the TKV key encoding,
//! the SQL tables per dialect and the volume setting record. The engines in
//! `metabench-engine` build on these and only move bytes.

pub mod attr;
pub mod dirstat;
pub mod entry;
pub mod format;
pub mod redis_keys;
pub mod slice;
pub mod sql;
pub mod tkv;

pub use attr::{align4k, Attr, FileType, Ino, Timestamp, ROOT_INODE, TRASH_INODE};
pub use dirstat::DirStat;
pub use entry::Dentry;
pub use format::Format;
pub use slice::Slice;

/// Size of one chunk: a file offset maps to chunk index `offset >> 26`.
pub const CHUNK_SIZE: u64 = 64 << 20;

/// Errors of decoding a stored record.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DecodeError {
    /// The record is shorter than its fixed part.
    #[error("{what} record too short: {len} bytes, need {need}")]
    TooShort {
        /// Which record.
        what: &'static str,
        /// Bytes present.
        len: usize,
        /// Bytes required.
        need: usize,
    },
    /// A field holds a value JuiceFS never writes.
    #[error("invalid {what}: {value}")]
    Invalid {
        /// Which field.
        what: &'static str,
        /// The offending value.
        value: u64,
    },
}

impl DecodeError {
    /// [`DecodeError::TooShort`] when `buf` holds fewer than `need` bytes of a `what`
    /// record.
    pub(crate) fn check_len(what: &'static str, buf: &[u8], need: usize) -> Result<(), Self> {
        if buf.len() < need {
            return Err(DecodeError::TooShort {
                what,
                len: buf.len(),
                need,
            });
        }
        Ok(())
    }
}

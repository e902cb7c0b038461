//! The JuiceFS metadata data model, with no I/O.
//!
//! Everything here mirrors `pkg/meta` of JuiceFS byte for byte: the attribute record,
//! directory entries, slice records, dir stats, the Redis key names, the TKV key encoding,
//! the SQL tables per dialect and the volume setting record. The engines in
//! `metabench-engine` build on these and only move bytes.

pub mod attr;
mod decode;
pub mod dirstat;
pub mod entry;
pub mod format;
pub mod redis_keys;
pub mod slice;
pub mod sql;
pub mod tkv;

pub use attr::{align4k, Attr, FileType, Ino, Timestamp, ROOT_INODE, TRASH_INODE};
pub use decode::DecodeError;
pub use dirstat::DirStat;
pub use entry::Dentry;
pub use format::Format;
pub use slice::{Slice, CHUNK_SIZE};

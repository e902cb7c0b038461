//! The client layer every engine family shares, written once as JuiceFS writes it in
//! `baseMeta` (`pkg/meta/base.go`, `quota.go`), over each family's storage steps
//! ([`Storage`], JuiceFS's `engine` interface).
//!
//! - [`storage`]: the storage steps a family implements ([`Storage`], [`ResizeSteps`],
//!   [`SessionSteps`]: the `do*` methods of JuiceFS's `engine` interface);
//! - [`base_meta`]: the logic over them, `baseMeta` ([`BaseMeta`]), and the one
//!   implementation of [`crate::Meta`] for every [`Storage`]: `Mkdir`, `Mknod`, `Create`,
//!   `Symlink` (`Mknod` → `doMknod`), `Link`, `Unlink`, `Rmdir`, `Rename`, `Lookup`,
//!   `GetAttr`, `Access`, `Readdir`, xattrs, `ReadLink`, `NewSlice`, `Write`, `Read`,
//!   `Truncate`, `Fallocate`, the background flush and the session's life;
//! - [`ClientState`] (`state`): what one JuiceFS client keeps between calls (`baseMeta`'s
//!   fields): id batches (`nextInode` with its background prefetch, `NewSlice`), the
//!   directory-parent cache (`dirParents`), the dir-stat and volume-counter buffers
//!   (`updateDirStat`, `updateParentStat`, `updateStats`), the deleted-file queue, the
//!   chunk and symlink caches (`--client-cache`), and the transaction locks (`txlocks`).
//!
//! The pure argument and permission checks are in [`crate::rules`].

pub mod base_meta;
mod client_cache;
mod dir_stats;
mod ids;
mod session;
mod state;
pub mod storage;
mod tx_locks;

pub use base_meta::BaseMeta;
pub use dir_stats::DirStatBuffer;
pub use ids::{
    inode_need_prefetch, IdRange, InodeIds, SliceIds, INODE_BATCH, SLICE_BATCH, SLICE_RUN,
};
pub use session::{session_expire, session_info, SessionRegistry, HEARTBEAT};
pub use state::{ClientState, TakenStats};
pub use storage::{Background, ResizeSteps, SessionSteps, Storage};
pub use tx_locks::{TxGuard, TxLock, TX_LOCKS};

//! A session's chunk and symlink caches (`--client-cache`), the same for every engine.

use foldhash::fast::RandomState;
use metabench_schema::{Ino, Slice};
use std::collections::HashMap;
use std::sync::Arc;

/// Entries a cache holds before it is emptied and starts again.
const CACHE_LIMIT: usize = 100_000;

/// The chunk and symlink caches a JuiceFS client keeps between calls. Off unless the
/// session asked for them: then every lookup misses and nothing is kept.
#[derive(Debug, Default)]
pub(crate) struct ClientCache {
    enabled: bool,
    chunks: HashMap<(Ino, u32), Arc<[Slice]>, RandomState>,
    symlinks: HashMap<Ino, Vec<u8>, RandomState>,
}

impl ClientCache {
    /// Caches that answer only when `enabled`.
    pub(crate) fn new(enabled: bool) -> Self {
        Self {
            enabled,
            ..Self::default()
        }
    }

    /// The slices of chunk `indx` of `ino`, if cached: shared, not copied, as Go hands
    /// out its cached slice.
    pub(crate) fn chunk(&self, ino: Ino, indx: u32) -> Option<Arc<[Slice]>> {
        self.chunks.get(&(ino, indx)).cloned()
    }

    /// Keeps the slices just read for chunk `indx` of `ino`.
    pub(crate) fn keep_chunk(&mut self, ino: Ino, indx: u32, slices: &[Slice]) {
        if self.enabled {
            if self.chunks.len() >= CACHE_LIMIT {
                self.chunks.clear();
            }
            self.chunks.insert((ino, indx), Arc::from(slices));
        }
    }

    /// Drops chunk `indx` of `ino` (it was written).
    pub(crate) fn forget_chunk(&mut self, ino: Ino, indx: u32) {
        self.chunks.remove(&(ino, indx));
    }

    /// Drops every chunk of `ino` (its data was removed).
    pub(crate) fn forget_file(&mut self, ino: Ino) {
        if !self.chunks.is_empty() {
            self.chunks.retain(|(i, _), _| *i != ino);
        }
    }

    /// The target of symlink `ino`, if cached.
    pub(crate) fn symlink(&self, ino: Ino) -> Option<Vec<u8>> {
        self.symlinks.get(&ino).cloned()
    }

    /// Keeps the target just read for symlink `ino`.
    pub(crate) fn keep_symlink(&mut self, ino: Ino, target: &[u8]) {
        if self.enabled {
            if self.symlinks.len() >= CACHE_LIMIT {
                self.symlinks.clear();
            }
            self.symlinks.insert(ino, target.to_vec());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_disabled_cache_keeps_nothing() {
        let mut c = ClientCache::new(false);
        c.keep_chunk(2, 0, &[]);
        c.keep_symlink(3, b"t");
        assert_eq!(c.chunk(2, 0), None);
        assert_eq!(c.symlink(3), None);
    }

    #[test]
    fn an_enabled_cache_answers_until_told_to_forget() {
        let mut c = ClientCache::new(true);
        c.keep_chunk(2, 0, &[]);
        c.keep_chunk(2, 1, &[]);
        c.keep_chunk(5, 0, &[]);
        c.keep_symlink(3, b"t");
        assert_eq!(c.chunk(2, 1).as_deref(), Some(&[][..]));
        assert_eq!(c.symlink(3).as_deref(), Some(&b"t"[..]));
        c.forget_chunk(2, 1);
        assert_eq!(c.chunk(2, 1), None);
        c.forget_file(2);
        assert_eq!(c.chunk(2, 0), None);
        assert_eq!(c.chunk(5, 0).as_deref(), Some(&[][..]));
    }
}

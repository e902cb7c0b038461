//! The stop a user asks for (Ctrl-C): every runner holds the flag and stops at its next
//! call boundary.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Set when the user asked to stop (Ctrl-C); runners stop at the next call boundary.
#[derive(Debug, Clone, Default)]
pub struct StopFlag(Arc<AtomicBool>);

impl StopFlag {
    /// Asks every runner holding this flag to stop.
    pub fn stop(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether a stop was asked.
    pub fn is_stopped(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

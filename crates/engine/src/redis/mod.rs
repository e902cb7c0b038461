//! Redis: WATCH / MULTI / EXEC transactions as `pkg/meta/redis.go` sends them.

use crate::{Engine, MetaError, MetaUrl, Result};
use std::sync::Arc;

/// Connects to the Redis engine a URL names and checks it answers.
pub async fn open(url: &MetaUrl) -> Result<Arc<dyn Engine>> {
    let _ = url;
    Err(MetaError::NotSupported)
}

//! SQL engines (MySQL/MariaDB, PostgreSQL, SQLite) as `pkg/meta/sql.go` uses them.

use crate::{Engine, MetaError, MetaUrl, Result};
use std::sync::Arc;

/// Connects to the SQL engine a URL names and checks it answers.
pub async fn open(url: &MetaUrl) -> Result<Arc<dyn Engine>> {
    let _ = url;
    Err(MetaError::NotSupported)
}

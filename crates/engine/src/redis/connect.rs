//! Opening a Redis connection once [`Dialer`] has a byte stream: the session's own
//! [`Wire`], the engine's shared connection (multiplexed by redis-rs), or a Cluster node's
//! after a MOVED; each then `AUTH` and `SELECT` as the URL says (go-redis's `OnConnect`
//! for `newRedisMeta`), with a password-free reason on failure.

use super::discovery::Dialer;
use super::reason::reason_of;
use super::stream::Stream;
use super::wire::Wire;
use crate::url::MetaUrl;
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, RedisConnectionInfo};
use std::time::Duration;

/// How long a connection attempt may take (go-redis `DialTimeout` default).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long to wait for an answer (JuiceFS's `read-timeout` default).
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(30);

/// Whether the one server `dialer` reaches is a Cluster node: newRedisMeta's test, `CLUSTER
/// INFO` answered with a `cluster_state` (or refused because of "cluster mode"). Sent
/// before any `SELECT`, which a Cluster node refuses.
pub(crate) async fn is_cluster_node(
    url: &MetaUrl,
    dialer: &Dialer,
) -> std::result::Result<bool, String> {
    let mut probe = connect_wire(url, dialer, 0).await?;
    let info: std::result::Result<String, redis::RedisError> = redis::cmd("CLUSTER")
        .arg("INFO")
        .query_async(&mut probe)
        .await;
    match info {
        Ok(info) => Ok(info.contains("cluster_state:")),
        Err(e) if matches!(e.code(), Some("NOAUTH")) => Err(reason_of(&e, url.password())),
        Err(e) => Ok(e.to_string().contains("cluster mode")),
    }
}

/// Dials the server `dialer` names within [`CONNECT_TIMEOUT`]: a one-line reason (never
/// the password) on failure.
async fn dial(url: &MetaUrl, dialer: &Dialer) -> std::result::Result<Stream, String> {
    dialer
        .dial(CONNECT_TIMEOUT)
        .await
        .map_err(|e| reason_of(&e.into(), url.password()))
}

/// Opens a connection for the engine's shared one ([`super::shared::Shared`]): dialled as every
/// connection is, multiplexed by redis-rs (its driver runs as a task), then
/// [`handshake`]. Returns a one-line reason
/// (never the password) on failure.
pub(crate) async fn connect(
    url: &MetaUrl,
    dialer: &Dialer,
    db: i64,
) -> std::result::Result<MultiplexedConnection, String> {
    let pw = url.password();
    let stream = dial(url, dialer).await?;
    let cfg = AsyncConnectionConfig::new().set_response_timeout(Some(RESPONSE_TIMEOUT));
    let settings = RedisConnectionInfo::default().set_skip_set_lib_name();
    let (mut con, driver) = MultiplexedConnection::new_with_config(&settings, stream, cfg)
        .await
        .map_err(|e| reason_of(&e, pw))?;
    tokio::spawn(driver);
    handshake(&mut con, url, db).await?;
    Ok(con)
}

/// Opens a session's own connection, which its task drives directly ([`Wire`]), then
/// [`handshake`].
pub(crate) async fn connect_wire(
    url: &MetaUrl,
    dialer: &Dialer,
    db: i64,
) -> std::result::Result<Wire, String> {
    let stream = dial(url, dialer).await?;
    let mut wire = Wire::over(stream, RESPONSE_TIMEOUT);
    handshake(&mut wire, url, db).await?;
    wire.set_db(db);
    Ok(wire)
}

/// Opens a session's connection to the Cluster node at `host:port` (where a MOVED answer
/// points), then `AUTH` (a Cluster has no `SELECT`).
pub(crate) async fn connect_node(
    url: &MetaUrl,
    dialer: &Dialer,
    host: &str,
    port: u16,
) -> std::result::Result<Wire, String> {
    let pw = url.password();
    let stream = dialer
        .dial_node(host, port, CONNECT_TIMEOUT)
        .await
        .map_err(|e| reason_of(&e.into(), pw))?;
    let mut wire = Wire::over(stream, RESPONSE_TIMEOUT);
    handshake(&mut wire, url, 0).await?;
    Ok(wire)
}

/// `AUTH [user] password` when the URL has a password, then `SELECT db` when db ≠ 0.
async fn handshake(
    con: &mut impl redis::aio::ConnectionLike,
    url: &MetaUrl,
    db: i64,
) -> std::result::Result<(), String> {
    let pw = url.password();
    if let Some(password) = pw {
        let mut auth = redis::cmd("AUTH");
        if !url.user().is_empty() {
            auth.arg(url.user());
        }
        auth.arg(password);
        auth.query_async::<()>(con)
            .await
            .map_err(|e| reason_of(&e, pw))?;
    }
    if db != 0 {
        redis::cmd("SELECT")
            .arg(db)
            .query_async::<()>(con)
            .await
            .map_err(|e| reason_of(&e, pw))?;
    }
    Ok(())
}

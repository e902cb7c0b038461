//! A registered session on Redis (`NewSession(true)`): the session record
//! (`doNewSession`, `doRefreshSession`, `doCleanStaleSession` of `pkg/meta/redis.go`), and
//! the two Lua scripts it loads, which turn `doLookup` into one `EVALSHA` and make
//! `Resolve` answer.
//!
//! The scripts are metabench's own, written to do what `lua_scripts.go`'s do, with the
//! same keys and arguments, the same `{inode, attribute}` answer and the same error words
//! (`ENOENT`, `ENOTSUP`, `ENOTDIR`, `EACCESS`), raised as plain strings so that every Redis
//! version passes them on; their SHA and the rest of an error's text differ.

use super::session::RedisSession;
use super::txn::txn;
use super::wire::command;
use crate::base::{session_expire, session_info, SessionSteps};
use crate::rules::looked_up_attr;
use crate::{Ctx, MetaError, Result};
use metabench_schema::redis_keys::names;
use metabench_schema::{Attr, Dentry, Ino};
use redis::{cmd, Value};

/// `doLookup` in one call: `KEYS[1]` is the directory's entry hash, `KEYS[2]` the name.
/// Replies `{inode, attribute}` (the attribute nil when its record is missing).
const LOOKUP: &str = r#"
-- metabench: one entry and its inode record, as JuiceFS's lookup script replies
local entry = redis.call('HGET', KEYS[1], KEYS[2])
if not entry then
    return redis.error_reply('ENOENT')
end
local ino = 0
for i = 2, 9 do
    ino = ino * 256 + string.byte(entry, i)
end
if ino > 4503599627370495 then -- beyond a double's exact integers
    return redis.error_reply('ENOTSUP')
end
return {ino, redis.call('GET', 'i' .. string.format('%.f', ino))}
"#;

/// `Resolve` in one call: `KEYS` are the start directory, the path and the uid, `ARGV` the
/// gids. Walks the path with a search-permission check on every directory but the root,
/// and replies `{inode, attribute}` of the last name.
const RESOLVE: &str = r#"
-- metabench: a path walked inside Redis, as JuiceFS's resolve script walks it
local function be(s, from, n)
    local v = 0
    for i = from, from + n - 1 do
        v = v * 256 + string.byte(s, i)
    end
    return v
end
local uid = tonumber(KEYS[3])
local groups = {}
for _, g in ipairs(ARGV) do
    groups[g] = true
end
local function may_search(ino)
    if uid == 0 then
        return true
    end
    local a = redis.call('GET', 'i' .. string.format('%.f', ino))
    if not a then
        error('ENOENT')
    end
    local mode, owner, group = be(a, 2, 2), be(a, 4, 4), be(a, 8, 4)
    local bits = mode % 8
    if owner == uid then
        bits = math.floor(mode / 64) % 8
    elseif groups[tostring(group)] then
        bits = math.floor(mode / 8) % 8
    end
    return bits % 2 == 1
end
local ino, typ = tonumber(KEYS[1]), 2
for name in string.gmatch(KEYS[2], '[^/]+') do
    if typ == 3 or ino > 4503599627370495 then
        error('ENOTSUP')
    elseif typ ~= 2 then
        error('ENOTDIR')
    elseif ino > 1 and not may_search(ino) then
        error('EACCESS')
    end
    local entry = redis.call('HGET', 'd' .. string.format('%.f', ino), name)
    if not entry then
        error('ENOENT')
    end
    typ, ino = string.byte(entry, 1), be(entry, 2, 8)
end
if ino > 4503599627370495 then
    error('ENOTSUP')
end
return {ino, redis.call('GET', 'i' .. string.format('%.f', ino))}
"#;

/// Which script.
#[derive(Debug, Clone, Copy)]
pub(super) enum Script {
    Lookup,
    Resolve,
}

impl Script {
    fn text(self) -> &'static str {
        match self {
            Script::Lookup => LOOKUP,
            Script::Resolve => RESOLVE,
        }
    }
}

/// What `handleLuaResult` makes of a script's answer.
enum LuaAnswer {
    /// The inode and its attribute.
    Found(Ino, Attr),
    /// The script is not loaded on the server (NOSCRIPT): load it and call again.
    Reload,
    /// An errno from the script (ENOTSUP: the caller falls back, or answers it).
    Errno(MetaError),
}

/// `handleLuaResult`: the errno words of the scripts, NOSCRIPT, or `{inode, attribute}`;
/// anything else is an error message (the caller then stops using the script).
fn lua_answer(reply: redis::RedisResult<Value>) -> std::result::Result<LuaAnswer, String> {
    let vals = match reply {
        Ok(Value::Array(vals)) => vals,
        Ok(other) => return Err(format!("invalid script result: {other:?}")),
        Err(e) => {
            // The error word is the reply's code (redis-rs names NOSCRIPT's kind otherwise).
            let msg = format!("{} {e}", e.code().unwrap_or_default());
            let errno = if msg.contains("NOSCRIPT") {
                return Ok(LuaAnswer::Reload);
            } else if msg.contains("ENOENT") {
                MetaError::NotFound
            } else if msg.contains("EACCESS") {
                MetaError::Access
            } else if msg.contains("ENOTDIR") {
                MetaError::NotDir
            } else if msg.contains("ENOTSUP") {
                MetaError::NotSupported
            } else {
                return Err(msg);
            };
            return Ok(LuaAnswer::Errno(errno));
        }
    };
    match vals.as_slice() {
        [Value::Int(ino), Value::BulkString(buf)] => {
            let attr = Attr::decode(buf).map_err(|e| format!("invalid attribute: {e}"))?;
            Ok(LuaAnswer::Found(*ino as Ino, attr))
        }
        [Value::Int(_), Value::Nil] | [Value::Int(_)] => {
            Ok(LuaAnswer::Errno(MetaError::NotSupported))
        }
        _ => Err(format!("invalid script result: {vals:?}")),
    }
}

impl RedisSession {
    /// `SCRIPT LOAD` of one script (1 RTT); `None`, with a warning, when the server
    /// refuses it (the session then works without it, as JuiceFS does).
    /// Loads both scripts (`doNewSession` after the record; a new worker of a registered
    /// client too, on its own connection).
    pub(super) async fn load_scripts(&mut self) {
        for script in [Script::Lookup, Script::Resolve] {
            let sha = self.load_script(script).await;
            *self.sha_slot(script) = sha;
        }
    }

    async fn load_script(&mut self, script: Script) -> Option<String> {
        let load = cmd("SCRIPT").arg("LOAD").arg(script.text()).clone();
        match self.conn.query_raw::<String>(&load).await {
            Ok(sha) => Some(sha),
            Err(e) => {
                tracing::warn!("load script {script:?}: {e}");
                None
            }
        }
    }

    /// The loaded script's SHA, when the session may use it: JuiceFS uses the scripts
    /// only without a key prefix (not on a Redis Cluster's `{db}` keys).
    fn sha(&self, script: Script) -> Option<&str> {
        if !self.keys.prefix().is_empty() {
            return None;
        }
        match script {
            Script::Lookup => self.sha_lookup.as_deref(),
            Script::Resolve => self.sha_resolve.as_deref(),
        }
    }

    /// Where the script's SHA is kept.
    fn sha_slot(&mut self, script: Script) -> &mut Option<String> {
        match script {
            Script::Lookup => &mut self.sha_lookup,
            Script::Resolve => &mut self.sha_resolve,
        }
    }

    /// One `EVALSHA` of a loaded script, reloading it once if the server lost it
    /// (NOSCRIPT). `None` when the script is not (or no longer) usable.
    async fn eval(
        &mut self,
        script: Script,
        keys: &[&[u8]],
        args: &[String],
    ) -> Option<Result<(Ino, Attr)>> {
        for _ in 0..2 {
            let sha = self.sha(script)?;
            let mut c = cmd("EVALSHA");
            c.arg(sha).arg(keys.len()).arg(keys).arg(args);
            match lua_answer(self.conn.query_raw(&c).await) {
                Ok(LuaAnswer::Found(ino, attr)) => return Some(Ok((ino, attr))),
                Ok(LuaAnswer::Errno(e)) => return Some(Err(e)),
                Ok(LuaAnswer::Reload) => {
                    let sha = self.load_script(script).await;
                    *self.sha_slot(script) = sha;
                }
                Err(msg) => {
                    tracing::warn!("unexpected answer of script {script:?}: {msg}");
                    *self.sha_slot(script) = None;
                    return None;
                }
            }
        }
        None
    }

    /// `doLookup` with the lookup script: one `EVALSHA`; when it answers ENOTSUP (or is
    /// not loaded), HGET then GET. An entry whose inode record is missing answers with
    /// its type only.
    pub(super) async fn lookup_entry(&mut self, parent: Ino, name: &[u8]) -> Result<(Ino, Attr)> {
        let dir = self.keys.entries(parent);
        match self
            .eval(Script::Lookup, &[dir.as_bytes(), name], &[])
            .await
        {
            Some(Ok(found)) => return Ok(found),
            Some(Err(MetaError::NotSupported)) | None => {}
            Some(Err(e)) => return Err(e),
        }
        let buf: Option<Vec<u8>> = self.conn.query(command!("HGET", &dir, name)).await?;
        let d = Dentry::decode(&buf.ok_or(MetaError::NotFound)?)?;
        let a: Option<Vec<u8>> = self
            .conn
            .query(command!("GET", self.keys.inode(d.inode)))
            .await?;
        let attr = looked_up_attr(a, (d.inode, d.typ), parent, name)?;
        Ok((d.inode, attr))
    }

    /// `redisMeta.Resolve`: one `EVALSHA` of the resolve script with the caller's uid and
    /// gids; ENOTSUP when the script is not loaded (an unregistered session, as in the
    /// Go benchmark).
    pub(super) async fn resolve_path(
        &mut self,
        ctx: &Ctx,
        parent: Ino,
        path: &[u8],
    ) -> Result<(Ino, Attr)> {
        if self.sha(Script::Resolve).is_none() {
            return Err(MetaError::NotSupported);
        }
        let parent = parent.to_string();
        let uid = ctx.uid.to_string();
        let gids: Vec<String> = ctx.gids.iter().map(|g| g.to_string()).collect();
        self.eval(
            Script::Resolve,
            &[parent.as_bytes(), path, uid.as_bytes()],
            &gids,
        )
        .await
        .unwrap_or(Err(MetaError::NotSupported))
    }
}

impl SessionSteps for RedisSession {
    /// `doNewSession`: the session's expiry in `allSessions` and its info in
    /// `sessionInfos` in one transaction, then the two scripts loaded.
    async fn do_new_session(&mut self, info: &[u8]) -> Result<()> {
        let (all, infos) = (
            self.keys.named(names::ALL_SESSIONS),
            self.keys.named(names::SESSION_INFOS),
        );
        let sid = self.base.sid();
        txn!(self, vec![all.clone(), infos.clone()], |c| {
            let mut p = redis::pipe();
            p.atomic();
            p.cmd("ZADD").arg(&all).arg(session_expire()).arg(sid);
            p.cmd("HSET").arg(&infos).arg(sid).arg(info);
            c.exec(&p).await?;
            Ok(())
        })?;
        self.load_scripts().await;
        Ok(())
    }

    /// `doRefreshSession`: the expiry moved on, and the info written back if another
    /// client cleaned the session up as stale meanwhile.
    async fn do_refresh_session(&mut self) -> Result<()> {
        let (all, infos) = (
            self.keys.named(names::ALL_SESSIONS),
            self.keys.named(names::SESSION_INFOS),
        );
        let sid = self.base.sid();
        txn!(self, vec![infos.clone(), all.clone()], |c| {
            let known: bool = c.query(cmd("HEXISTS").arg(&infos).arg(sid)).await?;
            if !known {
                tracing::warn!(
                    "session {sid} was stale and cleaned up, but now it comes back again"
                );
            }
            let mut p = redis::pipe();
            p.atomic();
            if !known {
                p.cmd("HSET").arg(&infos).arg(sid).arg(session_info());
            }
            p.cmd("ZADD").arg(&all).arg(session_expire()).arg(sid);
            c.exec(&p).await?;
            Ok(())
        })
    }

    /// `doCleanStaleSession`: the session's lock fields released (`locked{sid}`), then,
    /// unless it holds sustained inodes (which metabench never makes and does not free),
    /// its info and expiry removed in one transaction; the legacy `sessions` set is
    /// cleaned when `allSessions` did not list it.
    async fn do_clean_stale_session(&mut self, sid: u64) -> Result<()> {
        let locked = self.keys.locked(sid);
        let held: Vec<String> = self.conn.query(command!("SMEMBERS", &locked)).await?;
        for key in held {
            let owners: Vec<String> = self.conn.query(command!("HKEYS", &key)).await?;
            let mine: Vec<&String> = owners
                .iter()
                .filter(|o| o.split('_').next() == Some(&sid.to_string()))
                .collect();
            if !mine.is_empty() {
                self.conn
                    .query::<()>(cmd("HDEL").arg(&key).arg(mine))
                    .await?;
            }
            self.conn
                .query::<()>(cmd("SREM").arg(&locked).arg(&key))
                .await?;
        }
        let sustained = self.keys.sustained(sid);
        let open: Vec<String> = self.conn.query(command!("SMEMBERS", &sustained)).await?;
        if !open.is_empty() {
            return Err(MetaError::Engine(format!(
                "session {sid} keeps {} deleted files open; metabench does not free them, \
                 a juicefs client will once the session expires",
                open.len()
            )));
        }
        let (all, infos) = (
            self.keys.named(names::ALL_SESSIONS),
            self.keys.named(names::SESSION_INFOS),
        );
        let removed = txn!(self, vec![infos.clone(), all.clone()], |c| {
            let mut p = redis::pipe();
            p.atomic();
            p.cmd("HDEL").arg(&infos).arg(sid);
            p.cmd("ZREM").arg(&all).arg(sid);
            let replies = c.exec(&p).await?;
            Ok(matches!(replies.get(1), Some(Value::Int(1))))
        })?;
        // The legacy set has no `{db}` tag, so on a Cluster it lives on whichever primary
        // serves its own slot, which this session's connection does not reach; only
        // JuiceFS before 1.0 wrote it, never on a Cluster volume, so it is left alone there.
        if !removed && self.keys.prefix().is_empty() {
            self.conn
                .query::<()>(cmd("ZREM").arg(names::LEGACY_SESSIONS).arg(sid))
                .await?;
        }
        Ok(())
    }
}

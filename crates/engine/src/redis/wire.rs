//! A session's own Redis connection: the request goes from the calling task to the socket
//! and the reply comes back to the same task, with no driver task, channel or thread in
//! between (as go-redis's pooled connection is used by the goroutine that holds it).
//!
//! redis-rs encodes the commands and converts the replies ([`Cmd`], [`redis::Pipeline`],
//! `FromRedisValue`); a session's reads of plain arguments are built in the connection's
//! own reused `Cmd` ([`command!`]). This module reads RESP2 replies off
//! the socket into [`redis::Value`]s (error replies through redis-rs's own parser) and
//! implements [`ConnectionLike`] so that `query_async` works on it unchanged.

use super::stream::Stream;
use crate::deadline::CallDeadlines;
use redis::aio::ConnectionLike;
use redis::{
    Cmd, ErrorKind, FromRedisValue, Pipeline, RedisError, RedisFuture, RedisResult, Value,
};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;

/// One command as [`Wire`] sends it: RESP-encoded by redis-rs into the connection's own
/// buffer.
pub(crate) trait Request: Sync {
    /// Appends the command, RESP-encoded, to `buf`; `scratch` is the connection's own
    /// [`Cmd`], for a request that is not one already.
    fn write_to(&self, scratch: &mut Cmd, buf: &mut Vec<u8>);

    /// The command's name, as sent (its first argument).
    fn name(&self) -> &[u8];
}

/// The name of `cmd` (its first argument; empty if it has none).
pub(crate) fn cmd_name(cmd: &Cmd) -> &[u8] {
    match cmd.args_iter().next() {
        Some(redis::Arg::Simple(name)) => name,
        _ => b"",
    }
}

impl Request for Cmd {
    fn write_to(&self, _scratch: &mut Cmd, buf: &mut Vec<u8>) {
        self.write_packed_command(buf);
    }

    fn name(&self) -> &[u8] {
        cmd_name(self)
    }
}

/// A command of string and byte arguments ([`command!`]): built in the connection's own
/// [`Cmd`], cleared and reused as redis-rs provides (`Cmd::clear` keeps its buffers), so
/// that a session's reads (`GET`, `HGET`, …) allocate no `Cmd` of their own.
pub(crate) struct Args<'a, const N: usize>(pub [&'a [u8]; N]);

impl<const N: usize> Request for Args<'_, N> {
    fn write_to(&self, scratch: &mut Cmd, buf: &mut Vec<u8>) {
        scratch.clear();
        for arg in self.0 {
            scratch.arg(arg);
        }
        scratch.write_packed_command(buf);
    }

    fn name(&self) -> &[u8] {
        self.0.first().copied().unwrap_or_default()
    }
}

/// A command of string and byte arguments, for [`super::txn::Conn::query`]:
/// `command!("HGET", key, name)` is what `cmd("HGET").arg(key).arg(name)` sends.
macro_rules! command {
    ($($arg:expr),+ $(,)?) => {
        &$crate::redis::wire::Args([$(::std::convert::AsRef::<[u8]>::as_ref(&$arg)),+])
    };
}
pub(crate) use command;

/// Bytes read from the socket per `read` call at least.
const READ_CHUNK: usize = 16 * 1024;

/// One connection to Redis (TCP, TLS or a Unix socket), used by one task at a time.
pub(crate) struct Wire {
    stream: Stream,
    /// Bytes received and not yet handed out as values, from `start`.
    rbuf: Vec<u8>,
    start: usize,
    wbuf: Vec<u8>,
    /// Where a [`command!`] is built before it is encoded into `wbuf`.
    scratch: Cmd,
    db: i64,
    response_timeout: Duration,
    /// Bounds each exchange by the response timeout, with one timer for all of them.
    deadlines: CallDeadlines,
    /// Set when a request failed half-way: the stream's position in the reply sequence is
    /// unknown, so every later request fails instead of reading someone else's reply.
    broken: bool,
}

fn io_err(e: std::io::Error) -> RedisError {
    RedisError::from(e)
}

fn protocol_err(what: &'static str, detail: String) -> RedisError {
    RedisError::from((ErrorKind::Parse, what, detail))
}

impl Wire {
    /// A connection over a stream already dialled.
    pub(crate) fn over(stream: Stream, response_timeout: Duration) -> Self {
        Self {
            stream,
            rbuf: Vec::with_capacity(READ_CHUNK),
            start: 0,
            wbuf: Vec::with_capacity(256),
            scratch: Cmd::new(),
            db: 0,
            response_timeout,
            deadlines: CallDeadlines::new(),
            broken: false,
        }
    }

    /// Records the database the connection has selected (for [`ConnectionLike::get_db`]).
    pub(crate) fn set_db(&mut self, db: i64) {
        self.db = db;
    }

    /// Sends `wbuf`, then reads `n` replies into `keep(index, reply)`, within the response
    /// timeout.
    async fn round_trip(
        &mut self,
        n: usize,
        mut keep: impl FnMut(usize, Value),
    ) -> RedisResult<()> {
        if self.broken {
            return Err(io_err(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "connection broken by an earlier failed request",
            )));
        }
        let timeout = self.response_timeout;
        // Broken until the whole exchange is done: a caller that drops this future half-way
        // (an op timeout) must not leave a reply behind for the next request to read.
        self.broken = true;
        // Taken out while the exchange borrows the connection; a caller that drops the
        // exchange half-way leaves the connection broken, and its timer with it.
        let mut deadlines = std::mem::take(&mut self.deadlines);
        let work = async {
            self.stream.write_all(&self.wbuf).await.map_err(io_err)?;
            // TLS holds records back until flushed; on TCP and Unix sockets a no-op.
            self.stream.flush().await.map_err(io_err)?;
            for i in 0..n {
                keep(i, self.read_value().await?);
            }
            Ok::<_, RedisError>(())
        };
        let r = match deadlines.run(Instant::now() + timeout, work).await {
            Some(r) => r,
            None => Err(io_err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("no reply within {timeout:?}"),
            ))),
        };
        self.deadlines = deadlines;
        if r.is_ok() {
            self.broken = false;
        }
        r
    }

    /// Reads one complete reply.
    async fn read_value(&mut self) -> RedisResult<Value> {
        loop {
            if let Some((v, end)) = parse(&self.rbuf, self.start)
                .map_err(|e| protocol_err("bad reply from Redis", e))?
            {
                self.start = end;
                if self.start == self.rbuf.len() {
                    self.rbuf.clear();
                    self.start = 0;
                }
                return Ok(v);
            }
            if self.start > 0 {
                self.rbuf.drain(..self.start);
                self.start = 0;
            }
            self.rbuf.reserve(READ_CHUNK);
            let n = self.stream.read_buf(&mut self.rbuf).await.map_err(io_err)?;
            if n == 0 {
                return Err(io_err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "connection closed by Redis",
                )));
            }
        }
    }

    /// Sends one command and reads its reply (1 RTT).
    async fn command<R: Request + ?Sized>(&mut self, cmd: &R) -> RedisResult<Value> {
        self.wbuf.clear();
        cmd.write_to(&mut self.scratch, &mut self.wbuf);
        let mut reply = Value::Nil;
        self.round_trip(1, |_, v| reply = v).await?;
        Ok(reply)
    }

    /// What `cmd.query_async(&mut wire)` does (an error reply is the call's error, the
    /// reply converted as redis-rs converts it), without the boxed future that
    /// [`ConnectionLike`] hands back: a session's commands go through here, one allocation
    /// and copy of the request's state fewer on each.
    pub(crate) async fn query<T: FromRedisValue>(
        &mut self,
        cmd: &(impl Request + ?Sized),
    ) -> RedisResult<T> {
        let reply = self.command(cmd).await?;
        Ok(redis::from_redis_value(reply.extract_error()?)?)
    }
}

impl ConnectionLike for Wire {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(self.command(cmd))
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            self.wbuf = pipeline.get_packed_pipeline();
            let mut replies = Vec::with_capacity(count);
            let mut queue_error = None;
            self.round_trip(offset + count, |i, v| match v {
                // MULTI's +OK and the +QUEUED of each command are not handed out; a command
                // refused while queueing is the request's error, as redis-rs reports it.
                Value::ServerError(e) if i < offset => {
                    queue_error.get_or_insert(e);
                }
                _ if i < offset => {}
                v => replies.push(v),
            })
            .await?;
            if let Some(e) = queue_error {
                return Err(e.into());
            }
            // An EXEC answered with an error (EXECABORT) is the request's error too.
            if pipeline.is_transaction() {
                if let Some(Value::ServerError(e)) = replies.last() {
                    return Err(e.clone().into());
                }
            }
            Ok(replies)
        })
    }

    fn get_db(&self) -> i64 {
        self.db
    }
}

/// The RESP2 value starting at `pos`, and where it ends, if `buf` holds all of it. Error
/// replies are handed to redis-rs's parser (they are rare, and it classifies them).
fn parse(buf: &[u8], pos: usize) -> Result<Option<(Value, usize)>, String> {
    let Some(&kind) = buf.get(pos) else {
        return Ok(None);
    };
    let Some(nl) = buf[pos..].windows(2).position(|w| w == b"\r\n") else {
        return Ok(None);
    };
    let line = &buf[pos + 1..pos + nl];
    let after = pos + nl + 2;
    let number = || -> Result<i64, String> {
        std::str::from_utf8(line)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("bad number {:?}", String::from_utf8_lossy(line)))
    };
    let value = match kind {
        b'+' if line == b"OK" => Value::Okay,
        b'+' => Value::SimpleString(String::from_utf8_lossy(line).into_owned()),
        b'-' => redis::parse_redis_value(&buf[pos..after]).map_err(|e| e.to_string())?,
        b':' => Value::Int(number()?),
        b'$' => {
            let n = number()?;
            if n < 0 {
                Value::Nil
            } else {
                let end = after + n as usize;
                if buf.len() < end + 2 {
                    return Ok(None);
                }
                return Ok(Some((Value::BulkString(buf[after..end].to_vec()), end + 2)));
            }
        }
        b'*' => {
            let n = number()?;
            if n < 0 {
                Value::Nil
            } else {
                let mut items = Vec::with_capacity(n as usize);
                let mut p = after;
                for _ in 0..n {
                    match parse(buf, p)? {
                        Some((v, e)) => {
                            items.push(v);
                            p = e;
                        }
                        None => return Ok(None),
                    }
                }
                return Ok(Some((Value::Array(items), p)));
            }
        }
        other => return Err(format!("unexpected RESP2 type byte {other:#04x}")),
    };
    Ok(Some((value, after)))
}

#[cfg(test)]
mod tests {
    use super::{parse, Request};

    #[test]
    fn a_command_of_arguments_is_sent_as_redis_rs_sends_it() {
        let key = String::from("vol1i12345");
        let name: &[u8] = b"f\r\n\x00\xff";
        let cases: [(Vec<u8>, redis::Cmd); 3] = [
            (
                pack(command!("GET", key)),
                redis::cmd("GET").arg(&key).clone(),
            ),
            (
                pack(command!("HGET", key, name)),
                redis::cmd("HGET").arg(&key).arg(name).clone(),
            ),
            (pack(command!("PING")), redis::cmd("PING")),
        ];
        for (ours, theirs) in cases {
            assert_eq!(ours, theirs.get_packed_command());
        }
    }

    fn pack(request: &impl Request) -> Vec<u8> {
        let mut buf = b"kept".to_vec();
        // A scratch command that held another one: nothing of it is sent.
        let mut scratch = redis::cmd("SET");
        scratch.arg("left").arg("over");
        request.write_to(&mut scratch, &mut buf);
        assert!(buf.starts_with(b"kept"), "appends to what the buffer holds");
        buf.split_off(4)
    }

    const REPLIES: [&[u8]; 11] = [
        b"+OK\r\n",
        b"+QUEUED\r\n",
        b"-ERR no\r\n",
        b"-EXECABORT Transaction discarded\r\n",
        b":42\r\n",
        b"$-1\r\n",
        b"$3\r\nabc\r\n",
        b"*-1\r\n",
        b"*0\r\n",
        b"*2\r\n$1\r\na\r\n:1\r\n",
        b"*2\r\n*1\r\n+QUEUED\r\n$0\r\n\r\n",
    ];

    #[test]
    fn parses_as_redis_rs_does_and_waits_for_partial_replies() {
        for reply in REPLIES {
            let (v, end) = parse(reply, 0).unwrap().unwrap();
            assert_eq!(end, reply.len(), "{reply:?}");
            let theirs = redis::parse_redis_value(reply).unwrap();
            assert_eq!(format!("{v:?}"), format!("{theirs:?}"), "{reply:?}");
            for cut in 0..reply.len() {
                assert!(
                    parse(&reply[..cut], 0).unwrap().is_none(),
                    "{reply:?} cut at {cut}"
                );
            }
        }
    }

    #[test]
    fn parses_one_value_of_several_and_rejects_garbage() {
        let two = b"$2\r\nab\r\n:7\r\n";
        assert_eq!(parse(two, 0).unwrap().unwrap().1, 8);
        assert_eq!(parse(two, 8).unwrap().unwrap().1, two.len());
        assert!(parse(b"?x\r\n", 0).is_err());
        assert!(parse(b"$x\r\n", 0).is_err());
    }
}

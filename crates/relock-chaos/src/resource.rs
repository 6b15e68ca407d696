//! The resource the critical sections read, increment and write: a counter per lock name, with
//! a log of every accepted write, kept in one of two ways.
//!
//! - **Guarded** (the kinds held in a lock hash on one server: plain, fair, rw, election,
//!   job): the counter lives on the lock's own server, beside the lock, and every read and
//!   write is a guarded one (`LockGuard::read`/`write`): the server runs it only while the
//!   hold's field is on the lock. A paused holder's late write is refused by the lock itself.
//!   A server restarted empty loses the counter with the lock: the harness saves the log just
//!   before it kills the server (writes paused, so nothing lands after the copy), and the
//!   checker judges each life of the server in turn ([`Lives`]).
//! - **Fenced** (the others: a quorum has no single server; a cluster's or Sentinel's
//!   failover may lose acknowledged writes of any data): a redis-server that no nemesis
//!   touches, fenced by token as below.
//!
//! Both the read and the write carry the holder's fencing token, and each is refused when the
//! token is lower than the highest the resource has seen. Fencing the read too is what makes a
//! read-modify-write safe: once a newer holder has read, an older holder's write is refused,
//! whichever order the two writes arrive in. Every accepted write is appended to a log, so the
//! checker can verify the resource from the outside (tokens never went down, no increment was
//! lost) instead of trusting the script that enforces it.
//!
//! A read-write lock's read holds overlap, and their tokens arrive in any order: their read
//! ([`Resource::read_shared`]) is refused only below the highest *exclusive* token (`max`, a
//! writer's), and raises `rmax` instead, which exclusive reads and writes are fenced by too
//! (a paused writer's late write must not land under a newer reader).

use std::time::Duration;

use relock::fred::clients::Client as FredClient;
use relock::fred::interfaces::{ClientLike, LuaInterface};
use relock::fred::types::config::{Config, ConnectionConfig, PerformanceConfig, ReconnectPolicy};

/// `KEYS[1]` the state hash (max, rmax, value, accepted, rejected); `ARGV[1]` the token.
/// Returns the value, or -1 if the token is stale.
const READ: &str = r"
local max = math.max(tonumber(redis.call('hget', KEYS[1], 'max') or '0'),
  tonumber(redis.call('hget', KEYS[1], 'rmax') or '0'))
if tonumber(ARGV[1]) < max then
  redis.call('hincrby', KEYS[1], 'rejected', 1)
  return -1
end
redis.call('hset', KEYS[1], 'max', ARGV[1])
return tonumber(redis.call('hget', KEYS[1], 'value') or '0')
";

/// `KEYS[1]` the state hash, `KEYS[2]` the log; `ARGV` token, new value, client.
/// Returns 1 (accepted) or 0 (stale token).
const WRITE: &str = r"
local max = math.max(tonumber(redis.call('hget', KEYS[1], 'max') or '0'),
  tonumber(redis.call('hget', KEYS[1], 'rmax') or '0'))
if tonumber(ARGV[1]) < max then
  redis.call('hincrby', KEYS[1], 'rejected', 1)
  return 0
end
redis.call('hset', KEYS[1], 'max', ARGV[1], 'value', ARGV[2])
redis.call('hincrby', KEYS[1], 'accepted', 1)
redis.call('rpush', KEYS[2], ARGV[1] .. ' ' .. ARGV[2] .. ' ' .. ARGV[3])
return 1
";

/// A shared read (a read hold): `KEYS[1]` the state hash; `ARGV[1]` the token. Refused below
/// the highest exclusive token; raises `rmax`. Returns the value, or -1 if the token is stale.
const READ_SHARED: &str = r"
local max = tonumber(redis.call('hget', KEYS[1], 'max') or '0')
if tonumber(ARGV[1]) < max then
  redis.call('hincrby', KEYS[1], 'rejected', 1)
  return -1
end
local rmax = tonumber(redis.call('hget', KEYS[1], 'rmax') or '0')
if tonumber(ARGV[1]) > rmax then
  redis.call('hset', KEYS[1], 'rmax', ARGV[1])
end
return tonumber(redis.call('hget', KEYS[1], 'value') or '0')
";

pub fn state_key(name: &str) -> String {
    format!("resource:{name}")
}

pub fn log_key(name: &str) -> String {
    format!("resource:{name}:log")
}

/// The guarded counter's hash (`value`, `accepted`) for the lock `name`: in its slot.
pub fn guarded_state_key(name: &str) -> String {
    format!("{{{name}}}:resource")
}

/// The guarded counter's log.
pub fn guarded_log_key(name: &str) -> String {
    format!("{{{name}}}:resource:log")
}

/// Every life of one name's resource: one [`Final`] per run of its server (more than one
/// when a guarded counter's server was restarted empty), in order.
pub type Lives = Vec<Final>;

/// The guarded counter, read and written through the hold's guard.
pub mod guarded {
    use relock::fred::types::Value;
    use relock::{Commands, Error, LockGuard};

    use super::{guarded_log_key, guarded_state_key};

    /// The value, or `None` if the hold was gone when the read arrived.
    pub async fn read(guard: &LockGuard, name: &str) -> Result<Option<i64>, String> {
        let batch = Commands::new()
            .cmd("HGET")
            .key(guarded_state_key(name))
            .arg("value");
        match guard.read(batch).await {
            Ok(replies) => match replies.first() {
                Some(Value::Null) => Ok(Some(0)),
                Some(v) => v
                    .as_i64()
                    .map(Some)
                    .ok_or_else(|| format!("guarded read: value {v:?}")),
                None => Err("guarded read: no reply".into()),
            },
            Err(Error::LockLost { .. }) => Ok(None),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Whether the write of `value` under `token` was accepted (the hold was there). It is
    /// logged with `client`'s number, or not logged if `None`.
    pub async fn write(
        guard: &LockGuard,
        name: &str,
        token: u64,
        value: i64,
        client: Option<u32>,
    ) -> Result<bool, String> {
        let (state, log) = (guarded_state_key(name), guarded_log_key(name));
        let batch = Commands::new()
            .cmd("HSET")
            .key(&state)
            .arg("value")
            .arg(value)
            .cmd("HINCRBY")
            .key(&state)
            .arg("accepted")
            .arg(1);
        let batch = match client {
            Some(client) => batch
                .cmd("RPUSH")
                .key(log)
                .arg(format!("{token} {value} {client}")),
            None => batch,
        };
        match guard.write(batch).await {
            Ok(_) => Ok(true),
            Err(Error::LockLost { .. }) => Ok(false),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// A client's connection to the resource.
pub struct Resource {
    conn: FredClient,
}

impl Resource {
    pub async fn connect(url: &str) -> Result<Self, relock::fred::error::Error> {
        let config = Config::from_url(url)?;
        let conn = relock::fred::types::Builder::from_config(config)
            .with_connection_config(|c: &mut ConnectionConfig| {
                c.connection_timeout = Duration::from_secs(2);
            })
            .with_performance_config(|p: &mut PerformanceConfig| {
                p.default_command_timeout = Duration::from_secs(2);
            })
            .set_policy(ReconnectPolicy::new_constant(0, 100))
            .build()?;
        conn.init().await?;
        Ok(Resource { conn })
    }

    /// The value, or `None` if `token` is stale.
    pub async fn read(&self, name: &str, token: u64) -> Result<Option<i64>, String> {
        let v: i64 = self
            .conn
            .eval(READ, vec![state_key(name)], vec![token.to_string()])
            .await
            .map_err(|e| e.to_string())?;
        Ok((v >= 0).then_some(v))
    }

    /// A read hold's value, or `None` if `token` is below a writer's.
    pub async fn read_shared(&self, name: &str, token: u64) -> Result<Option<i64>, String> {
        let v: i64 = self
            .conn
            .eval(READ_SHARED, vec![state_key(name)], vec![token.to_string()])
            .await
            .map_err(|e| e.to_string())?;
        Ok((v >= 0).then_some(v))
    }

    /// Whether the write of `value` under `token` was accepted.
    pub async fn write(
        &self,
        name: &str,
        token: u64,
        value: i64,
        client: u32,
    ) -> Result<bool, String> {
        let r: i64 = self
            .conn
            .eval(
                WRITE,
                vec![state_key(name), log_key(name)],
                vec![token.to_string(), value.to_string(), client.to_string()],
            )
            .await
            .map_err(|e| e.to_string())?;
        Ok(r == 1)
    }

    pub async fn quit(&self) {
        let _ = self.conn.quit().await;
    }
}

/// What the resource holds for one name at the end of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Final {
    pub value: i64,
    pub accepted: i64,
    pub rejected: i64,
    /// Accepted writes in order: (token, value written, client).
    pub log: Vec<(u64, i64, u32)>,
}

/// Reads a resource's state in one step (so that it agrees with its log even while clients
/// write): `KEYS[1]` the state hash, `KEYS[2]` the log. Returns {value, accepted, rejected,
/// log entries}. Flagged `no-writes`, so that it runs while the server's writes are paused
/// (before a kill-restart).
const SNAPSHOT: &str = r"#!lua flags=no-writes
return {redis.call('hget', KEYS[1], 'value') or '0',
  redis.call('hget', KEYS[1], 'accepted') or '0',
  redis.call('hget', KEYS[1], 'rejected') or '0',
  redis.call('lrange', KEYS[2], 0, -1)}
";

/// Reads the resource's state for `name` with the test kit's synchronous client, in one step
/// (at the end of a run or while clients write): the fenced resource's (`guarded` false), or
/// the guarded counter's on the lock's server.
pub fn read_final(
    server: &relock_testkit::RedisServer,
    name: &str,
    guarded: bool,
) -> Result<Final, String> {
    use relock_testkit::Value;
    let (state, log) = if guarded {
        (guarded_state_key(name), guarded_log_key(name))
    } else {
        (state_key(name), log_key(name))
    };
    let reply = server
        .cmd(&["EVAL", SNAPSHOT, "2", &state, &log])
        .map_err(|e| e.to_string())?;
    let Value::Array(Some(parts)) = reply else {
        return Err(format!("resource {name}: {reply:?}"));
    };
    let [value, accepted, rejected, Value::Array(Some(entries))] = &parts[..] else {
        return Err(format!("resource {name}: {parts:?}"));
    };
    let number = |what: &str, v: &Value| -> Result<i64, String> {
        v.as_string()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("resource {name} {what}: {v:?}"))
    };
    let log = entries
        .iter()
        .map(|v| {
            let s = v
                .as_string()
                .ok_or_else(|| format!("bad log entry {v:?}"))?;
            let mut it = s.split(' ');
            let parse = |x: Option<&str>| x.and_then(|x| x.parse::<i64>().ok());
            match (parse(it.next()), parse(it.next()), parse(it.next())) {
                (Some(t), Some(v), Some(c)) => Ok((t as u64, v, c as u32)),
                _ => Err(format!("bad log entry {s:?}")),
            }
        })
        .collect::<Result<_, String>>()?;
    Ok(Final {
        value: number("value", value)?,
        accepted: number("accepted", accepted)?,
        rejected: number("rejected", rejected)?,
        log,
    })
}

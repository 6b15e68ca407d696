//! The fenced resource: a counter per lock name on a redis-server that no nemesis touches.
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

/// Reads the resource's final state for `name` with the test kit's synchronous client.
pub fn read_final(server: &relock_testkit::RedisServer, name: &str) -> Result<Final, String> {
    use relock_testkit::Value;
    let field = |f: &str| -> Result<i64, String> {
        match server
            .cmd(&["HGET", &state_key(name), f])
            .map_err(|e| e.to_string())?
        {
            Value::Bulk(Some(b)) => String::from_utf8_lossy(&b)
                .parse()
                .map_err(|e| format!("resource field {f}: {e}")),
            Value::Bulk(None) => Ok(0),
            other => Err(format!("resource field {f}: {other:?}")),
        }
    };
    let log = match server
        .cmd(&["LRANGE", &log_key(name), "0", "-1"])
        .map_err(|e| e.to_string())?
    {
        Value::Array(Some(items)) => items
            .into_iter()
            .map(|v| match v {
                Value::Bulk(Some(b)) => {
                    let s = String::from_utf8_lossy(&b).into_owned();
                    let mut it = s.split(' ');
                    let parse = |x: Option<&str>| x.and_then(|x| x.parse::<i64>().ok());
                    match (parse(it.next()), parse(it.next()), parse(it.next())) {
                        (Some(t), Some(v), Some(c)) => Ok((t as u64, v, c as u32)),
                        _ => Err(format!("bad log entry {s:?}")),
                    }
                }
                other => Err(format!("bad log entry {other:?}")),
            })
            .collect::<Result<_, _>>()?,
        other => return Err(format!("resource log: {other:?}")),
    };
    Ok(Final {
        value: field("value")?,
        accepted: field("accepted")?,
        rejected: field("rejected")?,
        log,
    })
}

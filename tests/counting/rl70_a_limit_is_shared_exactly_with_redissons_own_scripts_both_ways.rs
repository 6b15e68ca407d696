//! A Java service using Redisson's `RRateLimiter` and relock share one limit exactly: a peer
//! runs Redisson's own `trySetRate`, `tryAcquire` and `availablePermits` scripts (from
//! `RedissonRateLimiter.java`, with its arguments: the client's clock in ms and 16 random
//! bytes), and between them they get exactly the rate; each expires and counts the other's
//! records, so their available permits agree.

use std::time::Duration;

use relock::RateType;
use relock_testkit::Value;
use relock_tests::*;

/// Redisson's `trySetRateAsync`.
const TRY_SET_RATE: &str = "redis.call('hsetnx', KEYS[1], 'rate', ARGV[1]);\
redis.call('hsetnx', KEYS[1], 'interval', ARGV[2]);\
redis.call('hsetnx', KEYS[1], 'keepAliveTime', ARGV[4]);\
local res = redis.call('hsetnx', KEYS[1], 'type', ARGV[3]);\
if res == 1 and tonumber(ARGV[4]) > 0 then redis.call('pexpire', KEYS[1], ARGV[4]); end; \
return res;";

/// Redisson's `tryAcquireAsync(command, permits)`.
pub(crate) const TRY_ACQUIRE: &str = "local rate = redis.call('hget', KEYS[1], 'rate');\
local interval = redis.call('hget', KEYS[1], 'interval');\
local type = redis.call('hget', KEYS[1], 'type');\
assert(rate ~= false and interval ~= false and type ~= false, 'RateLimiter is not initialized')\
local valueName = KEYS[2];\
local permitsName = KEYS[4];\
if type == '1' then valueName = KEYS[3];permitsName = KEYS[5];end;\
assert(tonumber(rate) >= tonumber(ARGV[1]), 'Requested permits amount cannot exceed defined rate'); \
local currentValue = redis.call('get', valueName); \
local res;\
if currentValue ~= false then \
local expiredValues = redis.call('zrangebyscore', permitsName, 0, tonumber(ARGV[2]) - interval); \
local released = 0; \
for i, v in ipairs(expiredValues) do \
local random, permits = struct.unpack('Bc0I', v);\
released = released + permits;\
end; \
if released > 0 then \
redis.call('zremrangebyscore', permitsName, 0, tonumber(ARGV[2]) - interval); \
if tonumber(currentValue) + released > tonumber(rate) then \
local values = redis.call('zrange', permitsName, 0, -1); \
local used = 0; \
for i, v in ipairs(values) do \
local random, permits = struct.unpack('Bc0I', v);\
used = used + permits;\
end; \
currentValue = tonumber(rate) - used; \
else \
currentValue = tonumber(currentValue) + released; \
end; \
redis.call('set', valueName, currentValue);\
end;\
if tonumber(currentValue) < tonumber(ARGV[1]) then \
local firstValue = redis.call('zrange', permitsName, 0, 0, 'withscores'); \
res = 3 + interval - (tonumber(ARGV[2]) - tonumber(firstValue[2]));\
else \
redis.call('zadd', permitsName, ARGV[2], struct.pack('Bc0I', string.len(ARGV[3]), ARGV[3], ARGV[1])); \
redis.call('decrby', valueName, ARGV[1]); \
res = nil; \
end; \
else \
redis.call('set', valueName, rate); \
redis.call('zadd', permitsName, ARGV[2], struct.pack('Bc0I', string.len(ARGV[3]), ARGV[3], ARGV[1])); \
redis.call('decrby', valueName, ARGV[1]); \
res = nil; \
end;\
local keepAliveTime = redis.call('hget', KEYS[1], 'keepAliveTime'); \
if (keepAliveTime ~= false and tonumber(keepAliveTime) > 0) then \
redis.call('pexpire', KEYS[1], keepAliveTime); \
redis.call('pexpire', valueName, keepAliveTime); \
redis.call('pexpire', permitsName, keepAliveTime); \
else \
local ttl = redis.call('pttl', KEYS[1]); \
if ttl > 0 then \
redis.call('pexpire', valueName, ttl); \
redis.call('pexpire', permitsName, ttl); \
end; \
end; \
return res;";

/// Redisson's `availablePermitsAsync`.
const AVAILABLE: &str = "local rate = redis.call('hget', KEYS[1], 'rate');\
local interval = redis.call('hget', KEYS[1], 'interval');\
local type = redis.call('hget', KEYS[1], 'type');\
assert(rate ~= false and interval ~= false and type ~= false, 'RateLimiter is not initialized')\
local valueName = KEYS[2];\
local permitsName = KEYS[4];\
if type == '1' then valueName = KEYS[3];permitsName = KEYS[5];end;\
local currentValue = redis.call('get', valueName); \
if currentValue == false then \
redis.call('set', valueName, rate); \
return rate; \
else \
local expiredValues = redis.call('zrangebyscore', permitsName, 0, tonumber(ARGV[1]) - interval); \
local released = 0; \
for i, v in ipairs(expiredValues) do \
local random, permits = struct.unpack('Bc0I', v);\
released = released + permits;\
end; \
if released > 0 then \
redis.call('zremrangebyscore', permitsName, 0, tonumber(ARGV[1]) - interval); \
currentValue = tonumber(currentValue) + released; \
redis.call('set', valueName, currentValue);\
end;\
return currentValue; \
end;";

/// A Java client of Redisson on `name`, whose clock is the server's (in sync).
struct Peer<'a> {
    server: &'a RedisServer,
    keys: [String; 5],
    calls: u32,
}

impl<'a> Peer<'a> {
    fn new(server: &'a RedisServer, name: &str) -> Self {
        let id = "8d1e2c3a-1111-2222-3333-444455556666";
        Peer {
            server,
            keys: [
                name.to_string(),
                format!("{{{name}}}:value"),
                format!("{{{name}}}:value:{id}"),
                format!("{{{name}}}:permits"),
                format!("{{{name}}}:permits:{id}"),
            ],
            calls: 0,
        }
    }

    fn eval(&self, lua: &str, keys: usize, args: &[&str]) -> Value {
        let n = keys.to_string();
        let mut cmd = vec!["EVAL", lua, n.as_str()];
        cmd.extend(self.keys[..keys].iter().map(String::as_str));
        cmd.extend(args);
        self.server.cmd(&cmd).unwrap()
    }

    fn try_set_rate(&self, rate: u64, interval_ms: u64) -> bool {
        let (r, i) = (rate.to_string(), interval_ms.to_string());
        self.eval(TRY_SET_RATE, 1, &[&r, &i, "0", "0"]).as_int() == Some(1)
    }

    /// `tryAcquire(1)`: granted (nil), or the delay.
    fn try_acquire(&mut self) -> bool {
        self.calls += 1;
        // 16 bytes, different per call, as Redisson's random id.
        let random = format!("java-random-{:04}", self.calls);
        let now = server_ms(self.server).to_string();
        match self.eval(TRY_ACQUIRE, 5, &["1", &now, &random]) {
            Value::Bulk(None) => true,
            Value::Int(delay) => {
                assert!(delay > 0, "{delay}");
                false
            }
            other => panic!("{other:?}"),
        }
    }

    fn available(&self) -> i64 {
        let now = server_ms(self.server).to_string();
        self.eval(AVAILABLE, 5, &[&now]).as_int().unwrap()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limit_is_shared_exactly_with_redissons_own_scripts_both_ways() {
    let server = server();
    let c = client(&server).await;

    // Redisson sets the rate; relock finds it set, and they share it exactly.
    let mut java = Peer::new(&server, "rl70");
    assert!(java.try_set_rate(4, 60_000));
    let l = c.rate_limiter("rl70");
    assert!(!l
        .try_set_rate(RateType::Overall, 9, Duration::from_secs(1))
        .await
        .unwrap());
    assert_eq!(l.config().await.unwrap().unwrap().rate(), 4);
    let mut granted = 0;
    for _ in 0..4 {
        granted += u32::from(java.try_acquire());
        granted += u32::from(l.try_acquire(1).await.unwrap());
    }
    assert_eq!(granted, 4);
    assert_eq!(
        (l.available_permits().await.unwrap(), java.available()),
        (0, 0)
    );
    assert!(!java.try_acquire());
    assert!(!l.try_acquire(1).await.unwrap());

    // relock sets the rate; each expires and counts the other's records.
    let interval = Duration::from_millis(300);
    let mut java = Peer::new(&server, "rl70:b");
    let l = c.rate_limiter("rl70:b");
    assert!(l
        .try_set_rate(RateType::Overall, 2, interval)
        .await
        .unwrap());
    assert!(!java.try_set_rate(5, 1000));
    assert!(l.try_acquire(2).await.unwrap());
    assert_eq!(java.available(), 0);
    assert!(!java.try_acquire());
    // relock's records expire for Redisson's script: its permits come back to the Java side.
    wait_until(
        Duration::from_secs(3),
        "relock's records to expire",
        || async { java.available() == 2 },
    )
    .await
    .unwrap();
    assert!(java.try_acquire());
    assert_eq!(l.available_permits().await.unwrap(), 1);
    assert!(l.try_acquire(1).await.unwrap());
    assert_eq!(
        (l.available_permits().await.unwrap(), java.available()),
        (0, 0)
    );
    // Redisson's record expires for relock's script.
    bounded(Duration::from_secs(3), "acquire", l.acquire(2))
        .await
        .unwrap();
    assert_eq!(
        (l.available_permits().await.unwrap(), java.available()),
        (0, 0)
    );
    assert!(!java.try_acquire());

    for name in ["rl70", "rl70:b"] {
        assert!(c.rate_limiter(name).delete().await.unwrap());
    }
    c.shutdown().await;
    assert_nothing_left(&server).await;
}

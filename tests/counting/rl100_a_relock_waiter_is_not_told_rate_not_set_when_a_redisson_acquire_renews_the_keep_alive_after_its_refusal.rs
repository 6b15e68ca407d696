//! A relock waiter refused on a limiter whose keep-alive is its interval makes the keys
//! outlive its sleep (the delay plus a second). A Redisson client's acquire right after
//! (its own script, which sets the keep-alive on the keys whatever they had) cuts that back to
//! the keep-alive from its call: the keys expire a few ms before the relock waiter wakes, and
//! its `acquire` fails with `RateNotSet` instead of taking the permit.

use std::time::Duration;

use relock::{Error, RateConfig, RateType};
use relock_testkit::Value;
use relock_tests::*;

/// Redisson's `tryAcquireAsync(command, permits)`.
const TRY_ACQUIRE: &str = "local rate = redis.call('hget', KEYS[1], 'rate');\
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

/// Redisson's `tryAcquire(1)` on `name` by a Java client in sync with the server: granted.
fn java_try_acquire(server: &RedisServer, name: &str, call: u32) -> bool {
    let id = "8d1e2c3a-1111-2222-3333-444455556666";
    let keys = [
        name.to_string(),
        format!("{{{name}}}:value"),
        format!("{{{name}}}:value:{id}"),
        format!("{{{name}}}:permits"),
        format!("{{{name}}}:permits:{id}"),
    ];
    let random = format!("java-random-{call:04}");
    let now = server_ms(server).to_string();
    let mut cmd = vec!["EVAL", TRY_ACQUIRE, "5"];
    cmd.extend(keys.iter().map(String::as_str));
    cmd.extend(["1", now.as_str(), random.as_str()]);
    matches!(server.cmd(&cmd).unwrap(), Value::Bulk(None))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "reproduces a bug: a Redisson acquire cuts a relock waiter's keep-alive extension"]
async fn a_relock_waiter_is_not_told_rate_not_set_when_a_redisson_acquire_renews_the_keep_alive_after_its_refusal(
) {
    let server = server();
    let c = client(&server).await;
    let interval = Duration::from_millis(200);
    let mut failures = Vec::new();
    for round in 0..5 {
        let name = format!("rl100:{round}");
        let l = c.rate_limiter(name.clone());
        l.set(RateConfig::new(RateType::Overall, 1, interval).with_keep_alive(interval))
            .await
            .unwrap();
        assert!(l.try_acquire(1).await.unwrap());
        let waiter = {
            let l = l.clone();
            tokio::spawn(async move { l.acquire(1).await })
        };
        // The waiter's refusal made the config live past its sleep (the delay plus a second).
        wait_until(Duration::from_secs(1), "the waiter's refusal", || async {
            server.cmd(&["PTTL", &name]).unwrap().as_int().unwrap() > 600
        })
        .await
        .unwrap();
        // A Java client asks too (refused: the one permit is taken).
        assert!(!java_try_acquire(&server, &name, round));
        let r = bounded(Duration::from_secs(3), "acquire", waiter)
            .await
            .unwrap();
        match r {
            Ok(()) => {}
            Err(e @ Error::RateNotSet { .. }) => failures.push(e.to_string()),
            Err(e) => panic!("{e}"),
        }
    }
    c.shutdown().await;
    assert!(
        failures.is_empty(),
        "a relock waiter, then a Redisson acquire, on a limiter with keep-alive = interval: \
         {failures:?}"
    );
}

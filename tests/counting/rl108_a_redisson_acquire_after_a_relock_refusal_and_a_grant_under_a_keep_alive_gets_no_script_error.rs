//! An `Overall` limiter with a keep-alive, shared with a Java client: after a relock acquire
//! refused with a delay (which keeps every key alive past the waiter's sleep) and a grant once
//! the oldest record expired (which makes the records key again), the value and the records
//! key must expire together, as Redisson's own scripts keep them. A records key that expires
//! alone leaves a value below the rate with no record: Redisson's `tryAcquire` then fails
//! with a script error ("attempt to perform arithmetic on a nil value") until the value
//! expires too.

use std::time::Duration;

use relock::{RateConfig, RateType};
use relock_tests::*;

/// Redisson's `tryAcquireAsync(command, permits)`, as in the sharing test.
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redisson_acquire_after_a_relock_refusal_and_a_grant_under_a_keep_alive_gets_no_script_error(
) {
    let server = server();
    let c = client(&server).await;
    let name = "rl108";
    let l = c.rate_limiter(name);
    let interval = Duration::from_millis(200);
    // The keep-alive Redisson allows at its shortest: the interval.
    l.set(RateConfig::new(RateType::Overall, 1, interval).with_keep_alive(interval))
        .await
        .unwrap();
    assert!(l.try_acquire(1).await.unwrap());
    let granted = server_ms(&server);
    // Refused: the keys now live the delay plus a second.
    assert!(!l.try_acquire(1).await.unwrap());
    let window = i64::try_from(interval.as_millis()).unwrap();
    wait_until(
        Duration::from_secs(3),
        "the first record's interval to end",
        || async { server_ms(&server) > granted + window + 5 },
    )
    .await
    .unwrap();
    // The first record expires (its key goes) and the grant makes the records key again.
    assert!(l.try_acquire(1).await.unwrap());
    let (value, records) = (format!("{{{name}}}:value"), format!("{{{name}}}:permits"));
    let pttl = |key: &str| server.cmd(&["PTTL", key]).unwrap().as_int().unwrap();
    let ttls = (pttl(&value), pttl(&records));
    // The second record's interval ends: its key may go, but not before the value.
    wait_until(
        Duration::from_secs(3),
        "the records key to expire",
        || async { pttl(&records) == -2 },
    )
    .await
    .unwrap();
    let left = crate::get(&server, &value);
    // A Java client of Redisson (clock in sync) asks for a permit.
    let now = server_ms(&server).to_string();
    let keys = [
        name.to_string(),
        value.clone(),
        format!("{{{name}}}:value:java"),
        records.clone(),
        format!("{{{name}}}:permits:java"),
    ];
    let mut cmd = vec!["EVAL", TRY_ACQUIRE, "5"];
    cmd.extend(keys.iter().map(String::as_str));
    cmd.extend(["1", now.as_str(), "java-random-0001"]);
    // The reply alone (the error names the whole command).
    let java = server.cmd(&cmd).map_err(|e| {
        let e = e.to_string();
        e[e.len().saturating_sub(200)..].to_string()
    });
    c.shutdown().await;
    // With the keys gone together the limiter is gone (its keep-alive ended): Redisson says
    // so. What must not happen is a value left alone, which its script cannot read.
    let arithmetic = matches!(&java, Err(e) if e.contains("arithmetic"));
    assert!(
        left.is_none() && !arithmetic,
        "Redisson's tryAcquire answered {java:?} (value {left:?} left with no records key; value \
         and records key PTTLs after relock's last grant: {ttls:?} ms)"
    );
}

//! relock's fencing counter lives a grace period (1 s) from its seed, so during a longer hold
//! it expires. A Redisson `RFencedLock` that takes the lock next finds no counter and starts
//! one at 1, with no TTL (Redisson expects it to live forever). relock's next grant must not
//! count on from there: its token stays above its earlier ones. (Found by review: relock handed
//! out token 2 after 1.79e15, on a counter that never expired.) And it must not give Redisson's
//! counter an expiry either (issue 22: relock re-seeded it with a 1 s life, and after relock's
//! release Java's next token was 1 again, below its own earlier 2): the counter keeps no
//! expiry, and Java counts on from relock's token.

use std::time::Duration;

use relock_tests::*;

/// Redisson's `RedissonFencedLock.tryLockInnerAsync` and `RedissonLock.unlockInnerAsync`.
const REDISSON_FENCED_LOCK: &str = "if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then \
  redis.call('hincrby', KEYS[1], ARGV[2], 1); \
  redis.call('pexpire', KEYS[1], ARGV[1]); \
  return redis.call('incr', KEYS[2]); \
end; \
return -redis.call('pttl', KEYS[1]);";
const REDISSON_UNLOCK: &str =
    "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil; end; \
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); \
if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); return 0; \
else redis.call('del', KEYS[1]); redis.call('publish', KEYS[2], ARGV[1]); return 1; end; \
return nil;";

const COUNTER: &str = "redisson_lock_token:{t73}";

#[tokio::test]
async fn a_redisson_fenced_lock_that_restarts_the_counter_never_sends_relock_tokens_back() {
    let server = server();
    let client = client(&server).await;
    let lock = client.lock("t73");

    let g = lock.lock().await.unwrap();
    let first = g.fencing_token();
    // The hold outlives the counter.
    wait_until(Duration::from_secs(3), "the counter to expire", || async {
        server.cmd(&["EXISTS", COUNTER]).unwrap().as_int() == Some(0)
    })
    .await
    .unwrap();
    assert!(!g.is_lost());
    g.unlock().await.unwrap();

    // Redisson takes it next: its counter starts at 1, with no TTL.
    let java = server
        .cmd(&[
            "EVAL",
            REDISSON_FENCED_LOCK,
            "2",
            "t73",
            COUNTER,
            "30000",
            "java-uuid:1",
        ])
        .unwrap()
        .as_int()
        .unwrap();
    assert_eq!(java, 1);
    assert_eq!(server.cmd(&["PTTL", COUNTER]).unwrap().as_int(), Some(-1));
    server
        .cmd(&[
            "EVAL",
            REDISSON_UNLOCK,
            "2",
            "t73",
            "redisson_lock__channel:{t73}",
            "0",
            "30000",
            "java-uuid:1",
        ])
        .unwrap();

    // relock again: above its own first token and Redisson's, and the counter expires again.
    let g = lock.lock().await.unwrap();
    let second = g.fencing_token();
    assert!(
        second > first,
        "relock's token went back: {first} -> {second}"
    );
    // Redisson's counter keeps living for ever, as Redisson made it.
    assert_eq!(server.cmd(&["PTTL", COUNTER]).unwrap().as_int(), Some(-1));
    g.unlock().await.unwrap();
    client.shutdown().await;
    // Long after relock's release, Redisson counts on from relock's token, never back to 2.
    // (Past relock's 1 s grace: the counter is still there.)
    let expired = wait_until(
        Duration::from_millis(1500),
        "the counter to expire",
        || async { server.cmd(&["EXISTS", COUNTER]).unwrap().as_int() == Some(0) },
    )
    .await;
    assert!(expired.is_err(), "relock gave Redisson's counter an expiry");
    let next = server.cmd(&["INCR", COUNTER]).unwrap().as_int().unwrap() as u64;
    assert_eq!(next, second + 1);
    // The only key left is Redisson's own counter.
    assert_eq!(server.keys().unwrap(), vec![COUNTER.to_string()]);
    server.cmd(&["DEL", COUNTER]).unwrap();
    assert_nothing_left(&server).await;
}

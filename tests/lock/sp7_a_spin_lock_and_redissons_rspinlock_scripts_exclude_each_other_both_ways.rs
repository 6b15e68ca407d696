//! A Java service using Redisson's `RSpinLock` and relock's spin lock share one lock. The peer
//! here runs Redisson's own scripts, copied from `RedissonSpinLock.java` (its lock script, the
//! same as `RLock`'s, and its unlock, which publishes nothing), under a Java owner field
//! `<uuid>:<thread id>`:
//! - Java holds (re-entered twice): relock's spin, plain and fair locks are refused; a relock
//!   spin waiter takes the lock at its next poll after Java's last unlock, with no message.
//! - relock's spin lock holds: Java's lock script gets the remaining lease, Java's unlock of
//!   its own field touches nothing; once relock releases, Java's next attempt takes the lock.

use std::time::{Duration, Instant};

use relock_tests::*;

/// `RedissonSpinLock.tryLockInnerAsync`: KEYS[1] the lock, ARGV[1] the lease in ms, ARGV[2]
/// the owner field. nil: acquired (or re-entered); else the holder's PTTL.
const JAVA_LOCK: &str = "if (redis.call('exists', KEYS[1]) == 0) then \
    redis.call('hincrby', KEYS[1], ARGV[2], 1); \
    redis.call('pexpire', KEYS[1], ARGV[1]); \
    return nil; \
    end; \
    if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then \
    redis.call('hincrby', KEYS[1], ARGV[2], 1); \
    redis.call('pexpire', KEYS[1], ARGV[1]); \
    return nil; \
    end; \
    return redis.call('pttl', KEYS[1]);";

/// `RedissonSpinLock.unlockInnerAsync`: KEYS[1] the lock, KEYS[2] the unlock latch of the
/// request, ARGV[1] the lease, ARGV[2] the owner field, ARGV[3] the latch's time to live.
/// nil: not the holder; 0: a count left; 1: released. No PUBLISH.
const JAVA_UNLOCK: &str = "local val = redis.call('get', KEYS[2]); \
    if val ~= false then \
    return tonumber(val);\
    end; \
    if (redis.call('hexists', KEYS[1], ARGV[2]) == 0) then \
    return nil;\
    end; \
    local counter = redis.call('hincrby', KEYS[1], ARGV[2], -1); \
    if (counter > 0) then \
    redis.call('pexpire', KEYS[1], ARGV[1]); \
    redis.call('set', KEYS[2], 0, 'px', ARGV[3]); \
    return 0; \
    else \
    redis.call('del', KEYS[1]); \
    redis.call('set', KEYS[2], 1, 'px', ARGV[3]); \
    return 1; \
    end; ";

const JAVA_OWNER: &str = "8d7c4a1e-5b2f-4c3d-9e8a-7f6b5c4d3e2a:57";

/// Java's lock attempt: `None` when acquired, else the holder's PTTL.
fn java_lock(server: &RedisServer) -> Option<i64> {
    server
        .cmd(&["EVAL", JAVA_LOCK, "1", "sp7", "30000", JAVA_OWNER])
        .unwrap()
        .as_int()
}

/// Java's unlock, as request `request` (its latch lives 50 ms).
fn java_unlock(server: &RedisServer, request: &str) -> Option<i64> {
    let latch = format!("redisson_unlock_latch:{{sp7}}:{request}");
    server
        .cmd(&[
            "EVAL",
            JAVA_UNLOCK,
            "2",
            "sp7",
            &latch,
            "30000",
            JAVA_OWNER,
            "50",
        ])
        .unwrap()
        .as_int()
}

#[tokio::test]
async fn a_spin_lock_and_redissons_rspinlock_scripts_exclude_each_other_both_ways() {
    let server = server();
    let c = client(&server).await;
    let spin = c.spin_lock("sp7");

    // Java holds, twice over.
    assert_eq!(java_lock(&server), None);
    assert_eq!(java_lock(&server), None);
    assert!(spin.try_lock().await.unwrap().is_none());
    assert!(c.lock("sp7").try_lock().await.unwrap().is_none());
    assert!(c.fair_lock("sp7").try_lock().await.unwrap().is_none());
    let status = spin.status().await.unwrap();
    assert_eq!(status.holders.len(), 1);
    assert_eq!(status.holders[0].field, JAVA_OWNER);

    // A relock spin waiter, polling.
    let waiter = {
        let spin = spin.clone();
        tokio::spawn(async move { spin.lock().await.map(|g| (Instant::now(), g)) })
    };
    server.reset_stats().unwrap();
    wait_until(Duration::from_secs(2), "the waiter to poll", || async {
        server.command_calls("evalsha").unwrap() >= 3
    })
    .await
    .unwrap();
    assert!(!waiter.is_finished());
    assert_eq!(java_unlock(&server, "r1"), Some(0));
    assert!(spin.is_locked().await.unwrap());
    let released = Instant::now();
    assert_eq!(java_unlock(&server, "r2"), Some(1));
    let (got, guard) = bounded(Duration::from_secs(3), "the spin waiter", waiter)
        .await
        .unwrap()
        .unwrap();
    let after = got - released;
    println!("a spin waiter took the lock {after:?} after Java's unlock");
    // At its next poll: at most the cap (128 ms) plus jitter (4 ms) and a round trip.
    assert!(after < Duration::from_millis(400), "{after:?}");
    assert_eq!(server.command_calls("publish").unwrap(), 0);

    // relock's spin lock holds: Java is refused with the lease left, and cannot release it.
    let pttl = java_lock(&server).expect("refused");
    assert!(pttl > 25_000 && pttl <= 30_000, "{pttl}");
    assert_eq!(java_unlock(&server, "r3"), None);
    assert!(spin.is_locked().await.unwrap());
    // Re-entered in its scope: still one relock field; Java still refused.
    let again = guard.scope(spin.lock()).await.unwrap();
    assert!(java_lock(&server).is_some());
    again.unlock().await.unwrap();
    assert!(java_lock(&server).is_some());
    guard.unlock().await.unwrap();
    assert_eq!(
        java_lock(&server),
        None,
        "Java takes it once relock released"
    );
    assert!(spin.try_lock().await.unwrap().is_none());
    assert_eq!(java_unlock(&server, "r4"), Some(1));
    assert_eq!(server.command_calls("publish").unwrap(), 0);

    c.shutdown().await;
    assert_nothing_left(&server).await;
}

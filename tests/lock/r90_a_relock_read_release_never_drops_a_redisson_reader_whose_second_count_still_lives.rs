//! Review (double grant, Redisson compatibility): Redisson's read lock gives every re-entry
//! its own timeout key (`…:rwlock_timeout:2`, with that re-entry's lease), so with fixed
//! leases `:2` outlives `:1`. Redisson's own read unlock keeps the hash alive while any of a
//! field's timeout keys lives. relock's `settle_readers` looks at `:1` only: a relock read
//! release made between `:1`'s and `:2`'s expiry drops Redisson's live reader, deletes the hash
//! and lets a relock writer in while the Redisson reader still holds its read lock.

use std::time::Duration;

use relock_tests::*;

/// `RedissonReadLock.tryLockInnerAsync`'s script (Redisson 3.x), verbatim.
const REDISSON_READ_LOCK: &str = "local mode = redis.call('hget', KEYS[1], 'mode'); \
if (mode == false) then \
  redis.call('hset', KEYS[1], 'mode', 'read'); \
  redis.call('hset', KEYS[1], ARGV[2], 1); \
  redis.call('set', KEYS[2] .. ':1', 1); \
  redis.call('pexpire', KEYS[2] .. ':1', ARGV[1]); \
  redis.call('pexpire', KEYS[1], ARGV[1]); \
  return nil; \
end; \
if (mode == 'read') or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then \
  local ind = redis.call('hincrby', KEYS[1], ARGV[2], 1); \
  local key = KEYS[2] .. ':' .. ind;\
  redis.call('set', key, 1); \
  redis.call('pexpire', key, ARGV[1]); \
  local remainTime = redis.call('pttl', KEYS[1]); \
  redis.call('pexpire', KEYS[1], math.max(remainTime, ARGV[1])); \
  return nil; \
end;\
return redis.call('pttl', KEYS[1]);";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relock_read_release_never_drops_a_redisson_reader_whose_second_count_still_lives() {
    let server = server();
    let (a, b) = (client(&server).await, client(&server).await);
    let name = "r90";
    let field = "0b5f3c3e-1111-2222-3333-444455556666:57";
    let prefix = format!("{{{name}}}:{field}:rwlock_timeout");
    let redisson_lock = |lease: &str| {
        let v = server
            .cmd(&[
                "EVAL",
                REDISSON_READ_LOCK,
                "2",
                name,
                &prefix,
                lease,
                field,
                &format!("{field}:write"),
            ])
            .unwrap();
        assert_eq!(v.as_int(), None, "Redisson's read lock was granted");
    };
    // Redisson: readLock.lock(2 s), then 1 s later the same thread re-enters with lock(2 s).
    redisson_lock("2000");
    tokio::time::sleep(Duration::from_millis(1000)).await;
    redisson_lock("2000");
    // A relock reader shares the lock.
    let reader = a.read_write_lock(name).read_lock().lock().await.unwrap();
    // Past `:1`'s expiry, well before `:2`'s: Redisson's thread still holds its read lock.
    tokio::time::sleep(Duration::from_millis(1300)).await;
    let second = format!("{prefix}:2");
    assert!(
        server.cmd(&["PTTL", &second]).unwrap().as_int().unwrap() > 300,
        "Redisson's second count still lives"
    );
    reader.unlock().await.unwrap();
    let redisson_count = server.cmd(&["HGET", name, field]).unwrap().as_string();
    let writer = b
        .read_write_lock(name)
        .write_lock()
        .try_lock()
        .await
        .unwrap();
    let granted = writer.is_some();
    if let Some(w) = writer {
        w.unlock().await.unwrap();
    }
    assert!(
        !granted,
        "a relock writer was granted while a Redisson reader holds the read lock (its field \
         after the relock read release: {redisson_count:?}; its `:2` key still lives)"
    );
    assert_eq!(redisson_count.as_deref(), Some("2"));
    a.shutdown().await;
    b.shutdown().await;
}

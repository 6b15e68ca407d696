//! A Java service using Redisson and relock share one permit-expirable semaphore. Permits
//! written by hand as Redisson's scripts write them (16-byte ids, client-clock expiry, the
//! non-expiring score) are counted by relock, released by id, and reclaimed when expired;
//! relock's permit released the way Redisson's `release(id)` does it is reported lost to its
//! guard.

use std::time::Duration;

use relock::Error;
use relock_tests::*;

/// Hex to bytes, in Lua, as Redisson's Java client decodes an id before sending it.
const BYTES: &str = "local function bytes(h) return (string.gsub(h, '%x%x', function(p) return string.char(tonumber(p, 16)) end)) end ";

/// Redisson's acquire, reduced to its writes: one permit off the count, the id with its expiry.
fn java_acquire(server: &RedisServer, id: &str, expires_ms: i64) {
    let lua = format!("{BYTES} redis.call('decrby', KEYS[1], 1) return redis.call('zadd', KEYS[2], ARGV[1], bytes(ARGV[2]))");
    let ms = expires_ms.to_string();
    let r = server
        .cmd(&["EVAL", &lua, "2", "p70", "{p70}:timeout", &ms, id])
        .unwrap();
    assert_eq!(r.as_int(), Some(1));
}

/// Redisson's `tryRelease(id)`: remove the id; if it was there, one permit back, published.
fn java_release(server: &RedisServer, id: &str) -> i64 {
    let lua = format!("{BYTES} if redis.call('zrem', KEYS[2], bytes(ARGV[1])) == 0 then return 0 end local v = redis.call('incrby', KEYS[1], 1) redis.call('publish', KEYS[3], v) return 1");
    server
        .cmd(&[
            "EVAL",
            &lua,
            "3",
            "p70",
            "{p70}:timeout",
            "redisson_sc:{p70}",
            id,
        ])
        .unwrap()
        .as_int()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permits_written_as_redisson_writes_them_are_shared_with_relock() {
    let server = server();
    let a = client_with_lease(&server, Duration::from_millis(600)).await;
    let sem = a.permit_expirable_semaphore("p70");
    assert!(sem.try_set_permits(3).await.unwrap());

    // A Java permit with a lease of a minute: counted, and released by relock by its id.
    let java = "00112233445566778899aabbccddeeff";
    java_acquire(&server, java, server_ms(&server) + 60_000);
    assert_eq!(
        (
            sem.available().await.unwrap(),
            sem.acquired().await.unwrap()
        ),
        (2, 1)
    );
    assert!(sem.release_id(java).await.unwrap());
    assert!(
        !sem.release_id(java).await.unwrap(),
        "an id is given back once"
    );
    assert_eq!(
        (
            sem.available().await.unwrap(),
            sem.acquired().await.unwrap()
        ),
        (3, 0)
    );

    // A Java permit that expired a second ago (on the server's clock) is reclaimed by relock.
    java_acquire(&server, java, server_ms(&server) - 1_000);
    assert_eq!(
        (
            sem.available().await.unwrap(),
            sem.acquired().await.unwrap()
        ),
        (3, 0)
    );
    assert_eq!(
        server.cmd(&["ZCARD", "{p70}:timeout"]).unwrap().as_int(),
        Some(0)
    );

    // relock's permit released by a Java service: its guard learns at the next renewal.
    let guard = sem.acquire(None).await.unwrap();
    assert_eq!(java_release(&server, guard.id()), 1);
    bounded(Duration::from_secs(2), "lost()", guard.lost()).await;
    assert!(matches!(
        guard.release().await,
        Err(Error::PermitLost { .. })
    ));
    assert_eq!(
        sem.available().await.unwrap(),
        3,
        "the permit was given back once"
    );

    // A Java permit without a lease (Redisson's never-expiring score) and two of relock's fill
    // the semaphore: a waiter gives up at its deadline, not at a made-up expiry.
    java_acquire(&server, java, 922_337_203_685_477);
    let held = [
        sem.acquire(None).await.unwrap(),
        sem.acquire(None).await.unwrap(),
    ];
    let started = std::time::Instant::now();
    assert!(sem
        .try_acquire_for(Duration::from_millis(400), None)
        .await
        .unwrap()
        .is_none());
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(390) && took < Duration::from_millis(900),
        "{took:?}"
    );
    assert_eq!(sem.acquired().await.unwrap(), 3);
    // The Java id releases the last permit; a relock waiter is woken by its message.
    let waiter = {
        let sem = sem.clone();
        tokio::spawn(async move { sem.acquire(None).await })
    };
    wait_until(Duration::from_secs(3), "the waiter to park", || async {
        a.parked_waiters() == 1
    })
    .await
    .unwrap();
    assert_eq!(java_release(&server, java), 1);
    let got = bounded(Duration::from_secs(2), "the woken waiter", waiter)
        .await
        .unwrap()
        .unwrap();
    for g in held.into_iter().chain([got]) {
        g.release().await.unwrap();
    }
    assert_eq!(
        (
            sem.available().await.unwrap(),
            sem.acquired().await.unwrap()
        ),
        (3, 0)
    );
    crate::no_subscriptions(&[&a]).await;
}

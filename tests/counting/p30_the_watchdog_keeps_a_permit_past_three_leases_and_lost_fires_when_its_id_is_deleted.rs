//! A permit taken without a fixed lease is renewed while its guard lives: with a watchdog lease
//! of 500 ms it is still held (on the server, with a lease ending in the future) after 3 leases.
//! When its id is deleted by hand (ZREM, as a Redisson `release(id)` elsewhere would), `lost()`
//! fires within one renewal period, and `release()` reports `PermitLost`. The id is stored as
//! Redisson stores it: the 16 bytes its 32 hex digits spell.

use std::time::{Duration, Instant};

use relock::Error;
use relock_tests::*;

/// `EVAL` on `server`: a small Lua snippet over `{p30}:timeout`, its integer reply.
fn eval_int(server: &RedisServer, lua: &str, args: &[&str]) -> Option<i64> {
    let mut cmd = vec!["EVAL", lua, "1", "{p30}:timeout"];
    cmd.extend_from_slice(args);
    server.cmd(&cmd).unwrap().as_int()
}

/// Decodes hex into bytes in Lua (as Redisson's client does in Java before sending an id).
const BYTES: &str =
    "local b = string.gsub(ARGV[1], '%x%x', function(p) return string.char(tonumber(p, 16)) end) ";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watchdog_keeps_a_permit_past_three_leases_and_lost_fires_when_its_id_is_deleted() {
    let server = server();
    let lease = Duration::from_millis(500);
    let a = client_with_lease(&server, lease).await;
    let sem = a.permit_expirable_semaphore("p30");
    assert!(sem.try_set_permits(2).await.unwrap());
    let guard = sem.acquire(None).await.unwrap();
    assert!(guard.is_renewed());
    let other = sem.acquire(Some(Duration::from_secs(20))).await.unwrap();
    assert!(!other.is_renewed());
    let id = guard.id().to_string();
    assert_eq!(
        eval_int(
            &server,
            "return string.len(redis.call('zrange', KEYS[1], 0, 0)[1])",
            &[]
        ),
        Some(16),
        "ids are stored as 16 bytes"
    );

    let start = Instant::now();
    while start.elapsed() < lease * 3 + Duration::from_millis(200) {
        assert!(!guard.is_lost(), "lost after {:?}", start.elapsed());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(guard.valid_until() > Instant::now());
    let ms_left = eval_int(
        &server,
        &format!("{BYTES} local t = redis.call('time') return redis.call('zscore', KEYS[1], b) - (t[1] * 1000 + math.floor(t[2] / 1000))"),
        &[&id],
    )
    .unwrap();
    assert!(
        ms_left > 0 && ms_left <= 500,
        "the renewed lease ends in {ms_left} ms"
    );
    assert_eq!(sem.acquired().await.unwrap(), 2);
    assert_eq!(sem.available().await.unwrap(), 0);

    // Deleted by hand: lost() within one renewal period (lease / 3), plus a round trip.
    assert_eq!(
        eval_int(
            &server,
            &format!("{BYTES} return redis.call('zrem', KEYS[1], b)"),
            &[&id]
        ),
        Some(1)
    );
    let deleted = Instant::now();
    bounded(Duration::from_secs(2), "lost()", guard.lost()).await;
    let took = deleted.elapsed();
    assert!(
        took < lease / 3 + Duration::from_millis(150),
        "lost() fired {took:?} after the ZREM"
    );
    assert!(guard.is_lost());
    match guard.release().await {
        Err(Error::PermitLost {
            semaphore,
            id: lost,
        }) => {
            assert_eq!(semaphore, "p30");
            assert_eq!(lost, id);
        }
        other => panic!("expected PermitLost, got {other:?}"),
    }
    // The deleted permit's slot is gone for good (nobody gave it back); the other one is fine.
    other.release().await.unwrap();
    assert_eq!(sem.available().await.unwrap(), 1);
    assert_eq!(sem.acquired().await.unwrap(), 0);
    assert_eq!(a.held_permits(), 0);
    a.shutdown().await;
}

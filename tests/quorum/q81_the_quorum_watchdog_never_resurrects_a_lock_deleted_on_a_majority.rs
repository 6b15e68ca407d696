//! The lock key of a watchdog hold is deleted directly on 3 of 5 nodes: the next renewal finds
//! a majority saying "not here", marks the hold lost at once (well before its validity ends),
//! and nothing puts the key back on those nodes, so another client can acquire. Deleted on 2 of
//! 5 only, the hold is renewed by the majority, stays held, and is put back on the two.

use std::time::{Duration, Instant};

use relock_tests::*;

const LEASE: Duration = Duration::from_millis(900);
const PERIOD: Duration = Duration::from_millis(300);

fn has_field(s: &RedisServer, key: &str, field: &str) -> bool {
    s.cmd(&["HEXISTS", key, field]).unwrap().as_int() == Some(1)
}

fn field_on(s: &RedisServer, key: &str) -> String {
    match s.cmd(&["HKEYS", key]).unwrap() {
        relock_testkit::Value::Array(Some(items)) if items.len() == 1 => {
            items[0].as_string().unwrap()
        }
        other => panic!("HKEYS {key}: {other:?}"),
    }
}

/// Waits (bounded) until the watchdog has just renewed `g`, so that the next renewal is a
/// whole period away.
async fn after_a_renewal(g: &relock::LockGuard) {
    let before = g.valid_until();
    wait_until(Duration::from_secs(2), "a renewal", || async {
        g.valid_until() != before
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn deleted_on_a_majority_the_hold_is_lost_at_once_and_never_put_back() {
    let m = masters(5);
    let a = quorum_client(&m, LEASE, Duration::ZERO).await;
    let b = quorum_client(&m, LEASE, Duration::ZERO).await;
    let name = "q81:majority";
    let g = bounded(Duration::from_secs(2), "lock", a.lock(name).lock())
        .await
        .unwrap();
    let field = field_on(&m[0], name);
    after_a_renewal(&g).await;
    for i in 0..3 {
        assert_eq!(m[i].cmd(&["DEL", name]).unwrap().as_int(), Some(1));
    }
    let deleted = Instant::now();
    bounded(
        Duration::from_secs(3),
        "lost() after DEL on 3 of 5",
        g.lost(),
    )
    .await;
    let lost_at = Instant::now();
    let took = lost_at - deleted;
    // Found gone by the next renewal (one period), not at the end of the validity.
    assert!(
        took < Duration::from_millis(600),
        "lost() resolved {took:?} after the DEL"
    );
    assert!(
        lost_at + Duration::from_millis(200) < g.valid_until(),
        "lost() resolved only {:?} before valid_until: by the lease, not by the renewal",
        g.valid_until().saturating_duration_since(lost_at)
    );
    assert!(g.is_lost());

    // Two more renewal periods and more: nothing is re-created on the three nodes.
    let watch = Instant::now();
    while watch.elapsed() < PERIOD * 2 + Duration::from_millis(200) {
        for i in 0..3 {
            assert!(
                m[i].cmd(&["EXISTS", name]).unwrap().as_int() == Some(0),
                "the lock was re-created on node {i} {:?} after it was found lost",
                lost_at.elapsed()
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!has_field(&m[0], name, &field));
    let other = b
        .lock(name)
        .try_lock()
        .await
        .unwrap()
        .expect("another client acquires on the 3 free nodes");
    assert!(!other.is_lost());
    assert!(matches!(
        g.unlock().await,
        Err(relock::Error::LockLost { .. })
    ));
    other.unlock().await.unwrap();
    a.shutdown().await;
    b.shutdown().await;
    let all: Vec<&RedisServer> = m.servers().iter().collect();
    assert_nothing_left_on(&all).await;
}

#[tokio::test]
async fn deleted_on_a_minority_the_hold_is_kept_and_put_back() {
    let m = masters(5);
    let a = quorum_client(&m, LEASE, Duration::ZERO).await;
    let b = quorum_client(&m, LEASE, Duration::ZERO).await;
    let name = "q81:minority";
    let g = bounded(Duration::from_secs(2), "lock", a.lock(name).lock())
        .await
        .unwrap();
    let field = field_on(&m[0], name);
    after_a_renewal(&g).await;
    for i in [3, 4] {
        assert_eq!(m[i].cmd(&["DEL", name]).unwrap().as_int(), Some(1));
    }
    let took = wait_until(
        PERIOD * 2 + Duration::from_millis(300),
        "the hold put back on the two nodes",
        || async { [3, 4].iter().all(|&i| has_field(&m[i], name, &field)) },
    )
    .await
    .unwrap();
    assert!(!g.is_lost(), "put back after {took:?}");

    // Three more periods: still held everywhere, with the same field.
    let since = Instant::now();
    wait_until(Duration::from_secs(3), "three more periods", || async {
        since.elapsed() > PERIOD * 3
    })
    .await
    .unwrap();
    assert!(!g.is_lost());
    for (i, s) in m.servers().iter().enumerate() {
        assert!(has_field(s, name, &field), "node {i} lost the hold");
    }
    assert!(b.lock(name).try_lock().await.unwrap().is_none());
    g.unlock().await.unwrap();
    a.shutdown().await;
    b.shutdown().await;
    let all: Vec<&RedisServer> = m.servers().iter().collect();
    assert_nothing_left_on(&all).await;
}

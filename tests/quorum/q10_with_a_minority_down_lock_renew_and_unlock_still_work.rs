//! With 2 of 5 masters killed, a new client connects, and a watchdog lock is taken, renewed past three leases, re-entered
//! and released; the other client waits and is woken; nothing is left on the live nodes.

use std::time::{Duration, Instant};

use relock_tests::*;

#[tokio::test]
async fn with_a_minority_down_lock_renew_and_unlock_still_work() {
    let m = masters(5);
    let lease = Duration::from_millis(600);
    let a = quorum_client(&m, lease, Duration::ZERO).await;
    let b = quorum_client(&m, lease, Duration::ZERO).await;
    m[3].kill().unwrap();
    m[4].kill().unwrap();

    // A client can also connect while the minority is down; it reaches them when they return.
    let late = quorum_client(&m, lease, Duration::ZERO).await;
    late.lock("q10:late")
        .try_lock()
        .await
        .unwrap()
        .expect("3 of 5 grant it")
        .unlock()
        .await
        .unwrap();
    late.shutdown().await;

    let lock = a.lock("q10");
    let g = bounded(Duration::from_secs(2), "lock", lock.lock())
        .await
        .unwrap();
    let again = g.scope(lock.lock()).await.unwrap();
    assert_eq!(lock.hold_count().await.unwrap(), 2);
    assert_eq!(again.fencing_token(), g.fencing_token());
    drop(again);
    let since = Instant::now();
    wait_until(Duration::from_secs(4), "three leases", || async {
        since.elapsed() > lease * 3
    })
    .await
    .unwrap();
    assert!(!g.is_lost(), "renewed on the 3 live nodes");
    assert!(lock.is_locked().await.unwrap());
    assert!(b.lock("q10").try_lock().await.unwrap().is_none());

    // A waiter on the other client is woken by the release, long before the lease.
    let waiter = {
        let l = b.lock("q10");
        tokio::spawn(async move { l.lock().await.map(|g| (Instant::now(), g)) })
    };
    wait_until(
        Duration::from_secs(2),
        "the waiter to subscribe",
        || async { m[0].pubsub_numsub("redisson_lock__channel:{q10}").unwrap() > 0 },
    )
    .await
    .unwrap();
    let released = Instant::now();
    let t1 = g.fencing_token();
    g.unlock().await.unwrap();
    let (at, g2) = bounded(Duration::from_secs(2), "woken waiter", waiter)
        .await
        .unwrap()
        .unwrap();
    assert!(
        at - released < Duration::from_millis(300),
        "{:?}",
        at - released
    );
    assert!(g2.fencing_token() > t1);
    g2.unlock().await.unwrap();
    a.shutdown().await;
    b.shutdown().await;
    assert_nothing_left_on(&[&m[0], &m[1], &m[2]]).await;
}

//! The fair lock behaves as the plain lock does: it re-enters three deep in a hold's scope and
//! excludes others, hands out strictly increasing fencing tokens, is kept by the watchdog past
//! three leases, and `force_unlock` wakes the first waiter (and only it) and tells the holder.

use std::time::{Duration, Instant};

use relock_tests::*;

#[tokio::test]
async fn reentrancy_fencing_watchdog_and_force_unlock_work_as_for_the_plain_lock() {
    let server = server();
    let lease = Duration::from_millis(300);
    let (a, b) = (
        client_with_lease(&server, lease).await,
        client_with_lease(&server, lease).await,
    );
    let lock = a.fair_lock("f60");
    assert!(lock.is_fair());

    // Re-entry inside the hold's scope, one token per hold.
    let g1 = lock.lock().await.unwrap();
    let g2 = g1.scope(lock.lock()).await.unwrap();
    let g3 = g1
        .scope(lock.try_lock())
        .await
        .unwrap()
        .expect("re-entry never waits");
    assert_eq!(lock.hold_count().await.unwrap(), 3);
    assert_eq!(g1.fencing_token(), g3.fencing_token());
    let other = tokio::spawn({
        let l = a.fair_lock("f60");
        async move { l.try_lock().await.map(|g| g.is_some()) }
    });
    assert!(!other.await.unwrap().unwrap(), "another task is excluded");
    assert!(b.fair_lock("f60").try_lock().await.unwrap().is_none());

    // The watchdog keeps it past three leases.
    let since = Instant::now();
    wait_until(Duration::from_secs(3), "three leases to pass", || async {
        since.elapsed() > lease * 3
    })
    .await
    .unwrap();
    assert!(!g1.is_lost() && lock.is_locked().await.unwrap());
    assert_eq!(lock.hold_count().await.unwrap(), 3);
    drop(g3);
    g2.unlock().await.unwrap();
    let first_token = g1.fencing_token();

    // force_unlock wakes the first waiter within far less than the lease, not the second.
    let w1_lock = b.fair_lock("f60");
    let w1 = spawn_in_line(&server, "f60", 1, async move {
        let g = w1_lock.lock().await.unwrap();
        (Instant::now(), g)
    })
    .await;
    let w2_lock = b.fair_lock("f60");
    let w2 = spawn_in_line(&server, "f60", 2, async move {
        let g = w2_lock.lock().await.unwrap();
        g.fencing_token()
    })
    .await;
    let forced = Instant::now();
    assert!(b.fair_lock("f60").force_unlock().await.unwrap());
    let (at, g) = bounded(Duration::from_secs(2), "first waiter", w1)
        .await
        .unwrap();
    assert!(
        at - forced < Duration::from_millis(250),
        "{:?}",
        at - forced
    );
    bounded(Duration::from_secs(1), "old holder told", g1.lost()).await;
    assert!(matches!(
        g1.unlock().await,
        Err(relock::Error::LockLost { .. })
    ));
    assert_eq!(fair_line(&server, "f60").len(), 1, "the second still waits");
    assert!(g.fencing_token() > first_token);
    let t1 = g.fencing_token();
    g.unlock().await.unwrap();
    let t2 = bounded(Duration::from_secs(2), "second waiter", w2)
        .await
        .unwrap();
    assert!(
        t2 > t1,
        "tokens strictly increase: {first_token} < {t1} < {t2}"
    );
    assert_nothing_left(&server).await;
}

//! A waiter wakes on release long before the holder's 30 s TTL, and `force_unlock` wakes
//! waiters too (and tells the old holder it lost the lock).

use std::time::{Duration, Instant};

use relock_tests::*;

#[tokio::test]
async fn waiters_wake_on_release_and_force_unlock_not_on_ttl() {
    let server = server();
    let (a, b) = (client(&server).await, client(&server).await);

    let held = a.lock("t31").lock().await.unwrap();
    let waiter = spawn_parked_waiter(&server, &b, b.lock("t31")).await;
    let released = Instant::now();
    held.unlock().await.unwrap();
    let (got_at, g) = bounded(Duration::from_secs(5), "woken waiter", waiter)
        .await
        .unwrap()
        .unwrap();
    let wake = got_at - released;
    assert!(
        wake < Duration::from_millis(500),
        "woken after {wake:?}; TTL was 30 s"
    );

    // force_unlock from a third party wakes the next waiter.
    let waiter = spawn_parked_waiter(&server, &a, a.lock("t31")).await;
    let forced = Instant::now();
    assert!(b.lock("t31").force_unlock().await.unwrap());
    let (got_at, g2) = bounded(Duration::from_secs(5), "woken by force_unlock", waiter)
        .await
        .unwrap()
        .unwrap();
    assert!(
        got_at - forced < Duration::from_millis(500),
        "woken after {:?}",
        got_at - forced
    );
    assert!(g2.fencing_token() > g.fencing_token());
    bounded(Duration::from_secs(1), "old holder told", g.lost()).await;
    assert!(matches!(
        g.unlock().await,
        Err(relock::Error::LockLost { .. })
    ));
    g2.unlock().await.unwrap();
    assert!(
        !b.lock("t31").force_unlock().await.unwrap(),
        "nothing left to force"
    );
    assert_nothing_left(&server).await;
}

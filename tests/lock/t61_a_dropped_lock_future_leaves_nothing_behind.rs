//! Dropping pending `lock()` futures, at many points in their life, leaves no subscription,
//! no key and no hold behind; the lock still works afterwards.

use std::time::Duration;

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_lock_future_leaves_nothing_behind() {
    let server = server();
    // The holder's own subscription (its hold's watch) would count as a waiter's below.
    let a = client_not_watching_holds(&server, Duration::from_secs(30)).await;
    let b = client(&server).await;
    let held = a.lock("t61").lock().await.unwrap();
    // Waiters cancelled at different points: before, during and after subscribing.
    for micros in (0..3_000u64).step_by(100).chain([5_000, 20_000]) {
        let lock = b.lock("t61");
        let r = tokio::time::timeout(Duration::from_micros(micros), lock.lock()).await;
        assert!(r.is_err(), "got a held lock");
    }
    assert_no_waiters(&server, &b, "t61").await;
    held.unlock().await.unwrap();

    // Acquisitions cancelled while the lock is free: whatever was granted is released.
    for micros in (0..2_000u64).step_by(50) {
        let lock = b.lock("t61:free");
        let _ = tokio::time::timeout(Duration::from_micros(micros), lock.lock()).await;
    }
    wait_until(
        Duration::from_secs(2),
        "cancelled acquisitions released",
        || async { b.held_locks() == 0 && !server.keys().unwrap().iter().any(|k| k == "t61:free") },
    )
    .await
    .unwrap();
    let g = bounded(
        Duration::from_secs(2),
        "lock after cancellations",
        b.lock("t61:free").lock(),
    )
    .await
    .unwrap();
    g.unlock().await.unwrap();
    assert_nothing_left(&server).await;
}

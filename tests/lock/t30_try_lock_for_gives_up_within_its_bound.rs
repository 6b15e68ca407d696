//! `try_lock_for` returns `None` within its bound while another task holds the lock, and
//! `try_lock` returns `None` at once; neither leaves a subscription behind.

use std::time::{Duration, Instant};

use relock_tests::*;

#[tokio::test]
async fn try_lock_for_gives_up_within_its_bound() {
    let server = server();
    // The holder's own subscription (its hold's watch) would count as a waiter's below.
    let a = client_not_watching_holds(&server, Duration::from_secs(30)).await;
    let b = client(&server).await;
    let held = a.lock("t30").lock().await.unwrap();
    let start = Instant::now();
    assert!(b.lock("t30").try_lock().await.unwrap().is_none());
    assert!(start.elapsed() < Duration::from_millis(200));
    for bound in [Duration::from_millis(300), Duration::from_millis(800)] {
        let start = Instant::now();
        let r = bounded(
            Duration::from_secs(3),
            "try_lock_for",
            b.lock("t30").try_lock_for(bound),
        )
        .await
        .unwrap();
        let took = start.elapsed();
        assert!(r.is_none());
        assert!(took >= bound, "gave up early: {took:?} < {bound:?}");
        assert!(
            took < bound + Duration::from_millis(250),
            "gave up late: {took:?} for {bound:?}"
        );
    }
    assert_no_waiters(&server, &b, "t30").await;
    held.unlock().await.unwrap();
    assert_nothing_left(&server).await;
}

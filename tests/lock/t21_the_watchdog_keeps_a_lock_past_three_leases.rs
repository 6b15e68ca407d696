//! With a 1 s watchdog lease the lock outlives 3.5 leases, and the key's TTL never drops
//! below lease − period − slack.

use std::time::Duration;

use relock_tests::*;

#[tokio::test]
async fn the_watchdog_keeps_a_lock_past_three_leases() {
    let server = server();
    let c = client_with_lease(&server, Duration::from_secs(1)).await;
    let other = client_with_lease(&server, Duration::from_secs(1)).await;
    let guard = c.lock("t21").lock().await.unwrap();
    assert!(guard.is_renewed());
    let start = tokio::time::Instant::now();
    let mut min_ttl = Duration::MAX;
    let mut checks = 0;
    while start.elapsed() < Duration::from_millis(3500) {
        let ttl = other
            .lock("t21")
            .remaining_lease()
            .await
            .unwrap()
            .expect("still held");
        min_ttl = min_ttl.min(ttl);
        assert!(other.lock("t21").try_lock().await.unwrap().is_none());
        checks += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(checks > 20);
    assert!(!guard.is_lost());
    // Renewed every ~333 ms: the TTL should stay above ~1000 − 333 − scheduling slack.
    assert!(min_ttl >= Duration::from_millis(450), "min TTL {min_ttl:?}");
    guard.unlock().await.unwrap();
    assert_nothing_left(&server).await;
}

//! Redis paused (SIGSTOP) for longer than one renewal period but shorter than the lease: the
//! watchdog retries, the hold is not reported lost, and it is still held afterwards.

use std::time::Duration;

use relock_tests::*;

#[tokio::test]
async fn a_short_redis_pause_does_not_lose_a_renewed_lock() {
    let server = server();
    let c = client_with_lease(&server, Duration::from_millis(2400)).await;
    let g = c.lock("t24").lock().await.unwrap();
    server.pause().unwrap();
    // Two renewal periods (800 ms each) pass without an answer.
    let paused = tokio::time::Instant::now();
    let lost_during_pause = tokio::time::timeout(Duration::from_millis(1300), g.lost())
        .await
        .is_ok();
    server.resume().unwrap();
    assert!(
        !lost_during_pause,
        "reported lost after {:?} of a 2.4 s lease",
        paused.elapsed()
    );
    // After the pause, renewals succeed again: the lease is topped up well past the original.
    wait_until(
        Duration::from_secs(3),
        "a renewal after the pause",
        || async {
            c.lock("t24")
                .remaining_lease()
                .await
                .ok()
                .flatten()
                .is_some_and(|l| l > Duration::from_millis(1800))
        },
    )
    .await
    .unwrap();
    assert!(!g.is_lost());
    g.unlock().await.unwrap();
    assert_nothing_left(&server).await;
}

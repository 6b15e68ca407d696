//! Latch waits dropped at many points (before, while and after subscribing) leave no
//! subscription, locally or on the server, and change nothing; the latch still opens a
//! waiter afterwards.

use std::time::Duration;

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_waits_leave_no_subscription() {
    let server = server();
    let (a, b) = (client(&server).await, client(&server).await);
    let latch = a.count_down_latch("l40");
    assert!(latch.try_set_count(1).await.unwrap());
    let other = b.count_down_latch("l40");
    for micros in (0..3_000u64).step_by(100).chain([5_000, 20_000, 120_000]) {
        let r = tokio::time::timeout(Duration::from_micros(micros), other.wait()).await;
        assert!(r.is_err(), "a closed latch let a waiter through");
    }
    let channel = "redisson_countdownlatch__channel__{l40}";
    wait_until(Duration::from_secs(3), "no subscription left", || async {
        b.subscribed_channels() == 0 && server.pubsub_numsub(channel).unwrap() == 0
    })
    .await
    .unwrap();
    assert_eq!(b.parked_waiters(), 0);
    assert_eq!(crate::get(&server, "l40").as_deref(), Some("1"));

    let waiter = {
        let other = other.clone();
        tokio::spawn(async move { other.wait().await })
    };
    wait_until(Duration::from_secs(3), "the waiter to park", || async {
        b.parked_waiters() == 1
    })
    .await
    .unwrap();
    latch.count_down().await.unwrap();
    bounded(Duration::from_secs(2), "the waiter", waiter)
        .await
        .unwrap()
        .unwrap();
    crate::no_subscriptions(&[&b]).await;
    assert_nothing_left(&server).await;
}

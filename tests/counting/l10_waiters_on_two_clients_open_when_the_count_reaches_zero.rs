//! 10 waiters on each of 2 clients wait for a latch of 3; they stay parked through the first
//! two count-downs and all return promptly after the third (one message wakes them all), the
//! key is gone, and a count-down of the open latch creates nothing.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_on_two_clients_open_when_the_count_reaches_zero() {
    let server = server();
    let clients = [client(&server).await, client(&server).await];
    let latch = clients[0].count_down_latch("l10");
    assert!(latch.try_set_count(3).await.unwrap());
    let opened = Arc::new(AtomicUsize::new(0));
    let mut waiters = Vec::new();
    for c in &clients {
        for _ in 0..10 {
            let (latch, opened) = (c.count_down_latch("l10"), opened.clone());
            waiters.push(tokio::spawn(async move {
                latch.wait().await.unwrap();
                opened.fetch_add(1, Ordering::SeqCst);
                Instant::now()
            }));
        }
    }
    wait_until(
        Duration::from_secs(3),
        "10 parked waiters per client",
        || async { clients.iter().all(|c| c.parked_waiters() == 10) },
    )
    .await
    .unwrap();
    latch.count_down().await.unwrap();
    clients[1]
        .count_down_latch("l10")
        .count_down()
        .await
        .unwrap();
    assert_eq!(latch.count().await.unwrap(), 1);
    assert_eq!(crate::get(&server, "l10").as_deref(), Some("1"));
    assert_eq!(
        opened.load(Ordering::SeqCst),
        0,
        "opened before the count reached 0"
    );

    let last = Instant::now();
    latch.count_down().await.unwrap();
    for w in waiters {
        let at = bounded(Duration::from_secs(3), "every waiter", w)
            .await
            .unwrap();
        assert!(
            at - last < Duration::from_millis(500),
            "opened {:?} after",
            at - last
        );
    }
    assert_eq!(opened.load(Ordering::SeqCst), 20);
    assert_eq!(latch.count().await.unwrap(), 0);
    crate::keys_become(&server, &[]).await;
    // An open latch: waits return at once, a count-down leaves nothing.
    latch.wait().await.unwrap();
    latch.count_down().await.unwrap();
    crate::keys_become(&server, &[]).await;
    crate::no_subscriptions(&[&clients[0], &clients[1]]).await;
    assert_nothing_left(&server).await;
}

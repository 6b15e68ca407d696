//! The waiters' subscriber connection is killed and the lock released while it is down, so the
//! release message is lost: the reconnect wakes every waiter and one takes the lock long before
//! the holder's 30 s TTL would have.

use std::time::{Duration, Instant};

use relock_tests::*;

#[tokio::test]
async fn a_waiter_survives_losing_its_subscription() {
    let server = server();
    // The holder's own subscription (its hold's watch) would count as a waiter's below.
    let a = client_not_watching_holds(&server, Duration::from_secs(30)).await;
    let b = client(&server).await;
    let held = a.lock("t32").lock().await.unwrap();
    let waiter = spawn_parked_waiter(&server, &b, b.lock("t32")).await;
    assert!(
        server.client_kill_type("pubsub").unwrap() >= 1,
        "the waiting client's subscriber was killed"
    );
    let released = Instant::now();
    held.unlock().await.unwrap();
    let (got_at, g) = bounded(
        Duration::from_secs(10),
        "waiter after a lost message",
        waiter,
    )
    .await
    .unwrap()
    .unwrap();
    let wait = got_at - released;
    assert!(
        wait < Duration::from_secs(3),
        "waited {wait:?}; the TTL was 30 s"
    );
    // Released first: its hold's watch listens on the channel while it holds.
    g.unlock().await.unwrap();
    assert_no_waiters(&server, &b, "t32").await;
    assert_nothing_left(&server).await;
}

//! A handoff grants a short first lease (the waiter's heartbeat deadline, 1 s here). A
//! watchdog hold taken that way is renewed to the watchdog lease soon after, off the waiter's
//! path, so it is held for three first leases without being lost, and unlocks normally.

use std::time::{Duration, Instant};

use relock_tests::*;

#[tokio::test]
async fn a_watchdog_hold_handed_over_with_a_short_first_lease_is_renewed_past_it() {
    let server = server();
    let heartbeat = Duration::from_secs(1);
    let (a, b) = (
        fair_client(&server, heartbeat).await,
        fair_client(&server, heartbeat).await,
    );
    let holder = a.fair_lock("f93").lock().await.unwrap();
    let lock = b.fair_lock("f93");
    let waiter = spawn_in_line(&server, "f93", 1, async move { lock.lock().await.unwrap() }).await;
    wait_until(Duration::from_secs(3), "the waiter parked", || async {
        b.parked_waiters() == 1
    })
    .await
    .unwrap();
    holder.unlock().await.unwrap();
    let g = bounded(Duration::from_secs(5), "the waiter", waiter)
        .await
        .unwrap();
    assert!(
        g.remaining() <= heartbeat,
        "first lease: {:?}",
        g.remaining()
    );

    let since = Instant::now();
    wait_until(
        Duration::from_secs(5),
        "three first leases to pass",
        || async { since.elapsed() > heartbeat * 3 },
    )
    .await
    .unwrap();
    assert!(!g.is_lost());
    assert!(
        g.remaining() > Duration::from_secs(20),
        "renewed to the 30 s watchdog lease: {:?}",
        g.remaining()
    );
    let pttl = server.cmd(&["PTTL", "f93"]).unwrap().as_int().unwrap();
    assert!(pttl > 20_000, "{pttl}");
    g.unlock().await.unwrap();
    a.shutdown().await;
    b.shutdown().await;
    assert_nothing_left(&server).await;
}

//! A hold taken with the watchdog (600 ms lease) and re-entered with a fixed 5 s lease keeps
//! the 5 s: the watchdog's renewals never cut it back, and once the watchdog guard is gone the
//! fixed-lease guard still has its lease, locally and on the server.

use std::time::Duration;

use relock_tests::*;

use crate::support::{hgetall, int};

#[tokio::test]
async fn a_renewal_never_shortens_a_longer_fixed_lease_reentry() {
    let server = server();
    let c = client_with_lease(&server, Duration::from_millis(600)).await;
    let lock = c.lock("o60");
    let g1 = lock.lock().await.unwrap();
    assert!(g1.is_renewed());
    let g2 = bounded(
        Duration::from_secs(2),
        "fixed-lease re-entry",
        g1.scope(lock.clone().with_lease(Duration::from_secs(5)).lock()),
    )
    .await
    .unwrap();
    assert_eq!(g2.fencing_token(), g1.fencing_token());
    assert!(!g2.is_renewed());
    let pttl = int(&server, &["PTTL", "o60"]);
    assert!(pttl > 4_500, "PTTL after the 5 s re-entry: {pttl} ms");

    // Four renewal periods (lease/3 = 200 ms) of the 600 ms watchdog.
    tokio::time::sleep(Duration::from_millis(800)).await;
    let pttl = int(&server, &["PTTL", "o60"]);
    assert!(
        pttl >= 4_000,
        "PTTL {pttl} ms after 800 ms of renewals: the 5 s lease was shortened"
    );
    assert!(
        g2.remaining() >= Duration::from_secs(4),
        "{:?}",
        g2.remaining()
    );

    // The watchdog guard goes; its count comes off.
    drop(g1);
    wait_until(Duration::from_secs(2), "the count to drop to 1", || async {
        hgetall(&server, "o60").first().map(|f| f.1.clone()) == Some("1".into())
    })
    .await
    .unwrap();
    let fields = hgetall(&server, "o60");
    assert_eq!(fields.len(), 1, "{fields:?}");
    let pttl = int(&server, &["PTTL", "o60"]);
    assert!(pttl > 3_000, "PTTL {pttl} ms after the watchdog guard went");
    assert!(
        g2.remaining() > Duration::from_secs(3),
        "{:?}",
        g2.remaining()
    );
    assert!(!g2.is_lost());
    assert_eq!(lock.hold_count().await.unwrap(), 1);

    // Still exclusive: another client is refused, and would stay refused past the watchdog
    // lease.
    let other = client(&server).await;
    assert!(other.lock("o60").try_lock().await.unwrap().is_none());
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(other.lock("o60").try_lock().await.unwrap().is_none());
    assert!(!g2.is_lost());

    g2.unlock().await.unwrap();
    assert_eq!(c.held_locks(), 0);
    assert_nothing_left(&server).await;
}

//! The spin lock's holds are the plain lock's: with a 1 s watchdog lease a spin hold outlives
//! 3.5 leases (its TTL never drops below lease − period − slack) while another client's spin
//! lock is refused. Its holder has no watch on the lock's channel, so a force-unlock fires
//! `lost()` at the watchdog's next renewal (within a third of the lease), not at once; a
//! fixed lease is lengthened by `extend` and ends by itself.

use std::time::{Duration, Instant};

use relock_tests::*;

#[tokio::test]
async fn the_watchdog_keeps_a_spin_lock_past_three_leases_and_a_force_unlock_is_heard_at_the_next_renewal(
) {
    let server = server();
    let c = client_with_lease(&server, Duration::from_secs(1)).await;
    let other = client_with_lease(&server, Duration::from_secs(1)).await;
    let guard = c.spin_lock("sp3").lock().await.unwrap();
    assert!(guard.is_renewed());
    let start = Instant::now();
    let mut min_ttl = Duration::MAX;
    let mut checks = 0;
    while start.elapsed() < Duration::from_millis(3500) {
        let ttl = other
            .spin_lock("sp3")
            .remaining_lease()
            .await
            .unwrap()
            .expect("still held");
        min_ttl = min_ttl.min(ttl);
        assert!(other.spin_lock("sp3").try_lock().await.unwrap().is_none());
        checks += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(checks > 20);
    assert!(!guard.is_lost());
    assert!(min_ttl >= Duration::from_millis(450), "min TTL {min_ttl:?}");
    // No watch: nothing of either client listens anywhere.
    assert_eq!((c.watched_holds(), c.subscribed_channels()), (0, 0));

    // A force-unlock by the other client: heard at the next renewal (every ~333 ms).
    let t0 = Instant::now();
    assert!(other.spin_lock("sp3").force_unlock().await.unwrap());
    bounded(
        Duration::from_secs(2),
        "lost() at the next renewal",
        guard.lost(),
    )
    .await;
    let heard = t0.elapsed();
    println!("spin holder: lost() {heard:?} after a force-unlock");
    assert!(heard < Duration::from_millis(800), "{heard:?}");
    assert!(matches!(
        guard.unlock().await,
        Err(relock::Error::LockLost { .. })
    ));

    // A fixed lease: lengthened by extend, then it runs out and lost() fires.
    let fixed = c
        .spin_lock("sp3")
        .with_lease(Duration::from_millis(300))
        .lock()
        .await
        .unwrap();
    assert!(!fixed.is_renewed());
    fixed.extend(Duration::from_millis(900)).await.unwrap();
    let ttl = other.spin_lock("sp3").remaining_lease().await.unwrap();
    assert!(
        ttl.is_some_and(|t| t > Duration::from_millis(600)),
        "{ttl:?}"
    );
    bounded(
        Duration::from_secs(3),
        "a fixed lease to run out",
        fixed.lost(),
    )
    .await;
    // The local lease is counted from before the extend was sent, so it ends at most one round
    // trip before the server's: the key goes within that.
    wait_until(
        Duration::from_millis(500),
        "the server's lease to end after lost()",
        || async { !other.spin_lock("sp3").is_locked().await.unwrap() },
    )
    .await
    .unwrap();
    drop(fixed);
    c.shutdown().await;
    other.shutdown().await;
    assert_nothing_left(&server).await;
}

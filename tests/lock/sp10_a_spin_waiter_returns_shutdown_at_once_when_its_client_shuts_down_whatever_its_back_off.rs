//! `Client::shutdown` makes waiters return `Shutdown` (as a plain waiter does within a round
//! trip: t63), also a spin waiter between two attempts: its sleep is the back-off's next delay,
//! which the client's setting may make long (a constant 20 s here, an hour at most), and a
//! shut-down client must not keep a caller waiting that long for an error it already knows.

use std::time::{Duration, Instant};

use relock::SpinBackoff;
use relock_tests::*;

#[tokio::test]
async fn a_spin_waiter_returns_shutdown_at_once_when_its_client_shuts_down_whatever_its_back_off() {
    let server = server();
    let holder = client(&server).await;
    let a = relock::Client::builder()
        .url(server.url())
        .spin_backoff(SpinBackoff::constant(Duration::from_secs(20)).with_jitter(Duration::ZERO))
        .command_timeout(Duration::from_secs(1))
        .build()
        .await
        .unwrap();
    // Held with the watchdog's 30 s lease: the waiter's sleep is the back-off's 20 s.
    let held = holder.spin_lock("sp10").lock().await.unwrap();
    let waiter = tokio::spawn({
        let l = a.spin_lock("sp10");
        async move { l.lock().await.map(|_| ()) }
    });
    wait_until(Duration::from_secs(2), "a's spin waiter parked", || async {
        a.parked_waiters() == 1
    })
    .await
    .unwrap();

    let start = Instant::now();
    a.shutdown().await;
    let r = bounded(
        Duration::from_secs(25),
        "spin waiter after shutdown",
        waiter,
    )
    .await
    .unwrap();
    let took = start.elapsed();
    println!("spin waiter: {r:?} {took:?} after shutdown");
    assert!(matches!(r, Err(relock::Error::Shutdown)), "{r:?}");
    assert!(
        took < Duration::from_secs(2),
        "the spin waiter returned {took:?} after shutdown"
    );
    assert_eq!(a.parked_waiters(), 0);
    held.unlock().await.unwrap();
    holder.shutdown().await;
    assert_nothing_left(&server).await;
}

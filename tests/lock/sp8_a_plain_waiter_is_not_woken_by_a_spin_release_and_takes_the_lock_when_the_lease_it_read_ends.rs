//! What a spin release, which publishes nothing, means for a waiter that listens for release
//! messages (relock's plain lock, as Redisson's `RLock`): it is not woken, and takes the lock
//! when the lease it last read runs out, up to a whole lease after the release. A spin waiter
//! behind the same holder takes it at its next poll. Measured with a 2 s watchdog lease.

use std::time::{Duration, Instant};

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_waiter_is_not_woken_by_a_spin_release_and_takes_the_lock_when_the_lease_it_read_ends(
) {
    let server = server();
    let lease = Duration::from_secs(2);
    let holder = client_with_lease(&server, lease).await;
    let waiters = client_with_lease(&server, lease).await;

    // A plain waiter behind a spin holder: parked on the channel until the lease it read.
    let g = holder.spin_lock("sp8").lock().await.unwrap();
    let plain = spawn_parked_waiter(&server, &waiters, waiters.lock("sp8")).await;
    let released = Instant::now();
    g.unlock().await.unwrap();
    let (got, guard) = bounded(lease * 2, "the plain waiter", plain)
        .await
        .unwrap()
        .unwrap();
    let late = got - released;
    println!("plain waiter behind a spin release: took the lock {late:?} after it");
    // Not woken by a message: it slept out the ~2 s lease it read just before the release.
    assert!(late > Duration::from_millis(1000), "{late:?}");
    assert!(late < lease + Duration::from_millis(500), "{late:?}");
    guard.unlock().await.unwrap();

    // A spin waiter behind the same: at its next poll.
    let g = holder.spin_lock("sp8").lock().await.unwrap();
    let spin = {
        let l = waiters.spin_lock("sp8");
        tokio::spawn(async move { l.lock().await.map(|g| (Instant::now(), g)) })
    };
    wait_until(
        Duration::from_secs(2),
        "the spin waiter to park",
        || async { waiters.parked_waiters() == 1 },
    )
    .await
    .unwrap();
    let released = Instant::now();
    g.unlock().await.unwrap();
    let (got, guard) = bounded(lease, "the spin waiter", spin)
        .await
        .unwrap()
        .unwrap();
    let late = got - released;
    println!("spin waiter behind a spin release: took the lock {late:?} after it");
    assert!(late < Duration::from_millis(400), "{late:?}");
    guard.unlock().await.unwrap();
    holder.shutdown().await;
    waiters.shutdown().await;
    assert_nothing_left(&server).await;
}

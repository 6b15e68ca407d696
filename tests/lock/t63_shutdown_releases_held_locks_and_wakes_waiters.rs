//! `Client::shutdown` releases every held lock at once (another client gets it without
//! waiting for the lease), makes waiters return `Shutdown`, and refuses new work.

use std::time::{Duration, Instant};

use relock_tests::*;

#[tokio::test]
async fn shutdown_releases_held_locks_and_wakes_waiters() {
    let server = server();
    let (a, b) = (client(&server).await, client(&server).await);
    let guards = vec![
        a.lock("t63:1").lock().await.unwrap(),
        a.lock("t63:2").lock().await.unwrap(),
    ];
    let blocker = b.lock("t63:blocked").lock().await.unwrap();
    let waiter = tokio::spawn({
        let l = a.lock("t63:blocked");
        async move { l.lock().await.map(|_| ()) }
    });
    // Parked, so subscribed (counted on the client: its holds' watches subscribe too).
    wait_until(Duration::from_secs(2), "a's waiter subscribed", || async {
        a.parked_waiters() == 1
    })
    .await
    .unwrap();

    let start = Instant::now();
    a.shutdown().await;
    let r = bounded(Duration::from_secs(2), "waiter after shutdown", waiter)
        .await
        .unwrap();
    assert!(matches!(r, Err(relock::Error::Shutdown)), "{r:?}");
    for name in ["t63:1", "t63:2"] {
        let g = b
            .lock(name)
            .try_lock()
            .await
            .unwrap()
            .expect("released by shutdown");
        g.unlock().await.unwrap();
    }
    assert!(start.elapsed() < Duration::from_secs(2));
    assert!(matches!(
        a.lock("t63:1").try_lock().await,
        Err(relock::Error::Shutdown)
    ));
    for g in guards {
        assert!(matches!(
            g.unlock().await,
            Err(relock::Error::LockLost { .. }) | Err(relock::Error::Shutdown)
        ));
    }
    a.shutdown().await; // twice is harmless
    blocker.unlock().await.unwrap();
    assert_nothing_left(&server).await;
}

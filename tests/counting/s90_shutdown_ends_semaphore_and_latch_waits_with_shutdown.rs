//! `Client::shutdown` ends parked semaphore acquires and latch waits at once with
//! `Error::Shutdown`, takes no permit, and leaves no subscription; later calls say `Shutdown`.

use std::time::Duration;

use relock::Error;
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_ends_semaphore_and_latch_waits_with_shutdown() {
    let server = server();
    let a = client(&server).await;
    let (sem, latch) = (a.semaphore("s90"), a.count_down_latch("s90:latch"));
    assert!(sem.try_set_permits(0).await.unwrap());
    assert!(latch.try_set_count(1).await.unwrap());
    let waiters = [
        {
            let sem = sem.clone();
            tokio::spawn(async move { sem.acquire(1).await.map(kept) })
        },
        {
            let latch = latch.clone();
            tokio::spawn(async move { latch.wait().await })
        },
    ];
    wait_until(Duration::from_secs(3), "both waiters to park", || async {
        a.parked_waiters() == 2
    })
    .await
    .unwrap();
    bounded(Duration::from_secs(5), "shutdown", a.shutdown()).await;
    for w in waiters {
        let r = bounded(Duration::from_secs(1), "a waiter", w)
            .await
            .unwrap();
        assert!(matches!(r, Err(Error::Shutdown)), "{r:?}");
    }
    assert!(matches!(
        sem.try_acquire(1).await.map(taken),
        Err(Error::Shutdown)
    ));
    assert!(matches!(sem.release(1).await, Err(Error::Shutdown)));
    assert!(matches!(latch.wait().await, Err(Error::Shutdown)));
    assert_eq!(crate::get(&server, "s90").as_deref(), Some("0"));
    assert_eq!(crate::get(&server, "s90:latch").as_deref(), Some("1"));
    let _ = server.cmd(&["DEL", "s90", "s90:latch"]).unwrap();
    assert_nothing_left(&server).await;
}

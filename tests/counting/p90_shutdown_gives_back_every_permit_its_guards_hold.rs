//! `shutdown()` gives back every permit the client's guards still hold, renewed or with a
//! fixed lease, at once (not when their leases end); those guards report themselves lost, and
//! their `release()` returns `PermitLost`; new calls return `Shutdown`.

use std::time::Duration;

use relock::Error;
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_gives_back_every_permit_its_guards_hold() {
    let server = server();
    let (a, b) = (client(&server).await, client(&server).await);
    let sem = a.permit_expirable_semaphore("p90");
    let other = b.permit_expirable_semaphore("p90");
    assert!(sem.try_set_permits(3).await.unwrap());
    let renewed = sem.acquire(None).await.unwrap();
    let fixed = sem.acquire(Some(Duration::from_secs(60))).await.unwrap();
    let forgotten = sem.acquire(None).await.unwrap();
    std::mem::forget(forgotten);
    assert_eq!(a.held_permits(), 3);
    assert_eq!(other.available().await.unwrap(), 0);

    bounded(Duration::from_secs(5), "shutdown", a.shutdown()).await;
    assert_eq!(a.held_permits(), 0);
    assert_eq!(
        (
            other.available().await.unwrap(),
            other.acquired().await.unwrap()
        ),
        (3, 0)
    );
    assert!(renewed.is_lost() && fixed.is_lost());
    bounded(Duration::from_secs(1), "lost()", renewed.lost()).await;
    assert!(matches!(
        renewed.release().await,
        Err(Error::PermitLost { .. })
    ));
    drop(fixed);
    assert!(matches!(sem.acquire(None).await, Err(Error::Shutdown)));
    assert!(matches!(sem.try_acquire(None).await, Err(Error::Shutdown)));
    assert!(matches!(sem.release_id("00").await, Err(Error::Shutdown)));

    // Nothing was given back twice.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        (
            other.available().await.unwrap(),
            other.acquired().await.unwrap()
        ),
        (3, 0)
    );
    assert_eq!(crate::get(&server, "p90").as_deref(), Some("3"));
}

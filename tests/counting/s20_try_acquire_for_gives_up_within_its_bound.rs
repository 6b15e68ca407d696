//! `try_acquire` never waits and `try_acquire_for` gives up after about its wait with
//! `Ok(false)`, taking nothing and leaving no subscription; a release during the wait is taken.

use std::time::{Duration, Instant};

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn try_acquire_for_gives_up_within_its_bound() {
    let server = server();
    let (a, b) = (client(&server).await, client(&server).await);
    let sem = a.semaphore("s20");
    assert!(sem.try_set_permits(1).await.unwrap());
    assert!(sem.try_acquire(1).await.map(taken).unwrap());

    let other = b.semaphore("s20");
    let t = Instant::now();
    assert!(!other.try_acquire(1).await.map(taken).unwrap());
    assert!(
        t.elapsed() < Duration::from_millis(200),
        "{:?}",
        t.elapsed()
    );

    for wait in [Duration::from_millis(100), Duration::from_millis(400)] {
        let t = Instant::now();
        assert!(!other.try_acquire_for(1, wait).await.map(taken).unwrap());
        let took = t.elapsed();
        assert!(took >= wait, "gave up after {took:?}, before its {wait:?}");
        assert!(
            took < wait + Duration::from_millis(300),
            "gave up after {took:?}, wait {wait:?}"
        );
    }
    crate::no_subscriptions(&[&b]).await;
    assert_eq!(crate::get(&server, "s20").as_deref(), Some("0"));

    // Asking for more than there will ever be also just times out.
    sem.release(1).await.unwrap();
    assert!(!other
        .try_acquire_for(2, Duration::from_millis(100))
        .await
        .map(taken)
        .unwrap());
    assert_eq!(sem.available().await.unwrap(), 1);

    // A release while it waits is taken well before its wait ends.
    assert!(sem.try_acquire(1).await.map(taken).unwrap());
    let waiter = {
        let other = other.clone();
        tokio::spawn(async move {
            other
                .try_acquire_for(1, Duration::from_secs(10))
                .await
                .map(taken)
        })
    };
    wait_until(Duration::from_secs(2), "the waiter to park", || async {
        b.parked_waiters() == 1
    })
    .await
    .unwrap();
    let t = Instant::now();
    sem.release(1).await.unwrap();
    assert!(bounded(Duration::from_secs(5), "waiter", waiter)
        .await
        .unwrap()
        .unwrap());
    assert!(
        t.elapsed() < Duration::from_millis(500),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(sem.available().await.unwrap(), 0);
    crate::no_subscriptions(&[&b]).await;
    let _ = server.cmd(&["DEL", "s20"]).unwrap();
    assert_nothing_left(&server).await;
}

//! Redisson #3573: a waiter must not starve when the release message is lost. Permits added
//! behind the semaphore's back (INCRBY, no PUBLISH) are still taken by a waiter that has been
//! parked long enough for its re-check period to reach its 1 s cap, within that bound.

use std::time::{Duration, Instant};

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_without_a_message_still_reaches_a_waiter_within_a_second() {
    let server = server();
    let a = client(&server).await;
    let sem = a.semaphore("s40");
    let waiter = {
        let sem = sem.clone();
        tokio::spawn(async move {
            sem.acquire(2).await.map(kept).unwrap();
            Instant::now()
        })
    };
    wait_until(Duration::from_secs(3), "the waiter to park", || async {
        a.parked_waiters() == 1 && server.pubsub_numsub("redisson_sc:{s40}").unwrap() == 1
    })
    .await
    .unwrap();
    // Not a synchronisation: lets the waiter's re-check period back off to its 1 s cap
    // (50 + 100 + 200 + 400 + 800 ms), so that the bound below is the documented worst case.
    tokio::time::sleep(Duration::from_millis(1600)).await;
    assert!(!waiter.is_finished());

    let added = Instant::now();
    assert_eq!(
        server.cmd(&["INCRBY", "s40", "2"]).unwrap().as_int(),
        Some(2)
    );
    let got = bounded(Duration::from_secs(5), "the waiter", waiter)
        .await
        .unwrap();
    let took = got - added;
    assert!(
        took <= Duration::from_millis(1300),
        "the waiter took the permits {took:?} after they appeared; the documented bound is 1 s plus a round trip"
    );
    assert_eq!(sem.available().await.unwrap(), 0);
    crate::no_subscriptions(&[&a]).await;
    let _ = server.cmd(&["DEL", "s40"]).unwrap();
    assert_nothing_left(&server).await;
}

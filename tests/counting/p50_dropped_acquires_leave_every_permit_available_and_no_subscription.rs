//! Cancellation never loses a permit: acquire futures dropped while waiting on a full
//! semaphore, while their attempt is in flight on a free one, and racing a release leave
//! every permit that was not handed to a caller available, none acquired, no permit recorded
//! by the client, and no subscription.

use std::time::Duration;

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_acquires_leave_every_permit_available_and_no_subscription() {
    let server = server();
    // The holder does not watch its permits: only b's waiters may subscribe here.
    let a = client_not_watching_holds(&server, Duration::from_secs(30)).await;
    let b = client(&server).await;
    let holder = a.permit_expirable_semaphore("p50");
    assert!(holder.try_set_permits(2).await.unwrap());
    let sem = b.permit_expirable_semaphore("p50");

    // 1. Waiters on a full semaphore, dropped before, while and after subscribing.
    let first = holder.acquire(None).await.unwrap();
    let second = holder.acquire(None).await.unwrap();
    for micros in (0..3_000u64).step_by(100).chain([5_000, 20_000, 120_000]) {
        let r = tokio::time::timeout(Duration::from_micros(micros), sem.acquire(None)).await;
        assert!(r.is_err(), "got a permit of a full semaphore");
    }
    wait_until(Duration::from_secs(3), "no subscription left", || async {
        b.subscribed_channels() == 0 && server.pubsub_numsub("redisson_sc:{p50}").unwrap() == 0
    })
    .await
    .unwrap();
    assert_eq!(sem.available().await.unwrap(), 0);
    assert_eq!(sem.acquired().await.unwrap(), 2);
    first.release().await.unwrap();
    second.release().await.unwrap();

    // 2. Attempts dropped while their script is in flight: a permit granted to a caller that
    // is gone is given back.
    let mut got = 0u64;
    for micros in (0..2_000u64).step_by(20) {
        let lease = (micros % 40 == 0).then_some(Duration::from_secs(30));
        if let Ok(r) = tokio::time::timeout(Duration::from_micros(micros), sem.acquire(lease)).await
        {
            r.unwrap().release().await.unwrap();
            got += 1;
        }
    }
    assert!(got > 0, "no acquire finished within 2 ms");

    // 3. A waiter aborted right as a release reaches it: either it returned (and its guard is
    // dropped), or the permit is back.
    let _keep = holder.acquire(None).await.unwrap();
    let mut held = holder.acquire(None).await.unwrap();
    let mut returned = 0;
    for i in 0..30u64 {
        let waiter = {
            let sem = sem.clone();
            tokio::spawn(async move { sem.acquire(None).await })
        };
        wait_until(Duration::from_secs(3), "the waiter to park", || async {
            b.parked_waiters() == 1
        })
        .await
        .unwrap();
        held.release().await.unwrap();
        for _ in 0..(i % 4) * 20 {
            tokio::task::yield_now().await;
        }
        waiter.abort();
        match waiter.await {
            Ok(r) => {
                drop(r.unwrap());
                returned += 1;
            }
            Err(e) => assert!(e.is_cancelled()),
        }
        // Take the permit back, wherever it is, for the next round.
        held = bounded(
            Duration::from_secs(3),
            "take the permit back",
            holder.acquire(None),
        )
        .await
        .unwrap();
    }
    println!("{returned} of 30 aborted waiters had returned first");
    drop(held);
    drop(_keep);

    wait_until(Duration::from_secs(3), "both permits back", || async {
        holder.available().await.unwrap() == 2
    })
    .await
    .unwrap();
    assert_eq!(holder.acquired().await.unwrap(), 0);
    assert_eq!(a.held_permits() + b.held_permits(), 0);
    assert_eq!(crate::get(&server, "p50").as_deref(), Some("2"));
    crate::no_subscriptions(&[&a, &b]).await;
    assert_eq!(b.parked_waiters(), 0);
    assert_eq!(
        server.cmd(&["ZCARD", "{p50}:timeout"]).unwrap().as_int(),
        Some(0)
    );
}

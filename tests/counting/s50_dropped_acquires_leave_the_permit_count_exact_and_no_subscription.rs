//! Cancellation never loses or creates permits: acquire futures dropped at many points (while
//! waiting on an empty semaphore, while their attempt is in flight on a full one, and racing a
//! release) leave exactly the permits that were not handed to a caller, and no subscription.

use std::time::Duration;

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_acquires_leave_the_permit_count_exact_and_no_subscription() {
    let server = server();
    let (a, b) = (client(&server).await, client(&server).await);
    let holder = a.semaphore("s50");
    assert!(holder.try_set_permits(2).await.unwrap());
    let sem = b.semaphore("s50");

    // 1. Waiters on an empty semaphore, dropped before, while and after subscribing.
    holder.acquire(2).await.map(kept).unwrap();
    for micros in (0..3_000u64).step_by(100).chain([5_000, 20_000, 120_000]) {
        let r = tokio::time::timeout(Duration::from_micros(micros), sem.acquire(1)).await;
        assert!(r.is_err(), "got a permit of an empty semaphore");
    }
    wait_until(Duration::from_secs(3), "no subscription left", || async {
        b.subscribed_channels() == 0 && server.pubsub_numsub("redisson_sc:{s50}").unwrap() == 0
    })
    .await
    .unwrap();
    assert_eq!(crate::get(&server, "s50").as_deref(), Some("0"));
    holder.release(2).await.unwrap();

    // 2. Attempts dropped while their script is in flight on a semaphore with permits: a
    // permit taken for a caller that is gone is given back.
    let mut got = 0u64;
    for micros in (0..2_000u64).step_by(20) {
        if let Ok(r) = tokio::time::timeout(Duration::from_micros(micros), sem.acquire(1)).await {
            r.map(kept).unwrap();
            got += 1;
            sem.release(1).await.unwrap();
        }
    }
    assert!(got > 0, "no acquire finished within 2 ms");

    // 3. A waiter aborted right as a release reaches it: either it returned (and releases), or
    // the permit is back.
    holder.acquire(2).await.map(kept).unwrap();
    let mut returned = 0;
    for i in 0..40u64 {
        let waiter = {
            let sem = sem.clone();
            tokio::spawn(async move { sem.acquire(1).await.map(kept) })
        };
        wait_until(Duration::from_secs(3), "the waiter to park", || async {
            b.parked_waiters() == 1
        })
        .await
        .unwrap();
        holder.release(1).await.unwrap();
        if i % 4 != 0 {
            // Give the message a head start of a few polls now and then.
            for _ in 0..(i % 4) * 20 {
                tokio::task::yield_now().await;
            }
        }
        waiter.abort();
        match waiter.await {
            Ok(r) => {
                r.unwrap();
                returned += 1;
                sem.release(1).await.unwrap();
            }
            Err(e) => assert!(e.is_cancelled()),
        }
        // Back to 0 available for the next round: take the permit again, wherever it is.
        bounded(
            Duration::from_secs(3),
            "take the permit back",
            holder.acquire(1),
        )
        .await
        .map(kept)
        .unwrap();
    }
    println!("{returned} of 40 aborted waiters had returned first");
    holder.release(2).await.unwrap();

    wait_until(Duration::from_secs(3), "the permits back at 2", || async {
        holder.available().await.unwrap() == 2
    })
    .await
    .unwrap();
    assert_eq!(crate::get(&server, "s50").as_deref(), Some("2"));
    crate::no_subscriptions(&[&a, &b]).await;
    assert_eq!(b.parked_waiters(), 0);
    let _ = server.cmd(&["DEL", "s50"]).unwrap();
    assert_nothing_left(&server).await;
}

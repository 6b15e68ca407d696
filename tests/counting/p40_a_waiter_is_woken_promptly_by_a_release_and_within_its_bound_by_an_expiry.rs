//! A parked waiter for a permit is woken by a release at once (the published count), and by an
//! expiry (which sends no message) no later than the end of the first lease plus a round trip:
//! it never sleeps past the nearest expiry that the acquire script reported, even when that is
//! far shorter than its re-check period.

use std::time::{Duration, Instant};

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_is_woken_promptly_by_a_release_and_within_its_bound_by_an_expiry() {
    let server = server();
    let (a, b) = (client(&server).await, client(&server).await);
    let holder = a.permit_expirable_semaphore("p40");
    let sem = b.permit_expirable_semaphore("p40");
    assert!(holder.try_set_permits(1).await.unwrap());

    // 1. A release wakes the parked waiter at once.
    let held = holder.acquire(None).await.unwrap();
    let waiter = {
        let sem = sem.clone();
        tokio::spawn(async move { sem.acquire(None).await.map(|g| (Instant::now(), g)) })
    };
    wait_until(Duration::from_secs(3), "the waiter to park", || async {
        // (The holder's watch subscribes there too: the waiter is counted on its client.)
        b.parked_waiters() == 1 && server.pubsub_numsub("redisson_sc:{p40}").unwrap() >= 1
    })
    .await
    .unwrap();
    // Let it reach a long re-check period, so only the message can wake it promptly.
    tokio::time::sleep(Duration::from_millis(1_600)).await;
    let released = Instant::now();
    held.release().await.unwrap();
    let (at, got) = bounded(Duration::from_secs(3), "the woken waiter", waiter)
        .await
        .unwrap()
        .unwrap();
    let took = at - released;
    assert!(
        took < Duration::from_millis(300),
        "woken {took:?} after the release"
    );
    got.release().await.unwrap();

    // 2. An expiry frees the permit without a message: the waiter, parked with a lease ending
    // in 2.2 s (the script reports it), takes it within a round trip of that end. Its re-checks
    // alone (after 50, 150, 350, 750, 1550, 2550 ms) would find it 350 ms late, so only the
    // reported expiry explains a prompt wake-up.
    let lease = Duration::from_millis(2_200);
    let expiring = holder.acquire(Some(lease)).await.unwrap();
    let ends = Instant::now() + lease;
    std::mem::forget(expiring);
    let got = bounded(
        Duration::from_secs(5),
        "the waiter",
        sem.try_acquire_for(Duration::from_secs(4), None),
    )
    .await
    .unwrap()
    .expect("the expired permit came back");
    let late = Instant::now().saturating_duration_since(ends);
    assert!(
        Instant::now() + Duration::from_millis(60) >= ends,
        "took the permit before its lease ended"
    );
    assert!(
        late < Duration::from_millis(200),
        "took the permit {late:?} after its lease ended"
    );
    got.release().await.unwrap();
    assert_eq!(sem.available().await.unwrap(), 1);
    assert_eq!(sem.acquired().await.unwrap(), 0);
    crate::no_subscriptions(&[&a, &b]).await;
}

//! A waiter on a latch opened behind its back (the key deleted with DEL, no message) still
//! returns within the documented bound (the re-check's 1 s cap plus a round trip); and
//! `delete()`, which publishes, opens waiters at once.

use std::time::{Duration, Instant};

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_latch_deleted_without_a_message_still_opens_a_waiter_within_a_second() {
    let server = server();
    let a = client(&server).await;
    let latch = a.count_down_latch("l30");
    assert!(latch.try_set_count(5).await.unwrap());
    let waiter = {
        let latch = latch.clone();
        tokio::spawn(async move {
            latch.wait().await.unwrap();
            Instant::now()
        })
    };
    let channel = "redisson_countdownlatch__channel__{l30}";
    wait_until(Duration::from_secs(3), "the waiter to park", || async {
        a.parked_waiters() == 1 && server.pubsub_numsub(channel).unwrap() == 1
    })
    .await
    .unwrap();
    // Not a synchronisation: lets the waiter's re-check period back off to its 1 s cap.
    tokio::time::sleep(Duration::from_millis(1600)).await;
    assert!(!waiter.is_finished());
    let deleted = Instant::now();
    assert_eq!(server.cmd(&["DEL", "l30"]).unwrap().as_int(), Some(1));
    let at = bounded(Duration::from_secs(5), "the waiter", waiter)
        .await
        .unwrap();
    assert!(
        at - deleted <= Duration::from_millis(1300),
        "opened {:?} after the key went; the documented bound is 1 s plus a round trip",
        at - deleted
    );

    // delete() publishes "0": prompt.
    assert!(latch.try_set_count(5).await.unwrap());
    let waiter = {
        let latch = latch.clone();
        tokio::spawn(async move {
            latch.wait().await.unwrap();
            Instant::now()
        })
    };
    wait_until(Duration::from_secs(3), "the waiter to park", || async {
        a.parked_waiters() == 1
    })
    .await
    .unwrap();
    let deleted = Instant::now();
    assert!(latch.delete().await.unwrap());
    let at = bounded(Duration::from_secs(5), "the waiter", waiter)
        .await
        .unwrap();
    assert!(
        at - deleted < Duration::from_millis(500),
        "{:?}",
        at - deleted
    );
    crate::no_subscriptions(&[&a]).await;
    assert_nothing_left(&server).await;
}

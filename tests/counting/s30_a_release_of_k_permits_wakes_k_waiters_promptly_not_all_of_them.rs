//! Proportional waking: with 6 waiters of one client parked on an empty semaphore, a release
//! of 1 permit (from another client) wakes exactly one of them through its message (counted by
//! `relock_wakeups_total`), promptly; a release of 3 wakes exactly 3 more. Waking all of them
//! would count 6 and 5.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use metrics_util::debugging::DebuggingRecorder;
use relock_tests::*;

// A current-thread runtime: the local recorder sees what every task records.
#[tokio::test]
async fn a_release_of_k_permits_wakes_k_waiters_promptly_not_all_of_them() {
    let recorder = DebuggingRecorder::new();
    let _local = metrics::set_default_local_recorder(&recorder);
    let server = server();
    let (a, b) = (client(&server).await, client(&server).await);
    assert!(a.semaphore("s30").try_set_permits(0).await.unwrap());
    let done = Arc::new(AtomicUsize::new(0));
    let mut waiters = Vec::new();
    for _ in 0..6 {
        let (sem, done) = (a.semaphore("s30"), done.clone());
        waiters.push(tokio::spawn(async move {
            sem.acquire(1).await.map(kept).unwrap();
            done.fetch_add(1, Ordering::SeqCst);
            Instant::now()
        }));
    }
    wait_until(Duration::from_secs(3), "6 parked waiters", || async {
        a.parked_waiters() == 6
    })
    .await
    .unwrap();
    let releaser = b.semaphore("s30");

    crate::wakeups(&recorder); // resets the counter
    let released = Instant::now();
    releaser.release(1).await.unwrap();
    wait_until(
        Duration::from_millis(500),
        "one waiter to get the permit",
        || async { done.load(Ordering::SeqCst) == 1 },
    )
    .await
    .unwrap_or_else(|e| panic!("{e} (released {:?} ago)", released.elapsed()));
    wait_until(
        Duration::from_secs(2),
        "the other 5 to park again",
        || async { a.parked_waiters() == 5 },
    )
    .await
    .unwrap();
    assert_eq!(
        crate::wakeups(&recorder),
        1,
        "a release of 1 woke more than one waiter"
    );
    assert_eq!(done.load(Ordering::SeqCst), 1);

    crate::wakeups(&recorder); // resets the counter
    releaser.release(3).await.unwrap();
    wait_until(
        Duration::from_millis(500),
        "three more waiters to get one",
        || async { done.load(Ordering::SeqCst) == 4 },
    )
    .await
    .unwrap();
    wait_until(
        Duration::from_secs(2),
        "the other 2 to park again",
        || async { a.parked_waiters() == 2 },
    )
    .await
    .unwrap();
    assert_eq!(
        crate::wakeups(&recorder),
        3,
        "a release of 3 woke another number than 3"
    );
    assert_eq!(releaser.available().await.unwrap(), 0);

    // The last two: whoever is left is woken (a timer re-check may get there first).
    releaser.release(2).await.unwrap();
    for w in waiters {
        bounded(Duration::from_secs(2), "every waiter", w)
            .await
            .unwrap();
    }
    assert_eq!(done.load(Ordering::SeqCst), 6);
    assert_eq!(crate::get(&server, "s30").as_deref(), Some("0"));
    crate::no_subscriptions(&[&a]).await;
    let _ = server.cmd(&["DEL", "s30"]).unwrap();
    assert_nothing_left(&server).await;
}

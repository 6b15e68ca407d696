//! Mixed sizes: 4 waiters for 2 permits and 3 waiters for 1 are parked on one client, long
//! enough for their re-checks to be 1 s apart. Each release of 1 permit is taken by a waiter
//! for 1 within 300 ms, even when its message woke a waiter for 2 (which passes the wake-up on
//! instead of just sleeping again); the waiters for 2 take nothing until 2 are free.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_of_one_reaches_a_waiter_for_one_behind_waiters_for_two() {
    let server = server();
    let (a, b) = (client(&server).await, client(&server).await);
    let ones = Arc::new(AtomicUsize::new(0));
    let mut waiters = Vec::new();
    for n in [2, 2, 2, 2, 1, 1, 1] {
        let (sem, ones) = (a.semaphore("s35"), ones.clone());
        waiters.push(tokio::spawn(async move {
            sem.acquire(n).await.map(kept).unwrap();
            if n == 1 {
                ones.fetch_add(1, Ordering::SeqCst);
            }
        }));
        // Park in this order: the waiters for 2 first in line.
        let parked = waiters.len();
        wait_until(Duration::from_secs(3), "the waiter to park", || async {
            a.parked_waiters() == parked
        })
        .await
        .unwrap();
    }
    // Not a synchronisation: lets every re-check period back off to its 1 s cap.
    tokio::time::sleep(Duration::from_millis(1600)).await;
    let releaser = b.semaphore("s35");
    for round in 1..=3 {
        let released = Instant::now();
        releaser.release(1).await.unwrap();
        wait_until(
            Duration::from_millis(300),
            "a waiter for 1 to take it",
            || async { ones.load(Ordering::SeqCst) == round },
        )
        .await
        .unwrap_or_else(|e| panic!("round {round}: {e} ({:?})", released.elapsed()));
    }
    assert_eq!(releaser.available().await.unwrap(), 0);
    assert_eq!(waiters.iter().filter(|w| w.is_finished()).count(), 3);
    releaser.release(8).await.unwrap();
    for w in waiters {
        bounded(Duration::from_secs(3), "every waiter", w)
            .await
            .unwrap();
    }
    assert_eq!(releaser.available().await.unwrap(), 0);
    crate::no_subscriptions(&[&a]).await;
    let _ = server.cmd(&["DEL", "s35"]).unwrap();
    assert_nothing_left(&server).await;
}

//! A quorum hold re-entered once (two guards); one guard's `unlock()` future is polled once
//! (its release of one count is on the wire, holding the hold's gate) and then kept alive,
//! unpolled, as after a `select!` over `&mut unlock` that took the other branch. Every node
//! is up. Another lock's watchdog hold, whose guard lives on, must stay held: its renewals
//! must not wait for a future that nobody polls.

use std::time::{Duration, Instant};

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unlock_kept_alive_unpolled_does_not_stop_the_watchdog_for_other_locks() {
    let m = masters(3);
    let lease = Duration::from_millis(1500);
    let client = quorum_client(&m, lease, Duration::ZERO).await;
    warm_up(&client, "q71-warm").await;
    let (a, b) = (client.lock("q71-a"), client.lock("q71-b"));
    let gb = b.lock().await.unwrap();
    let ga1 = a.lock().await.unwrap();
    // Polled once, then kept but not polled. On a loaded machine the release can end within
    // that one poll; such a round proves nothing, so the lock is re-entered and tried again.
    let mut kept = None;
    for _ in 0..20 {
        let ga2 = ga1.scope(a.lock()).await.unwrap();
        let mut unlock = Box::pin(ga2.unlock());
        if poll_once(&mut unlock).await.is_pending() {
            kept = Some(unlock);
            break;
        }
    }
    let unlock = kept.expect("in 20 rounds, a first poll of unlock() that did not finish it");
    let t = Instant::now();
    let lost = tokio::time::timeout(lease * 4, gb.lost()).await;
    let b_on_nodes: Vec<_> = (0..3)
        .map(|i| m[i].cmd(&["PTTL", "q71-b"]).unwrap())
        .collect();
    assert!(
        lost.is_err(),
        "the hold of q71-b was lost {:?} after an unrelated unlock() future stopped being \
         polled (all nodes up, its guard alive); PTTL of q71-b on the nodes: {b_on_nodes:?}; \
         q71-a's other guard lost too: {}",
        t.elapsed(),
        ga1.is_lost()
    );
    drop(unlock);
    drop((ga1, gb));
    bounded(Duration::from_secs(10), "shutdown", client.shutdown()).await;
}

//! A guard's `unlock()` future is polled once (its release is sent) and then kept alive,
//! unpolled, as after a `select!` over `&mut unlock` that took the other branch. The release
//! lands on the server at once. The next `lock()` of that name on the same client finds the
//! lock free and must not wait: nothing is left to wait for but a reply nobody reads.

use std::time::{Duration, Instant};

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unlock_kept_alive_unpolled_does_not_slow_the_next_lock_of_that_name() {
    let s = server();
    let c = client(&s).await; // command timeout 1 s
    let lock = c.lock("t75");
    lock.lock().await.unwrap().unlock().await.unwrap();
    // A first poll only starts the release; on a loaded machine the release can end within
    // it, and that round proves nothing, so the lock is taken again and the next round tried.
    let mut kept = None;
    for _ in 0..20 {
        let mut unlock = Box::pin(lock.lock().await.unwrap().unlock());
        if poll_once(&mut unlock).await.is_pending() {
            kept = Some(unlock);
            break;
        }
    }
    let unlock = kept.expect("in 20 rounds, a first poll of unlock() that did not finish it");
    wait_until(
        Duration::from_secs(3),
        "the release on the server",
        || async { s.cmd(&["EXISTS", "t75"]).unwrap().as_int() == Some(0) },
    )
    .await
    .unwrap();
    // Its reply is handled without the caller: the hold leaves the client's records.
    wait_until(
        Duration::from_secs(3),
        "the hold out of the client's records",
        || async { c.held_locks() == 0 },
    )
    .await
    .unwrap();
    let mut took = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        let g = bounded(Duration::from_secs(10), "lock", lock.lock())
            .await
            .unwrap();
        took.push(t.elapsed());
        g.unlock().await.unwrap();
    }
    assert!(
        took.iter().all(|d| *d < Duration::from_millis(500)),
        "lock() of a free lock, with every reply in, took {took:?}: it waits for the \
         unpolled unlock() future's release"
    );
    drop(unlock);
    bounded(Duration::from_secs(10), "shutdown", c.shutdown()).await;
    assert_nothing_left(&s).await;
}

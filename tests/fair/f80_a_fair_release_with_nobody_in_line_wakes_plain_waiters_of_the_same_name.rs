//! A fair lock and a plain lock (relock's, or Redisson's `RLock`) on one name share the hash and
//! the release channel. When a fair release finds nobody in the fair line it publishes
//! Redisson's unlock message `0`, so a plain waiter of that name wakes at once instead of at the
//! holder's lease end; while someone is in the line, only the first fair waiter is named.

use std::time::Duration;

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fair_release_with_nobody_in_line_wakes_plain_waiters_of_the_same_name() {
    let server = server();
    let (a, b) = (client(&server).await, client(&server).await);
    // Released by a fair unlock: the plain waiter on the other client wakes within 500 ms
    // (its holder's lease is 30 s).
    let held = a.fair_lock("f80").lock().await.unwrap();
    let g = assert_release_wakes(&b, b.lock("f80"), held).await;
    g.unlock().await.unwrap();

    // Released by a fair force_unlock: the same.
    let held = a.fair_lock("f80").lock().await.unwrap();
    let waiter = spawn_parked_waiter(&server, &b, b.lock("f80")).await;
    let forced = std::time::Instant::now();
    assert!(a.fair_lock("f80").force_unlock().await.unwrap());
    let (at, g) = bounded(
        Duration::from_secs(5),
        "plain waiter after force_unlock",
        waiter,
    )
    .await
    .unwrap()
    .unwrap();
    assert!(
        at - forced < Duration::from_millis(500),
        "{:?}",
        at - forced
    );
    assert!(held.is_lost());
    drop(held);
    g.unlock().await.unwrap();
    a.shutdown().await;
    b.shutdown().await;
    assert_nothing_left(&server).await;
}

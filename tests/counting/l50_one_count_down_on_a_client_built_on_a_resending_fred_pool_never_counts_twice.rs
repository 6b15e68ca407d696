//! `ClientBuilder::build_with_pool` documents that a pool which resends commands after a
//! reconnect (fred's `max_command_attempts`, 3 by default) is safe, because every hold has its
//! own field. That argument covers locks only: a latch's count-down (like a semaphore's
//! release) is not idempotent. One `count_down()` whose reply is lost to a connection reset is
//! resent by fred on the new connection and counts twice: a latch of 2 opens after one
//! count-down, and its waiters go on early.

use std::time::Duration;

use fred::interfaces::ClientLike;
use relock::fred;
use relock_testkit::{Direction, FaultProxy};
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_count_down_on_a_client_built_on_a_resending_fred_pool_never_counts_twice() {
    let server = server();
    let proxy = FaultProxy::start(&server.addr()).unwrap();
    let (pool, from_pool) = crate::resending_pool_client(&proxy).await;
    let other = client(&server).await;
    let latch = other.count_down_latch("l50");
    assert!(latch.try_set_count(2).await.unwrap());
    // Load the script (a count-down of an open latch changes nothing), so that the count-down
    // below needs no NOSCRIPT round trip.
    from_pool
        .count_down_latch("l50-warm")
        .count_down()
        .await
        .unwrap();

    // Hold every reply on the connections open now (the pool's and relock's subscriber), send
    // one count-down, and once the server has run it, reset the pool's connection.
    let frozen = proxy.freeze_existing(Direction::Down);
    let counting = {
        let l = from_pool.count_down_latch("l50");
        tokio::spawn(async move { l.count_down().await })
    };
    wait_until(Duration::from_secs(3), "the count-down to run", || async {
        crate::get(&server, "l50").as_deref() == Some("1")
    })
    .await
    .unwrap();
    for id in frozen {
        proxy.reset_conn(id);
    }
    let r = bounded(Duration::from_secs(10), "count_down", counting)
        .await
        .unwrap();
    // Give a resend time to land.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let left = latch.count().await.unwrap();
    assert_eq!(
        left, 1,
        "one count_down() (it returned {r:?}) took a latch of 2 to {left}: the latch opened early"
    );
    from_pool.shutdown().await;
    other.shutdown().await;
    let _ = pool.quit().await;
}

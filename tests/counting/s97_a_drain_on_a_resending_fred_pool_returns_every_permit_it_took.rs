//! `build_with_pool` says a resending pool (fred's `max_command_attempts`, 3 by default) is
//! safe for semaphores because releases and count-downs carry a request id. `drain()` carries
//! none: a drain whose reply is lost to a connection reset is resent by fred and runs again.
//! The first run took the 3 permits, a release of 1 landed in between, the resend takes that
//! one too and replies 1: `drain()` returns `Ok(1)` and 4 permits are gone, 3 of them without
//! any error telling the caller (its documented loss is for a dropped future only).

use std::time::Duration;

use fred::interfaces::ClientLike;
use relock::fred;
use relock_testkit::{Direction, FaultProxy};
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drain_on_a_resending_fred_pool_returns_every_permit_it_took() {
    let server = server();
    let proxy = FaultProxy::start(&server.addr()).unwrap();
    let (pool, from_pool) = crate::resending_pool_client(&proxy).await;
    let other = client(&server).await;
    assert!(other.semaphore("s97").try_set_permits(3).await.unwrap());
    // Load the script.
    assert_eq!(from_pool.semaphore("s97-warm").drain().await.unwrap(), 0);

    let frozen = proxy.freeze_existing(Direction::Down);
    let draining = {
        let sem = from_pool.semaphore("s97");
        tokio::spawn(async move { sem.drain().await })
    };
    wait_until(Duration::from_secs(3), "the drain to run", || async {
        crate::get(&server, "s97").as_deref() == Some("0")
    })
    .await
    .unwrap();
    other.semaphore("s97").release(1).await.unwrap();
    for id in frozen {
        proxy.reset_conn(id);
    }
    let r = bounded(Duration::from_secs(10), "drain", draining)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let left = crate::get(&server, "s97");
    let taken = 3 + 1
        - left
            .as_deref()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
    assert!(
        matches!(r, Ok(n) if n == taken) || r.is_err(),
        "drain() returned {r:?}, and {taken} permits were taken (3 available, 1 released \
         during the drain, {left:?} left)"
    );
    from_pool.shutdown().await;
    other.shutdown().await;
    let _ = pool.quit().await;
}

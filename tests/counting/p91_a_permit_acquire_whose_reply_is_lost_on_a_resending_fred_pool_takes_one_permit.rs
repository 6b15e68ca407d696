//! `ClientBuilder::build_with_pool` documents a pool that resends a command after a reconnect
//! (fred's `max_command_attempts`, 3 by default) as safe, and says a semaphore's release and a
//! latch's count-down carry a request id so that a copy counts nothing. A permit-expirable
//! semaphore's acquire carries an id too (the permit's), but `permits_acquire.lua` does not look
//! whether that id is already in `{name}:timeout`: a copy resent after the first run's reply was
//! lost takes a second permit under the same id. The ZSET has one entry (one `ZADD` updates
//! it), the count went down by two: releasing the guard (or its lease ending) gives back one,
//! and the other permit is gone for good.

use std::time::Duration;

use fred::interfaces::ClientLike;
use relock::fred;
use relock_testkit::{Direction, FaultProxy};
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permit_acquire_whose_reply_is_lost_on_a_resending_fred_pool_takes_one_permit() {
    let server = server();
    let proxy = FaultProxy::start(&server.addr()).unwrap();
    let (pool, from_pool) = crate::resending_pool_client(&proxy).await;
    let other = client(&server).await;
    let sem = from_pool.permit_expirable_semaphore("p91");
    assert!(other
        .permit_expirable_semaphore("p91")
        .try_set_permits(2)
        .await
        .unwrap());
    // Load the script (and see one acquire/release round trip work).
    let warm = sem
        .try_acquire(Some(Duration::from_secs(60)))
        .await
        .unwrap();
    warm.unwrap().release().await.unwrap();
    assert_eq!(crate::get(&server, "p91").as_deref(), Some("2"));

    // Hold every reply on the connections open now, acquire one permit, and once the server
    // has run it, reset the pool's connection: fred resends the acquire.
    let frozen = proxy.freeze_existing(Direction::Down);
    let acquiring = {
        let sem = sem.clone();
        tokio::spawn(async move { sem.try_acquire(Some(Duration::from_secs(60))).await })
    };
    wait_until(Duration::from_secs(3), "the acquire to run", || async {
        crate::get(&server, "p91").as_deref() == Some("1")
    })
    .await
    .unwrap();
    for id in frozen {
        proxy.reset_conn(id);
    }
    let r = bounded(Duration::from_secs(10), "try_acquire", acquiring)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let count = crate::get(&server, "p91");
    let entries = server.cmd(&["ZCARD", "{p91}:timeout"]).unwrap().as_int();
    let got = matches!(r, Ok(Some(_)));
    if let Ok(Some(g)) = r {
        let _ = g.release().await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = crate::get(&server, "p91");
    assert_eq!(
        after.as_deref(),
        Some("2"),
        "one try_acquire (granted: {got}) left count {count:?} with {entries:?} ids held; after \
         its release the semaphore of 2 holds {after:?}: a permit was destroyed"
    );
    from_pool.shutdown().await;
    other.shutdown().await;
    let _ = pool.quit().await;
}

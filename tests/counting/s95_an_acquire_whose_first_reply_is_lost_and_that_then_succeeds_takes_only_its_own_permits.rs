//! A semaphore waiter retries transient errors (`counter::Transient`). An acquire attempt
//! whose script ran but whose reply was lost (the connection reset after the server answered)
//! is such an error; the retry then takes the permits again, and `acquire` returns `Ok(())`.
//! The caller took one permit and will release one, but two are gone from the semaphore, and
//! nobody was told: no error reached the caller (only a debug log). The documented lost-reply
//! case speaks of an attempt "whose reply never arrives ([`Error::Timeout`] or a connection
//! lost mid-command)"; here the caller is told it succeeded, so it cannot even know to count
//! the loss.

use std::time::Duration;

use relock_testkit::{Direction, FaultProxy};
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_whose_first_reply_is_lost_and_that_then_succeeds_takes_only_its_own_permits() {
    let server = server();
    let proxy = FaultProxy::start(&server.addr()).unwrap();
    let c = relock::Client::builder()
        .url(proxy.url())
        .command_timeout(Duration::from_secs(2))
        .connect_timeout(Duration::from_secs(2))
        .build()
        .await
        .expect("connect through the proxy");
    let sem = c.semaphore("s95");
    assert!(sem.try_set_permits(2).await.unwrap());
    // Load the acquire script, so the acquire below needs no NOSCRIPT round trip.
    assert!(sem.try_acquire(1).await.map(taken).unwrap());
    sem.release(1).await.unwrap();
    assert_eq!(crate::get(&server, "s95").as_deref(), Some("2"));

    // Hold the replies of every connection open now; acquire one permit.
    let frozen = proxy.freeze_existing(Direction::Down);
    let acquiring = {
        let sem = sem.clone();
        tokio::spawn(async move { sem.acquire(1).await.map(kept) })
    };
    wait_until(
        Duration::from_secs(3),
        "the acquire script to run",
        || async { crate::get(&server, "s95").as_deref() == Some("1") },
    )
    .await
    .unwrap();
    // Its reply is lost (every frozen connection is reset); the client reconnects and goes on.
    lose_replies(&proxy, &frozen);
    let r = bounded(Duration::from_secs(10), "acquire", acquiring)
        .await
        .unwrap();
    let left = crate::get(&server, "s95");
    if r.is_ok() {
        sem.release(1).await.unwrap();
        let after = crate::get(&server, "s95");
        assert_eq!(
            after.as_deref(),
            Some("2"),
            "acquire(1) returned Ok(()) and left {left:?}; after release(1) the semaphore of 2 \
             holds {after:?}: a permit was destroyed without any error"
        );
    }
    c.shutdown().await;
}

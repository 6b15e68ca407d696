//! Every attempt of one semaphore `acquire` carries one request key, so that an attempt that
//! ran but whose reply was lost is found by the next one. `Request::done` deletes that key in
//! the background once an attempt's reply came, on the ground that "once a reply came, no copy
//! of the call can still arrive (a resend only follows a lost reply)". A relock acquire retries
//! on its own after an attempt's `Timeout`, and the retry goes out on the next pool connection:
//! the timed-out attempt may still be on its way (a slow link, a stalled socket buffer). Here
//! it arrives after the retry succeeded and the key was deleted, finds no key, and takes the
//! permits a second time: `acquire(1)` returned once, and two permits are gone for good.

use std::time::Duration;

use relock_testkit::{Direction, FaultProxy};
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_attempt_that_lands_after_its_retry_succeeded_takes_nothing_more() {
    let server = server();
    let proxy = FaultProxy::start(&server.addr()).unwrap();
    let c = relock::Client::builder()
        .url(proxy.url())
        .connections(3)
        .command_timeout(Duration::from_secs(1))
        .connect_timeout(Duration::from_secs(1))
        .build()
        .await
        .expect("connect through the proxy");
    let sem = c.semaphore("s96");
    assert!(sem.try_set_permits(3).await.unwrap());
    // Load the script on the server.
    for _ in 0..4 {
        assert!(sem.try_acquire(1).await.map(taken).unwrap());
        sem.release(1).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(crate::get(&server, "s96").as_deref(), Some("3"));

    // Hold the commands of every connection open now; start acquire(1), and once its first
    // attempt is held on one connection, let every other connection go.
    let frozen = proxy.freeze_existing(Direction::Up);
    let acquiring = {
        let sem = sem.clone();
        tokio::spawn(async move { sem.acquire(1).await.map(kept) })
    };
    let held = eventually(Duration::from_secs(3), "the first attempt held", || async {
        let h = proxy.conns_holding(Direction::Up);
        (!h.is_empty()).then_some(h)
    })
    .await;
    for id in frozen.iter().filter(|id| !held.contains(id)) {
        proxy.set_conn(*id, Direction::Up, None);
    }
    // The first attempt times out; the retry runs on another connection and succeeds.
    let r = bounded(Duration::from_secs(10), "acquire", acquiring)
        .await
        .unwrap();
    assert!(r.is_ok(), "{r:?}");
    assert_eq!(crate::get(&server, "s96").as_deref(), Some("2"));
    // An attempt of this acquire got no reply, so its request key is kept (until it expires):
    // the late attempt must find it.
    assert!(
        server
            .keys()
            .unwrap()
            .iter()
            .any(|k| k.starts_with("relock_request")),
        "the request key of an acquire with an unknown attempt was deleted"
    );
    // Now the first attempt arrives.
    proxy.clear_overrides();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let left = crate::get(&server, "s96");
    assert_eq!(
        left.as_deref(),
        Some("2"),
        "acquire(1) returned Ok once, and the semaphore of 3 now holds {left:?}: its first, \
         timed-out attempt took a permit after the retry had succeeded and its request key \
         was deleted"
    );
    c.shutdown().await;
}

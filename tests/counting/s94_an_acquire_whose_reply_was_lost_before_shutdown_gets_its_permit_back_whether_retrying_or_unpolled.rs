//! An acquire attempt whose script ran (it took the permit) and whose reply was lost with its
//! connection just before `shutdown()` began: the attempt's task has ended, and its caller is
//! either retrying (new connections refused for a moment) or not being polled at all.
//! Shutdown must give up on it for its caller and give back what it took before it closes the
//! connections; the caller's own give-back, when its future ends later, must not give it back
//! a second time.

use std::time::Duration;

use relock_testkit::Direction;
use relock_tests::*;

/// A semaphore of one permit, behind a proxy, whose existing connections hold their replies.
async fn set_up(
    server: &relock_testkit::RedisServer,
    name: &str,
) -> (
    relock_testkit::FaultProxy,
    relock::Client,
    relock::Semaphore,
    Vec<relock_testkit::ConnId>,
) {
    let (proxy, c) = client_behind_proxy(server, Duration::from_secs(3)).await;
    let sem = c.semaphore(name);
    assert!(sem.try_set_permits(1).await.unwrap());
    assert!(sem.try_acquire(1).await.map(taken).unwrap());
    sem.release(1).await.unwrap();
    let frozen = proxy.freeze_existing(Direction::Down);
    (proxy, c, sem, frozen)
}

async fn taken_on(server: &relock_testkit::RedisServer, name: &str) {
    wait_until(
        Duration::from_secs(3),
        "the attempt to take the permit",
        || async { crate::get(server, name).as_deref() == Some("0") },
    )
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retrying_acquire_gets_its_permit_back() {
    let server = server();
    let (proxy, c, sem, frozen) = set_up(&server, "s94a").await;
    let acquire = {
        let sem = sem.clone();
        tokio::spawn(async move { sem.acquire(1).await.map(kept) })
    };
    taken_on(&server, "s94a").await;
    // The reply is lost before shutdown, and reconnects are refused for a moment: the caller
    // retries (the fault's length, not a wait for a condition).
    proxy.refuse(true);
    lose_replies(&proxy, &frozen);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !acquire.is_finished(),
        "the caller should still be retrying"
    );
    let shutdown = {
        let c = c.clone();
        tokio::spawn(async move { c.shutdown().await })
    };
    wait_until(Duration::from_secs(3), "shutdown to begin", || async {
        matches!(sem.available().await, Err(relock::Error::Shutdown))
    })
    .await
    .unwrap();
    // Redis is reachable again as soon as shutdown has begun.
    proxy.refuse(false);
    let r = bounded(Duration::from_secs(5), "acquire", acquire)
        .await
        .unwrap();
    assert!(matches!(r, Err(relock::Error::Shutdown)), "{r:?}");
    bounded(Duration::from_secs(15), "shutdown", shutdown)
        .await
        .unwrap();
    assert_eq!(
        crate::get(&server, "s94a").as_deref(),
        Some("1"),
        "shutdown returned and the permit the cut-off attempt took is not back"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unpolled_acquire_gets_its_permit_back_once() {
    let server = server();
    let (proxy, c, sem, frozen) = set_up(&server, "s94b").await;
    let mut acquire = Box::pin(sem.acquire(1));
    assert!(poll_once(&mut acquire).await.is_pending());
    taken_on(&server, "s94b").await;
    lose_replies(&proxy, &frozen);
    // The attempt's task reads its error and ends while its caller is not polled (the fault's
    // length, not a wait for a condition).
    tokio::time::sleep(Duration::from_millis(300)).await;
    bounded(Duration::from_secs(15), "shutdown", c.shutdown()).await;
    assert_eq!(
        crate::get(&server, "s94b").as_deref(),
        Some("1"),
        "shutdown returned and the permit the unpolled acquire took is not back"
    );
    drop(acquire);
    let twice = wait_until(Duration::from_millis(500), "a second give-back", || async {
        crate::get(&server, "s94b").as_deref() != Some("1")
    })
    .await;
    assert!(
        twice.is_err(),
        "given back twice: {:?}",
        crate::get(&server, "s94b")
    );
}

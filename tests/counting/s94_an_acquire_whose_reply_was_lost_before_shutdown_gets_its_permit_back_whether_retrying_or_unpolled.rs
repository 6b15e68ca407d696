//! An acquire attempt whose script ran (it took the permit) and whose reply was lost with its
//! connection just before `shutdown()` began: the attempt's task has ended, and its caller is
//! either retrying (new connections refused for a moment) or not being polled at all.
//! Shutdown must give up on it for its caller and give back what it took before it closes the
//! connections; the caller's own give-back, when its future ends later, must not give it back
//! a second time.

use std::time::Duration;

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retrying_acquire_gets_its_permit_back() {
    let server = server();
    let (proxy, c, sem, frozen) = crate::one_permit_behind_a_proxy(&server, "s94a").await;
    let acquire = {
        let sem = sem.clone();
        tokio::spawn(async move { sem.acquire(1).await.map(kept) })
    };
    crate::permit_taken(&server, "s94a").await;
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
    let (proxy, c, sem, frozen) = crate::one_permit_behind_a_proxy(&server, "s94b").await;
    let mut acquire = Box::pin(sem.acquire(1));
    assert!(poll_once(&mut acquire).await.is_pending());
    crate::permit_taken(&server, "s94b").await;
    let before = proxy.accepted();
    lose_replies(&proxy, &frozen);
    // The attempt's task reads its error and ends while its caller is not polled: the pool
    // reconnects once it has seen its connections close.
    wait_until(Duration::from_secs(3), "the pool to reconnect", || async {
        proxy.accepted() > before
    })
    .await
    .unwrap();
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

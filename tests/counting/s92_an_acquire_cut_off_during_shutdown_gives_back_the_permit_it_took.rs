//! An acquire attempt whose script ran (it took the permit) and whose reply is lost with its
//! connection while `shutdown()` waits for work in flight. Its error then reads `Shutdown`,
//! which says nothing about the call; the give-back must still run (shutdown waits for it),
//! judged on fred's own error (review of issue #14: the permit was lost silently).

use std::time::Duration;

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_cut_off_during_shutdown_gives_back_the_permit_it_took() {
    let server = server();
    let (proxy, c, sem, frozen) = crate::one_permit_behind_a_proxy(&server, "s92").await;
    let count = || crate::get(&server, "s92");
    let acquire = {
        let sem = sem.clone();
        tokio::spawn(async move { sem.acquire(1).await.map(kept) })
    };
    crate::permit_taken(&server, "s92").await;
    // Shutdown begins while the attempt is in flight; then its reply is lost.
    let shutdown = shut_down_losing_the_held_reply(&proxy, &frozen, &c, || async {
        matches!(sem.available().await, Err(relock::Error::Shutdown))
    })
    .await;
    let r = bounded(Duration::from_secs(5), "acquire", acquire)
        .await
        .unwrap();
    assert!(matches!(r, Err(relock::Error::Shutdown)), "{r:?}");
    bounded(Duration::from_secs(10), "shutdown", shutdown)
        .await
        .unwrap();
    assert_eq!(
        count().as_deref(),
        Some("1"),
        "shutdown returned and the permit the cut-off attempt took is not back"
    );
}

//! Review finding (minor): a quorum extension that does not reach a majority returns
//! `QuorumNotReached` to its caller, and the shared round (`renew_holds`) also logs the
//! watchdog's `warn` "quorum renewal failed" and counts `relock_renewal_failures_total`
//! ("holds whose renewal failed (they are retried)"), though no renewal failed and nothing is
//! retried; a successful one counts in `relock_renewals_total` ("renewed by the watchdog"), which
//! a one-server extension does not.

use std::time::Duration;

use relock_tests::*;

#[tokio::test(flavor = "current_thread")]
async fn a_failed_extension_is_not_logged_as_a_failed_watchdog_renewal() {
    let m = masters(3);
    let client = quorum_client(&m, Duration::from_secs(30), Duration::ZERO).await;
    let g = client
        .lock("q109")
        .with_lease(Duration::from_secs(5))
        .lock()
        .await
        .unwrap();
    wait_held_on_every_node(&m, "q109").await;
    let logs = capture_traces(tracing::Level::WARN, "relock");
    m[1].pause().unwrap();
    m[2].pause().unwrap();
    let r = g.extend(Duration::from_secs(20)).await;
    m[1].resume().unwrap();
    m[2].resume().unwrap();
    assert!(
        matches!(r, Err(relock::Error::QuorumNotReached { .. })),
        "{r:?}"
    );
    assert!(!g.is_lost());
    let text = logs.take();
    drop(logs);
    g.unlock().await.unwrap();
    client.shutdown().await;
    assert!(
        !text.contains("quorum renewal failed"),
        "the caller's failed extension was logged as a watchdog renewal failure:\n{text}"
    );
}

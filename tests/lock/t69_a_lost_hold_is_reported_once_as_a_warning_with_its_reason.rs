//! A hold lost while its guard lives is reported exactly once, as a WARN event naming the lock
//! and why: deleted behind its back (its watch or the watchdog found it gone), or its fixed lease ran out on
//! the local clock. A hold released normally is never reported.

use std::time::Duration;

use relock_tests::*;

#[tokio::test]
async fn a_lost_hold_is_reported_once_as_a_warning_with_its_reason() {
    let captured = capture_traces(tracing::Level::WARN, "");
    let server = server();
    let c = client_with_lease(&server, Duration::from_millis(600)).await;

    let released = c.lock("t69:released").lock().await.unwrap();
    released.unlock().await.unwrap();

    let deleted = c.lock("t69:deleted").lock().await.unwrap();
    server.cmd(&["DEL", "t69:deleted"]).unwrap();
    bounded(Duration::from_secs(2), "lost after DEL", deleted.lost()).await;

    let leased = c
        .lock("t69:leased")
        .with_lease(Duration::from_millis(300))
        .lock()
        .await
        .unwrap();
    bounded(
        Duration::from_secs(2),
        "lost at the lease end",
        leased.lost(),
    )
    .await;

    let logs = captured.text();
    let lost: Vec<&str> = logs
        .lines()
        .filter(|l| l.contains("lock lost while held"))
        .collect();
    assert_eq!(lost.len(), 2, "{logs}");
    assert!(
        lost.iter()
            // The hold's watch (on its channel) or the watchdog, whichever looks first.
            .any(|l| l.contains("t69:deleted") && l.contains("found the hold gone")),
        "{logs}"
    );
    assert!(
        lost.iter()
            .any(|l| l.contains("t69:leased") && l.contains("lease ran out on the local clock")),
        "{logs}"
    );
    assert!(lost.iter().all(|l| l.contains("WARN")), "{logs}");
    assert!(!logs.contains("t69:released"), "{logs}");
    drop((deleted, leased));
    c.shutdown().await;
    assert_nothing_left(&server).await;
}

//! A permit's give-back at shutdown (shutdown's last chance, `client::retry::try_until`,
//! found by review): its warning names the semaphore and the server's error, and an error
//! reply (WRONGTYPE: the call ran, and a retry would answer the same) is not sent again for a
//! whole command timeout, so shutdown does not wait for it.

use std::time::{Duration, Instant};

use relock_tests::*;

#[tokio::test]
async fn a_failed_give_back_at_shutdown_names_its_semaphore() {
    let captured = capture_traces(tracing::Level::WARN, "");
    let server = server();
    let c = client(&server).await;
    let sem = c.permit_expirable_semaphore("p97-slots");
    assert!(sem.try_set_permits(1).await.unwrap());
    let permit = sem.acquire(None).await.unwrap();
    // The count key now holds a hash: permits_release.lua answers WRONGTYPE.
    server.cmd(&["DEL", "p97-slots"]).unwrap();
    server.cmd(&["HSET", "p97-slots", "a", "b"]).unwrap();
    bounded(Duration::from_secs(10), "shutdown", c.shutdown()).await;
    drop(permit);
    let logs = captured.text();
    let line = logs
        .lines()
        .find(|l| l.contains("giving back a permit") && l.contains("at shutdown failed"))
        .unwrap_or_else(|| panic!("no warning: {logs}"));
    assert!(
        line.contains("WRONGTYPE"),
        "the warning hides the cause: {line}"
    );
    assert!(
        line.contains("p97-slots"),
        "the warning does not name the semaphore: {line}"
    );
}

#[tokio::test]
async fn a_give_back_at_shutdown_answered_with_an_error_does_not_hold_shutdown_for_a_command_timeout(
) {
    let server = server();
    let c = client(&server).await; // command timeout 1 s
    let sem = c.permit_expirable_semaphore("p97b");
    assert!(sem.try_set_permits(1).await.unwrap());
    let permit = sem.acquire(None).await.unwrap();
    server.cmd(&["DEL", "p97b"]).unwrap();
    server.cmd(&["HSET", "p97b", "a", "b"]).unwrap();
    let start = Instant::now();
    bounded(Duration::from_secs(10), "shutdown", c.shutdown()).await;
    let took = start.elapsed();
    drop(permit);
    assert!(
        took < Duration::from_millis(500),
        "shutdown took {took:?} retrying a WRONGTYPE reply"
    );
}

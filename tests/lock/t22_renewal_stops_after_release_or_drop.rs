//! After release or drop, renewal stops: no renew script runs for it, and a lock whose release
//! could not happen (Redis paused) is gone within one lease.

use std::time::Duration;

use relock_tests::*;

#[tokio::test]
async fn renewal_stops_after_release_or_drop() {
    let server = server();
    let c = client_with_lease(&server, Duration::from_millis(600)).await;

    // Dropped guard: released in the background, and never renewed again.
    let g = c.lock("t22:dropped").lock().await.unwrap();
    drop(g);
    wait_until(Duration::from_secs(2), "dropped guard released", || async {
        server.dbsize().unwrap() <= 1
    })
    .await
    .unwrap();
    assert_nothing_left(&server).await;
    server.reset_stats().unwrap();
    // Three renewal periods with nothing held: the watchdog sends nothing.
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(
        server.command_calls("evalsha").unwrap(),
        0,
        "renewals after release"
    );

    // A renewed lock whose release is lost: stop Redis from answering the release, then resume.
    // The client forgot the hold, so the key must expire within one lease of the release.
    let g = c.lock("t22:unreleased").lock().await.unwrap();
    server.pause().unwrap();
    let unlock = tokio::spawn(g.unlock());
    let gave_up = wait_until(Duration::from_secs(3), "the unlock to time out", || async {
        unlock.is_finished()
    })
    .await;
    server.resume().unwrap();
    gave_up.unwrap();
    assert!(
        unlock.await.unwrap().is_err(),
        "the release cannot succeed while Redis is paused"
    );
    wait_until(
        Duration::from_millis(900),
        "the unreleased lock to expire within a lease",
        || async { !server.keys().unwrap().iter().any(|k| k == "t22:unreleased") },
    )
    .await
    .unwrap();
    assert_eq!(c.held_locks(), 0);
    assert_nothing_left(&server).await;
}

//! `SCRIPT FLUSH` between operations, and while a watchdog-renewed lock is held, is invisible
//! to users: every acquire, renewal and release still works.

use std::time::Duration;

use relock_tests::*;

#[tokio::test]
async fn script_flush_mid_run_is_survived() {
    let server = server();
    let c = client_with_lease(&server, Duration::from_millis(600)).await;
    let held = c.lock("t40:renewed").lock().await.unwrap();
    for i in 0..20 {
        if i % 5 == 0 {
            server.script_flush().unwrap();
        }
        let g = c.lock(format!("t40:{i}")).lock().await.unwrap();
        g.unlock().await.unwrap();
    }
    server.script_flush().unwrap();
    // Two renewal periods after the flush: the watchdog reloaded its script and renewed.
    let calls = server.command_calls("eval").unwrap();
    wait_until(
        Duration::from_secs(2),
        "a renewal through EVAL after the flush",
        || async { server.command_calls("eval").unwrap() > calls },
    )
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(!held.is_lost());
    assert!(
        c.lock("t40:renewed")
            .remaining_lease()
            .await
            .unwrap()
            .unwrap()
            > Duration::from_millis(200)
    );
    server.script_flush().unwrap();
    held.unlock().await.unwrap();
    assert_nothing_left(&server).await;
}

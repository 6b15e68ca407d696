//! When shutdown's leave of the line fails with a server error, its warning names that error
//! (redacted), not "shut down": once shutdown has begun, the client's error mapping would read
//! every error as `Shutdown`, and the cause would be lost.

use std::time::Duration;

use relock_tests::*;

#[tokio::test]
async fn a_failed_leave_of_the_line_at_shutdown_is_logged_with_its_cause() {
    let captured = capture_traces(tracing::Level::WARN, "");
    let server = server();
    let h = client(&server).await;
    let x = fair_client(&server, Duration::from_secs(30)).await;
    let holder = h.fair_lock("k3").lock().await.unwrap();
    let lock = x.fair_lock("k3");
    // A waiter kept alive but not polled once it is in line (so its own leave does not run).
    let mut w = Box::pin(lock.lock());
    tokio::select! {
        r = &mut w => panic!("the waiter returned early: {r:?}"),
        r = wait_until(Duration::from_secs(3), "W in line", || async {
            fair_line(&server, "k3").len() == 1
        }) => { r.unwrap(); }
    }
    // The line's key now holds a string: the leave meets WRONGTYPE.
    server.cmd(&["DEL", "relock_fair_line:{k3}"]).unwrap();
    server.cmd(&["SET", "relock_fair_line:{k3}", "x"]).unwrap();
    bounded(Duration::from_secs(10), "shutdown", x.shutdown()).await;
    drop(w);
    drop(holder);
    let logs = captured.text();
    let line = logs
        .lines()
        .find(|l| l.contains("leaving the line at shutdown failed"))
        .unwrap_or_else(|| panic!("no warning: {logs}"));
    assert!(
        line.contains("WRONGTYPE"),
        "the warning hides the cause: {line}"
    );
}

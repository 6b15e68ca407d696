//! A process that takes a semaphore permit, drops its guard and returns from `main` without
//! `Client::shutdown` (its runtime ends before the background give-back runs) still gives the
//! permit back: three such runs leave the semaphore at its 3 permits, not 2, 1, 0.

use std::process::Command;

use relock_tests::*;

#[tokio::test]
async fn semaphore_permits_dropped_as_main_returns_come_back() {
    let server = server();
    let url = server.url();
    for run in 1..=3 {
        let out = Command::new(env!("CARGO_BIN_EXE_relock-test-exit"))
            .args([url.as_str(), "s100", "permit-dropped"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "run {run}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("HELD 1"));
        // Given back before the process ended: no warning of a loss.
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("lost"), "run {run}: {err}");
        assert_eq!(
            server.cmd(&["GET", "s100"]).unwrap().as_string().as_deref(),
            Some("3"),
            "run {run}"
        );
    }
    // Its request keys expire by themselves.
    let left = server.keys().unwrap();
    assert!(
        left.iter()
            .all(|k| k == "s100" || k.starts_with("relock_request:{s100}:")),
        "{left:?}"
    );
}

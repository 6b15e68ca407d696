//! Clean exits: a process on a current-thread runtime that returns from `main` using the
//! documented pattern (`lock.with(..)` or a held guard, then `client.shutdown()`) leaves no key
//! behind. One that returns while holding without `shutdown()` leaves the lock held (its lease
//! ends it), and its client's last handle logs a warning naming the lock.

use std::process::{Command, Stdio};
use std::time::Duration;

use relock_tests::*;

const EXIT_BIN: &str = env!("CARGO_BIN_EXE_relock-test-exit");

fn run(server: &RedisServer, name: &str, mode: &str) -> (bool, String, String) {
    let out = Command::new(EXIT_BIN)
        .args([&server.url(), name, mode])
        .stdin(Stdio::null())
        .output()
        .expect("run relock-test-exit");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn returning_from_main_with_the_documented_pattern_leaves_no_key() {
    let server = server();
    for mode in ["with", "shutdown"] {
        let name = format!("t67:{mode}");
        let (ok, out, err) = run(&server, &name, mode);
        assert!(ok && out.starts_with("HELD "), "{mode}: {out} {err}");
        assert!(!err.contains("WARN"), "{mode} warned: {err}");
        // The lock key is gone at once (the fencing counter follows a second later).
        assert_eq!(
            server.cmd(&["EXISTS", &name]).unwrap().as_int(),
            Some(0),
            "{mode} left its lock"
        );
        assert_nothing_left(&server).await;
    }

    // Without shutdown the lock outlives the process, and the client says so on its way out.
    let (ok, out, err) = run(&server, "t67:dropped", "dropped");
    assert!(ok && out.starts_with("HELD "), "{out} {err}");
    let pttl = server
        .cmd(&["PTTL", "t67:dropped"])
        .unwrap()
        .as_int()
        .unwrap();
    assert!(
        pttl > 20_000,
        "still held for (most of) its 30 s lease: {pttl}"
    );
    assert!(
        err.contains("WARN") && err.contains("t67:dropped") && err.contains("shutdown"),
        "the dropped client names what it left: {err}"
    );
    let c = client(&server).await;
    assert!(c.lock("t67:dropped").force_unlock().await.unwrap());
    c.shutdown().await;
    wait_until(Duration::from_secs(3), "the counter to expire", || async {
        server.dbsize().unwrap() == 0
    })
    .await
    .unwrap();
    assert_nothing_left(&server).await;
}

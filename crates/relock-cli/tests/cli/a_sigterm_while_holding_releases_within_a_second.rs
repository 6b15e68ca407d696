//! `relock demo` killed with SIGTERM (and SIGINT) while its workers hold the lock: the process
//! exits with 143 (130) within a second, and the lock key is gone by then: the locks were
//! released, not left to expire with their 30 s lease.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use relock_testkit::{wait_until, RedisServer};

const RELOCK: &str = env!("CARGO_BIN_EXE_relock");

#[tokio::test]
async fn a_sigterm_while_holding_releases_within_a_second() {
    let server = RedisServer::start().expect("start redis-server");
    for (signal, code) in [("-TERM", 143), ("-INT", 130)] {
        let name = format!("cli-signal{signal}");
        let mut child = Command::new(RELOCK)
            .args(["demo", "--url", &server.url(), "--seconds", "60"])
            .args(["--hold-ms", "100", "--workers", "2", "--name", &name])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run relock demo");
        // The demo's workers are taking turns: the lock is held.
        wait_until(
            Duration::from_secs(10),
            "the demo to hold its lock",
            || async { server.cmd(&["EXISTS", &name]).unwrap().as_int() == Some(1) },
        )
        .await
        .unwrap();
        let sent = Instant::now();
        let status = Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let exit = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(
                sent.elapsed() < Duration::from_secs(3),
                "relock demo did not exit within 3 s of {signal}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        let took = sent.elapsed();
        assert_eq!(exit.code(), Some(code), "exit code after {signal}");
        assert!(
            took < Duration::from_secs(1),
            "exited {took:?} after {signal}"
        );
        assert_eq!(
            server.cmd(&["EXISTS", &name]).unwrap().as_int(),
            Some(0),
            "the lock was left held after {signal}"
        );
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        assert!(err.contains("locks released"), "{err}");
        assert!(
            !err.contains('\u{1b}'),
            "no ANSI codes when stderr is not a terminal: {err:?}"
        );
    }
}

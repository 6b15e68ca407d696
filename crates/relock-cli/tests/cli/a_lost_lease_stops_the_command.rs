//! When the lock is lost while the command runs (here a fixed `--lease` runs out), `relock run`
//! sends the command SIGTERM and exits with 76; with `--on-lost ignore` the command runs on
//! and `relock` still exits with 76 once it ends.

use std::process::Command;
use std::time::{Duration, Instant};

use relock_testkit::RedisServer;

const RELOCK: &str = env!("CARGO_BIN_EXE_relock");

#[tokio::test]
async fn a_lost_lease_stops_the_command() {
    let server = RedisServer::start().expect("start redis-server");
    let log = std::env::temp_dir().join(format!("relock-lost-{}", std::process::id()));
    let _ = std::fs::remove_file(&log);
    let script = format!(
        "trap 'echo term >> {0}; kill $!; exit 0' TERM; sleep 20 & wait",
        log.display()
    );
    let started = Instant::now();
    let status = Command::new(RELOCK)
        .args([
            "run",
            "cli-lost",
            "--url",
            &server.url(),
            "--lease",
            "600ms",
        ])
        .args(["--kill-after", "2s", "--shell", &script])
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(76));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(std::fs::read_to_string(&log).unwrap().trim(), "term");
    let _ = std::fs::remove_file(&log);

    // A process the command started is stopped too: nothing goes on writing without the lock.
    let marker = format!("relock-grandchild-{}", std::process::id());
    let status = Command::new(RELOCK)
        .args([
            "run",
            "cli-lost",
            "--url",
            &server.url(),
            "--lease",
            "500ms",
        ])
        .args(["--kill-after", "300ms", "--shell"])
        .arg(format!("sh -c 'sleep 20; echo {marker}'; true"))
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(76));
    let left = Command::new("pgrep")
        .args(["-f", &marker])
        .output()
        .unwrap();
    assert!(
        left.stdout.is_empty(),
        "the command's child outlived the lost lock: {}",
        String::from_utf8_lossy(&left.stdout)
    );

    // Ignored: the command finishes on its own; the exit code still says the lock was lost.
    let status = Command::new(RELOCK)
        .args([
            "run",
            "cli-lost",
            "--url",
            &server.url(),
            "--lease",
            "300ms",
        ])
        .args(["--on-lost", "ignore", "--shell", "sleep 1; exit 0"])
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(76));
}

//! `relock run --no-wait` exits with 75 (EX_TEMPFAIL, like `flock -n -E 75`) at once when the
//! lock is held, and `--wait D` after D; the command never runs; `--conflict-exit-code`
//! changes the code.

use std::process::Command;
use std::time::{Duration, Instant};

use relock_testkit::RedisServer;

const RELOCK: &str = env!("CARGO_BIN_EXE_relock");

#[tokio::test]
async fn run_gives_the_conflict_code_when_the_lock_is_not_had_in_time() {
    let server = RedisServer::start().expect("start redis-server");
    let client = relock::Client::connect(server.url()).await.unwrap();
    let held = client.lock("cli-conflict").lock().await.unwrap();
    let marker = std::env::temp_dir().join(format!("relock-conflict-{}", std::process::id()));
    let _ = std::fs::remove_file(&marker);
    let touch = format!("touch {}", marker.display());

    let run = |extra: &[&str]| {
        let started = Instant::now();
        let status = Command::new(RELOCK)
            .args(["run", "cli-conflict", "--url", &server.url()])
            .args(extra)
            .args(["--shell", &touch])
            .status()
            .unwrap();
        (status.code(), started.elapsed())
    };
    let (code, took) = run(&["--no-wait"]);
    assert_eq!(code, Some(75));
    assert!(took < Duration::from_secs(3), "{took:?}");
    let (code, took) = run(&["--wait", "400ms"]);
    assert_eq!(code, Some(75));
    assert!(took >= Duration::from_millis(400), "waited {took:?}");
    let (code, _) = run(&["-n", "--conflict-exit-code", "9"]);
    assert_eq!(code, Some(9));
    assert!(!marker.exists(), "the command ran without the lock");

    // Its message cannot be written (stderr is a closed pipe): still 75, no panic.
    let mut child = Command::new(RELOCK)
        .args([
            "run",
            "cli-conflict",
            "--url",
            &server.url(),
            "--no-wait",
            "--shell",
            &touch,
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stderr.take());
    assert_eq!(child.wait().unwrap().code(), Some(75));

    held.unlock().await.unwrap();
    let (code, _) = run(&["--no-wait"]);
    assert_eq!(code, Some(0));
    assert!(marker.exists());
    let _ = std::fs::remove_file(&marker);
    client.shutdown().await;
}

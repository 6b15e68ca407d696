//! `relock run --spin`: the spin lock on the plain lock's keys. A plain holder of the name
//! keeps it out (`--no-wait` exits 75 at once, `--wait 300ms` after 300 ms, the command never
//! runs); two spin runs never interleave; while one runs nothing on the server is subscribed
//! to anything, and `relock status` shows its hold as a plain lock's; the command sees
//! RELOCK_KIND=spin; `--spin` with `--fair` is a usage error.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use relock_testkit::{wait_until, RedisServer};

const RELOCK: &str = env!("CARGO_BIN_EXE_relock");

#[tokio::test]
async fn run_spin_excludes_a_plain_holder_never_interleaves_and_subscribes_to_nothing() {
    let server = RedisServer::start().expect("start redis-server");
    let url = server.url();
    let marker = std::env::temp_dir().join(format!("relock-spin-{}", std::process::id()));
    let _ = std::fs::remove_file(&marker);
    let touch = format!("touch {}", marker.display());

    // A plain holder keeps a spin run out.
    let client = relock::Client::connect(&url).await.unwrap();
    let held = client.lock("cli-spin").lock().await.unwrap();
    let run = |extra: &[&str]| {
        let started = Instant::now();
        let status = Command::new(RELOCK)
            .args(["run", "--spin", "--url", &url])
            .args(extra)
            .args(["cli-spin", "--shell", &touch])
            .status()
            .unwrap();
        (status.code(), started.elapsed())
    };
    let (code, took) = run(&["--no-wait"]);
    assert_eq!(code, Some(75));
    assert!(took < Duration::from_secs(3), "{took:?}");
    let (code, took) = run(&["--wait", "300ms"]);
    assert_eq!(code, Some(75));
    assert!(took >= Duration::from_millis(300), "{took:?}");
    assert!(!marker.exists(), "the command ran without the lock");
    held.unlock().await.unwrap();

    // Two spin runs, one after the other; neither subscribes.
    let log = std::env::temp_dir().join(format!("relock-spin-log-{}", std::process::id()));
    let _ = std::fs::remove_file(&log);
    let spawn = |who: &str| {
        let script = format!(
            "echo start-{who}-$RELOCK_KIND >> {0}; sleep 0.4; echo end-{who} >> {0}",
            log.display()
        );
        Command::new(RELOCK)
            .args([
                "run", "--spin", "--url", &url, "cli-spin", "--shell", &script,
            ])
            .stdout(Stdio::null())
            .spawn()
            .unwrap()
    };
    let (mut a, mut b) = (spawn("a"), spawn("b"));
    wait_until(Duration::from_secs(5), "a spin run to hold", || async {
        server.cmd(&["EXISTS", "cli-spin"]).unwrap().as_int() == Some(1)
    })
    .await
    .unwrap();
    assert!(server.pubsub_channels().unwrap().is_empty());
    assert_eq!(
        server
            .pubsub_numsub("redisson_lock__channel:{cli-spin}")
            .unwrap(),
        0
    );
    let status = Command::new(RELOCK)
        .args(["status", "--url", &url, "cli-spin"])
        .output()
        .unwrap();
    assert_eq!(status.status.code(), Some(0), "held, as a plain lock");
    assert!(a.wait().unwrap().success());
    assert!(b.wait().unwrap().success());
    let lines: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(lines.len(), 4, "{lines:?}");
    for pair in lines.chunks(2) {
        let who = pair[0]
            .strip_prefix("start-")
            .and_then(|r| r.strip_suffix("-spin"))
            .expect("a start first, RELOCK_KIND=spin");
        assert_eq!(pair[1], format!("end-{who}"), "interleaved: {lines:?}");
    }
    assert_ne!(lines[0], lines[2], "both ran: {lines:?}");
    let _ = std::fs::remove_file(&log);

    // Not with --fair.
    let both = Command::new(RELOCK)
        .args(["run", "--spin", "--fair", "--url", &url, "cli-spin", "true"])
        .output()
        .unwrap();
    assert_eq!(both.status.code(), Some(2));
    client.shutdown().await;
}

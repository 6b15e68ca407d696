//! `relock force-unlock --yes NAME` while `relock run NAME -- cmd` runs: the running holder
//! hears of it on the lock's channel and stops its command at once (SIGTERM, exit 76), long
//! before its watchdog's next renewal (10 s with the default 30 s lease). (Issue 22: the first
//! job got SIGTERM 8 s later, while a second `relock run` had already taken the lock.)

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use relock_testkit::{wait_until, RedisServer};

const RELOCK: &str = env!("CARGO_BIN_EXE_relock");

#[tokio::test]
async fn a_force_unlock_stops_the_running_holders_command_at_once() {
    let server = RedisServer::start().expect("start redis-server");
    let mut run = Command::new(RELOCK)
        .args([
            "run",
            "cli-forced",
            "--url",
            &server.url(),
            "--kill-after",
            "2s",
        ])
        .args(["--shell", "trap 'kill $!; exit 0' TERM; sleep 30 & wait"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // Held, and its hold listens on the channel.
    wait_until(
        Duration::from_secs(5),
        "the run to hold and listen",
        || async {
            server
                .pubsub_numsub("redisson_lock__channel:{cli-forced}")
                .unwrap()
                == 1
        },
    )
    .await
    .unwrap();
    let forced = Instant::now();
    let out = Command::new(RELOCK)
        .args([
            "force-unlock",
            "cli-forced",
            "--yes",
            "--url",
            &server.url(),
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let status = loop {
        if let Some(s) = run.try_wait().unwrap() {
            break s;
        }
        assert!(
            forced.elapsed() < Duration::from_secs(5),
            "the run kept its command going after the force-unlock"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let took = forced.elapsed();
    assert_eq!(status.code(), Some(76));
    println!("the run stopped {took:?} after the force-unlock");
}

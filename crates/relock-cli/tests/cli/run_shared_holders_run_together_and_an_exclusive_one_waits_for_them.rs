//! `relock run -s` holds the read-write lock's shared side (as `flock -s`): a second shared run
//! gets in beside a running one, an exclusive run (`-x`) does not (exit 75 with `--no-wait`),
//! and gets in once the shared one ended.

use std::process::{Command, Stdio};
use std::time::Duration;

use relock_testkit::{wait_until, RedisServer};

const RELOCK: &str = env!("CARGO_BIN_EXE_relock");

#[tokio::test]
async fn run_shared_holders_run_together_and_an_exclusive_one_waits_for_them() {
    let server = RedisServer::start().expect("start redis-server");
    let url = server.url();
    let run = |args: &[&str]| {
        Command::new(RELOCK)
            .args(["run", "--url", &url])
            .args(args)
            .stdout(Stdio::null())
            .status()
            .unwrap()
            .code()
    };
    let mut holder = Command::new(RELOCK)
        .args(["run", "--url", &url, "-s", "cli-rw", "sleep", "3"])
        .spawn()
        .unwrap();
    let client = relock::Client::connect(url.clone()).await.unwrap();
    let read = client.read_write_lock("cli-rw").read_lock();
    wait_until(
        Duration::from_secs(5),
        "the shared holder to hold",
        || async { read.is_locked().await.unwrap() },
    )
    .await
    .unwrap();

    assert_eq!(
        run(&["-s", "--no-wait", "cli-rw", "true"]),
        Some(0),
        "shared beside shared"
    );
    assert_eq!(
        run(&["-x", "--no-wait", "cli-rw", "true"]),
        Some(75),
        "exclusive beside shared"
    );
    // Waiting, the exclusive one gets in once the shared holder ends.
    assert_eq!(run(&["-x", "--wait", "10", "cli-rw", "true"]), Some(0));
    assert_eq!(holder.wait().unwrap().code(), Some(0));
    assert!(!read.is_locked().await.unwrap());
    client.shutdown().await;
}

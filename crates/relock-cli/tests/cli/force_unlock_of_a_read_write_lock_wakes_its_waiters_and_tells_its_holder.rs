//! `relock force-unlock NAME --yes` on a read-write lock deletes it through the read-write
//! lock's own channel, where its holders and waiters listen: a `relock run -s` waiting for it
//! runs at once (not when the lease it read runs out), and the writer that held it is told at
//! once that its hold is lost.

use std::process::{Command, Stdio};
use std::time::Duration;

use relock_testkit::{wait_until, RedisServer};

const RELOCK: &str = env!("CARGO_BIN_EXE_relock");

#[tokio::test]
async fn force_unlock_of_a_read_write_lock_wakes_its_waiters_and_tells_its_holder() {
    let server = RedisServer::start().expect("start redis-server");
    let client = relock::Client::connect(server.url()).await.unwrap();
    // The default lease, 30 s: a waiter that is not woken sleeps far past the bounds below.
    let held = client
        .read_write_lock("cli-rwf")
        .write_lock()
        .lock()
        .await
        .unwrap();
    let run = Command::new(RELOCK)
        .args(["run", "-s", "cli-rwf", "--url", &server.url(), "--"])
        .args(["sh", "-c", "exit 4"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    wait_until(Duration::from_secs(5), "the run to wait", || async {
        server.pubsub_numsub("redisson_rwlock:{cli-rwf}").unwrap() >= 2
    })
    .await
    .unwrap();

    let out = Command::new(RELOCK)
        .args(["force-unlock", "cli-rwf", "--yes", "--url", &server.url()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("deleted cli-rwf") && text.contains(held.owner()),
        "{text}"
    );

    let run = std::sync::Mutex::new(run);
    wait_until(
        Duration::from_secs(5),
        "the waiting run to finish",
        || async { run.lock().unwrap().try_wait().unwrap().is_some() },
    )
    .await
    .unwrap();
    assert_eq!(run.into_inner().unwrap().wait().unwrap().code(), Some(4));
    tokio::time::timeout(Duration::from_secs(5), held.lost())
        .await
        .expect("the holder told of the deletion at once");
    drop(held);
    client.shutdown().await;
}

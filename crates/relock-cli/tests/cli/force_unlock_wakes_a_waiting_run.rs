//! `relock force-unlock NAME --yes` deletes a lock whoever holds it, prints what it deleted,
//! and wakes a `relock run` waiting for it, which then runs its command. Without `--yes` it
//! deletes nothing.

use std::process::{Command, Stdio};
use std::time::Duration;

use relock_testkit::{wait_until, RedisServer};

const RELOCK: &str = env!("CARGO_BIN_EXE_relock");

#[tokio::test]
async fn force_unlock_wakes_a_waiting_run() {
    let server = RedisServer::start().expect("start redis-server");
    // Its hold's watch would subscribe too: the run's subscription is what this test counts.
    let client = relock::Client::builder()
        .url(server.url())
        .watch_holds(false)
        .build()
        .await
        .unwrap();
    let held = client.lock("cli-force").lock().await.unwrap();
    let run = Command::new(RELOCK)
        .args([
            "run",
            "cli-force",
            "--url",
            &server.url(),
            "--",
            "sh",
            "-c",
            "exit 4",
        ])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    wait_until(Duration::from_secs(5), "the run to wait", || async {
        server
            .pubsub_numsub("redisson_lock__channel:{cli-force}")
            .unwrap()
            == 1
    })
    .await
    .unwrap();

    let out = Command::new(RELOCK)
        .args(["force-unlock", "cli-force", "--url", &server.url()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "refused without --yes");
    assert_eq!(
        server.cmd(&["EXISTS", "cli-force"]).unwrap().as_int(),
        Some(1)
    );

    let out = Command::new(RELOCK)
        .args(["force-unlock", "cli-force", "--yes", "--url", &server.url()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("deleted cli-force") && text.contains(held.owner()),
        "{text}"
    );

    // The waiting run is woken, takes the lock and runs its command.
    let run = std::sync::Mutex::new(run);
    wait_until(Duration::from_secs(5), "the run to finish", || async {
        run.lock().unwrap().try_wait().unwrap().is_some()
    })
    .await
    .unwrap();
    let mut run = run.into_inner().unwrap();
    assert_eq!(run.wait().unwrap().code(), Some(4));
    // A hash that is not a lock is left alone.
    server
        .cmd(&["HSET", "page-views", "home", "41", "about", "3"])
        .unwrap();
    let out = Command::new(RELOCK)
        .args([
            "force-unlock",
            "page-views",
            "--yes",
            "--url",
            &server.url(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not look like a lock"));
    assert_eq!(
        server.cmd(&["EXISTS", "page-views"]).unwrap().as_int(),
        Some(1)
    );
    server.cmd(&["DEL", "page-views"]).unwrap();

    // The old holder learns it is gone at its next renewal; here it just lets go.
    drop(held);
    client.shutdown().await;
}

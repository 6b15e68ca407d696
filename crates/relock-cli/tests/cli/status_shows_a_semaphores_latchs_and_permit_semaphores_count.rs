//! `relock status` on the counting kinds: a semaphore's or latch's key (a string holding an
//! integer) is shown as its count, a permit-expirable semaphore's with the permits held; in
//! text and in `--json`. The exit code stays the locks' (0: no lock named is free), and a
//! string that is not a count is still "not a lock" (exit 2).

use std::process::Command;
use std::time::Duration;

use relock_testkit::RedisServer;

const RELOCK: &str = env!("CARGO_BIN_EXE_relock");

fn status(server: &RedisServer, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(RELOCK)
        .args(["status", "--url", &server.url()])
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[tokio::test]
async fn status_shows_a_semaphores_latchs_and_permit_semaphores_count() {
    let server = RedisServer::start().expect("start redis-server");
    let client = relock::Client::connect(server.url()).await.unwrap();
    let sem = client.semaphore("st-sem");
    assert!(sem.try_set_permits(3).await.unwrap());
    sem.acquire(1).await.unwrap().forget();
    assert!(client
        .count_down_latch("st-latch")
        .try_set_count(4)
        .await
        .unwrap());
    let permits = client.permit_expirable_semaphore("st-permits");
    assert!(permits.try_set_permits(2).await.unwrap());
    let held = permits
        .acquire(Some(Duration::from_secs(30)))
        .await
        .unwrap();

    let (code, text) = status(&server, &["st-sem", "st-latch", "st-permits"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains(
            "st-sem: a count of 2 (a semaphore's available permits, or a count-down latch's count)"
        ),
        "{text}"
    );
    assert!(text.contains("st-latch: a count of 4"), "{text}");
    assert!(
        text.contains("st-permits: a permit-expirable semaphore, 1 available, 1 held"),
        "{text}"
    );
    let (code, json) = status(&server, &["--json", "st-sem", "st-permits"]);
    assert_eq!(code, Some(0));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v[0]["kind"], "count", "{v}");
    assert_eq!(v[0]["count"], 2, "{v}");
    assert_eq!(v[1]["kind"], "permit_semaphore", "{v}");
    assert_eq!(v[1]["count"], 1, "{v}");
    assert_eq!(v[1]["permits_held"], 1, "{v}");

    server.cmd(&["SET", "st-text", "hello"]).unwrap();
    let (code, _) = status(&server, &["st-text"]);
    assert_eq!(code, Some(2));

    held.release().await.unwrap();
    client.shutdown().await;
}

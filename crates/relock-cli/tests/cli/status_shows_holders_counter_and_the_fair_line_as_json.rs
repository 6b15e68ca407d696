//! `relock status --json` for a plain lock held by relock, a fair lock with a waiter in line,
//! a lock held by a Redisson-layout owner, and a free lock: holders with their layout and
//! count, the lease, the fencing counter and the line. Exit 0 when every lock named is held,
//! 1 when one is free.

use std::process::Command;
use std::time::Duration;

use relock_testkit::{wait_until, RedisServer};

const RELOCK: &str = env!("CARGO_BIN_EXE_relock");

fn status(server: &RedisServer, names: &[&str]) -> (Option<i32>, serde_json::Value) {
    let out = Command::new(RELOCK)
        .args(["status", "--json", "--url", &server.url()])
        .args(names)
        .output()
        .unwrap();
    let v = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    (out.status.code(), v)
}

#[tokio::test]
async fn status_shows_holders_counter_and_the_fair_line_as_json() {
    let server = RedisServer::start().expect("start redis-server");
    let client = relock::Client::connect(server.url()).await.unwrap();
    let plain = client.lock("st-plain").lock().await.unwrap();
    let fair = client.fair_lock("st-fair").lock().await.unwrap();
    let other = relock::Client::connect(server.url()).await.unwrap();
    let waiter = tokio::spawn({
        let lock = other.fair_lock("st-fair");
        async move { lock.lock().await.map(|g| g.fencing_token()) }
    });
    // The waiters are the line's members scored as tickets (the server clock in µs, at least
    // 10^15); each one's heartbeat deadline and first lease score below.
    wait_until(Duration::from_secs(5), "the waiter in line", || async {
        server
            .cmd(&[
                "ZCOUNT",
                "relock_fair_line:{st-fair}",
                "1000000000000000",
                "+inf",
            ])
            .unwrap()
            .as_int()
            == Some(1)
    })
    .await
    .unwrap();
    // A Redisson RLock's hold: <uuid>:<thread id> -> count.
    server
        .cmd(&[
            "HSET",
            "st-java",
            "5e3b5a1c-8f0e-4b7a-9a51-3c1f3e0b7d21:57",
            "2",
        ])
        .unwrap();
    server.cmd(&["PEXPIRE", "st-java", "30000"]).unwrap();

    let (code, v) = status(&server, &["st-plain", "st-fair", "st-java"]);
    assert_eq!(code, Some(0), "{v}");
    let p = &v[0];
    assert_eq!(p["name"], "st-plain");
    assert_eq!(p["held"], true);
    assert_eq!(p["holders"][0]["field"], plain.owner());
    assert_eq!(p["holders"][0]["layout"], "relock");
    assert_eq!(p["holders"][0]["count"], 1);
    assert!(p["pttl_ms"].as_i64().unwrap() > 20_000, "{p}");
    assert_eq!(p["counter"].as_u64(), Some(plain.fencing_token()));
    assert_eq!(p["queue"].as_array().unwrap().len(), 0);
    let f = &v[1];
    assert_eq!(f["holders"][0]["field"], fair.owner());
    let line = f["queue"].as_array().unwrap();
    assert_eq!(line.len(), 1, "{f}");
    assert_eq!(line[0]["position"], 0);
    assert!(line[0]["ticket"].as_u64().unwrap() >= 1_000_000_000_000_000);
    let deadline = line[0]["deadline_ms"].as_i64().unwrap();
    assert!(
        (1_000_000_000_000..1_000_000_000_000_000).contains(&deadline),
        "the deadline in server ms: {deadline}"
    );
    let j = &v[2];
    assert_eq!(j["holders"][0]["layout"], "redisson");
    assert_eq!(j["holders"][0]["count"], 2);

    // One free lock among them: exit 1.
    let (code, v) = status(&server, &["st-plain", "st-free"]);
    assert_eq!(code, Some(1));
    assert_eq!(v[1]["held"], false);
    assert_eq!(v[1]["pttl_ms"], serde_json::Value::Null);

    // A Redisson read-write lock's hash (a `mode` field) is shown as one: held for writing.
    server
        .cmd(&["HSET", "st-rw", "mode", "write", "5e3b5a1c:57:write", "1"])
        .unwrap();
    // Redisson gives every lock hash a lease; a hash without one is not a lock.
    server.cmd(&["PEXPIRE", "st-rw", "30000"]).unwrap();
    let out = Command::new(RELOCK)
        .args(["status", "st-rw", "--url", &server.url()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("st-rw: held for writing (a read-write lock)")
            && text.contains("holder 5e3b5a1c:57:write (redisson), count 1"),
        "{text}"
    );
    // Not a lock (a hash of something else), or no Redis to ask: exit 2, "cannot tell",
    // never 1 ("free").
    server.cmd(&["HSET", "st-bad", "x", "not a count"]).unwrap();
    for url in [server.url(), "redis://127.0.0.1:1".to_string()] {
        let out = Command::new(RELOCK)
            .args(["status", "st-bad", "--url", &url])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{url}");
        assert!(!out.stderr.is_empty());
    }
    server.cmd(&["DEL", "st-bad"]).unwrap();
    server.cmd(&["DEL", "st-rw"]).unwrap();

    // A counter of another type: the error names the counter, not the (absent) lock.
    server
        .cmd(&["HSET", "redisson_lock_token:{st-ct}", "x", "1"])
        .unwrap();
    let out = Command::new(RELOCK)
        .args(["status", "st-ct", "--url", &server.url()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("redisson_lock_token:{st-ct}"), "{err}");

    // A read only: it answers while writes are paused (as during a failover).
    server.cmd(&["CLIENT", "PAUSE", "3000", "WRITE"]).unwrap();
    let (code, v) = status(&server, &["st-plain"]);
    server.cmd(&["CLIENT", "UNPAUSE"]).unwrap();
    assert_eq!(code, Some(0), "{v}");

    plain.unlock().await.unwrap();
    fair.unlock().await.unwrap();
    waiter.await.unwrap().unwrap();
    server.cmd(&["DEL", "st-java"]).unwrap();
    client.shutdown().await;
    other.shutdown().await;
}

//! A user granted exactly what `crates/relock/docs/operations.md` lists for every kind on one
//! server (its lock keys, their channels as channels, the script and pub/sub commands) acquires,
//! waits and is woken, renews, releases, reads the status of and force-unlocks every lock kind
//! (plain, fair, read-write), and acquires, waits, renews and releases the counting kinds
//! (semaphore, permit semaphore, latch); without the channel grant its release is refused with a
//! typed `Permission` error that names the lock and the refused channel. Nothing outside the grant
//! is ever sent (the server's `ACL LOG` stays empty). (Issue 22: the release script passed the
//! channel as a key, so such a user could acquire but never release, and every lock blocked
//! everyone for its whole lease.)

use std::time::Duration;

use relock::Error;
use relock_tests::*;

async fn app(server: &RedisServer, user: &str) -> relock::Client {
    relock::Client::builder()
        .url(format!("redis://{user}:app-pw@127.0.0.1:{}", server.port()))
        .watchdog_lease(acl::LEASE)
        .fair_heartbeat(Duration::from_millis(500))
        .command_timeout(Duration::from_secs(1))
        .connect_timeout(Duration::from_secs(2))
        .build()
        .await
        .expect("connect as the least-privilege user")
}

#[tokio::test]
async fn a_least_privilege_acl_user_runs_every_lock_kind_and_a_missing_grant_is_named() {
    let server = server();
    acl::set_user(&server, "app", "app-pw", &acl::one_server());
    let logs = capture_traces(tracing::Level::WARN, "");
    let c = app(&server, "app").await;
    let other = app(&server, "app").await;

    // Every kind: the lock kinds acquire, wait and wake across clients, renew past three
    // leases, report their status and are force-unlocked; the counting kinds acquire, wait
    // and wake, and renew a permit. Then the read-write lock's writer against a writer.
    let left = acl::exercise_every_kind(&c, &other).await;
    acl::exercise(
        Box::new(c.read_write_lock("orders:rw").write_lock()),
        Box::new(other.read_write_lock("orders:rw").write_lock()),
    )
    .await;
    for key in &left {
        server.cmd(&["DEL", key]).unwrap();
    }
    c.shutdown().await;
    other.shutdown().await;
    // Nothing was refused on the way (the server's ACL LOG is empty: no command outside the
    // grant was even tried), and nothing warned of a refusal.
    acl::assert_nothing_refused(&server);
    assert_eq!(logs.count("NOPERM"), 0, "{}", logs.text());

    // Without the channel grant: the release is refused, naming the lock and the channel.
    let without: Vec<&str> = acl::one_server()
        .into_iter()
        .filter(|r| !r.starts_with("&redisson_lock__channel"))
        .collect();
    acl::set_user(&server, "nochannel", "app-pw", &without);
    let c = app(&server, "nochannel").await;
    let g = c.lock("orders:1").lock().await.unwrap();
    let e = g.unlock().await.unwrap_err();
    match &e {
        Error::Permission { key, source, .. } => {
            assert_eq!(key, "orders:1");
            assert!(
                source.to_string().contains("channel"),
                "names the channel: {source}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(!e.is_transient());
    let text = e.to_string();
    assert!(
        text.contains("relock::guide::operations") && !text.contains("app-pw"),
        "{text}"
    );
    c.shutdown().await;
    server.cmd(&["FLUSHALL"]).unwrap();
    assert_nothing_left(&server).await;
}

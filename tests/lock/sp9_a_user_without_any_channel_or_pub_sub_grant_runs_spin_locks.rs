//! A spin lock needs no pub/sub: a user granted the one-server ACL line of
//! `crates/relock/docs/operations.md` without any channel pattern and without `PUBLISH`,
//! `SUBSCRIBE` and `UNSUBSCRIBE` acquires, waits (on another client) and takes over after the
//! release, re-enters, renews past three leases and releases spin locks, and the server refuses
//! nothing (`ACL LOG` stays empty; no warning).

use std::time::Duration;

use relock_tests::*;

async fn app(server: &RedisServer) -> relock::Client {
    relock::Client::builder()
        .url(format!("redis://app:app-pw@127.0.0.1:{}", server.port()))
        .watchdog_lease(acl::LEASE)
        .command_timeout(Duration::from_secs(1))
        .connect_timeout(Duration::from_secs(2))
        .build()
        .await
        .expect("connect as the user without pub/sub")
}

#[tokio::test]
async fn a_user_without_any_channel_or_pub_sub_grant_runs_spin_locks() {
    let server = server();
    let rules: Vec<&str> = acl::one_server()
        .into_iter()
        .filter(|r| !r.starts_with('&') && !["+publish", "+subscribe", "+unsubscribe"].contains(r))
        .collect();
    assert!(rules.contains(&"resetchannels"));
    acl::set_user(&server, "app", "app-pw", &rules);
    let logs = capture_traces(tracing::Level::WARN, "");
    let c = app(&server).await;
    let other = app(&server).await;

    let lock = c.spin_lock("orders:spin");
    let g = lock.lock().await.unwrap();
    let again = g.scope(lock.lock()).await.unwrap();
    assert_eq!(lock.hold_count().await.unwrap(), 2);
    again.unlock().await.unwrap();
    let waiter = {
        let theirs = other.spin_lock("orders:spin");
        tokio::spawn(async move {
            let g = theirs.lock().await.unwrap();
            let t = g.fencing_token();
            g.unlock().await.unwrap();
            t
        })
    };
    let first = g.valid_until();
    wait_until(Duration::from_secs(4), "three renewals", || async {
        g.valid_until() >= first + acl::PAST_TWO_LEASES
    })
    .await
    .unwrap();
    assert!(!g.is_lost() && !waiter.is_finished());
    let token = g.fencing_token();
    g.unlock().await.unwrap();
    let t = bounded(Duration::from_secs(3), "the spin waiter", waiter)
        .await
        .unwrap();
    assert!(t > token);
    let g = other
        .spin_lock("orders:spin")
        .try_lock_for(Duration::from_millis(50))
        .await
        .unwrap()
        .expect("free");
    g.unlock().await.unwrap();

    c.shutdown().await;
    other.shutdown().await;
    acl::assert_nothing_refused(&server);
    assert_eq!(logs.count("NOPERM"), 0, "{}", logs.text());
    assert_nothing_left(&server).await;
}

//! A user granted exactly the one-server line of `crates/relock/docs/operations.md`
//! ("Least-privilege ACL users") on every master runs the quorum lock: it acquires, a waiter of
//! another client is woken by the release, renews past three leases (with the restart quarantine's
//! uptime checks), and a force-unlock is heard by the holder. No master refused anything (`ACL LOG`
//! empty everywhere).

use std::time::Duration;

use relock_testkit::RedisMasters;
use relock_tests::*;

// Current-thread: the capture of warnings sees every task's events.
#[tokio::test]
async fn a_least_privilege_acl_user_on_every_master_runs_the_quorum_lock_with_the_documented_line()
{
    let masters = RedisMasters::start(3).unwrap();
    for m in masters.servers() {
        acl::set_user(m, "app", "app-pw", &acl::one_server());
    }
    let urls: Vec<String> = masters
        .servers()
        .iter()
        .map(|m| format!("redis://app:app-pw@{}", m.addr()))
        .collect();
    let app = || {
        relock::QuorumClient::builder()
            .urls(urls.clone())
            .node_timeout(Duration::from_millis(50))
            .watchdog_lease(acl::LEASE)
            .restart_quarantine(Duration::from_millis(200))
            .connect_timeout(Duration::from_secs(2))
            .build()
    };
    let logs = capture_traces(tracing::Level::WARN, "");
    let c = app().await.expect("connect as the least-privilege user");
    let other = app().await.expect("connect as the least-privilege user");

    // The masters just started: they vote once their quarantine has passed.
    for client in [&c, &other] {
        wait_until(Duration::from_secs(3), "the quarantine to pass", || async {
            matches!(client.lock("orders:warm").try_lock().await, Ok(Some(_)))
        })
        .await
        .unwrap();
    }
    acl::exercise(
        Box::new(c.lock("orders:quorum")),
        Box::new(other.lock("orders:quorum")),
    )
    .await;

    c.shutdown().await;
    other.shutdown().await;
    for m in masters.servers() {
        acl::assert_nothing_refused(m);
    }
    assert_eq!(logs.count("NOPERM"), 0, "{}", logs.text());
    for m in masters.servers() {
        assert_nothing_left(m).await;
    }
}

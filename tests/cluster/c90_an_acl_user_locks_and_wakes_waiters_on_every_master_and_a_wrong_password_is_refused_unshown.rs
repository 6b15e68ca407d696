//! A cluster whose 6 nodes refuse unauthenticated clients (default user with an admin
//! password, replicas syncing as an ACL user): a client with `redis-cluster://user:pass@…`
//! takes and releases plain and fair locks on a name owned by each master, with rising tokens;
//! a waiter of another client is woken through sharded pub/sub within 500 ms (its shard channel
//! seen by the kit, which authenticates); a wrong password, the user's password without the
//! user name, and no credentials at all are refused with `Error::Connection` naming Redis's
//! reason (`WRONGPASS`, `NOAUTH`), whose text shows no secret; nothing is left.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use relock::Error;
use relock_testkit::{RedisCluster, ServerOptions};
use relock_tests::*;

const ADMIN_PASSWORD: &str = "c90-admin-Pw-3d1e";
const USER: &str = "relock-app";
const PASSWORD: &str = "c90-app-Pw-8b2f";
const WRONG_PASSWORD: &str = "c90-wrong-Pw-5a70";

fn builder(url: String) -> relock::ClientBuilder {
    relock::Client::builder()
        .url(url)
        .connect_timeout(Duration::from_secs(2))
        .command_timeout(Duration::from_secs(2))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acl_user_locks_and_wakes_waiters_on_every_master_and_a_wrong_password_is_refused_unshown(
) {
    let cluster = RedisCluster::start_with(ServerOptions {
        password: Some(ADMIN_PASSWORD.into()),
        acl_user: Some((USER.into(), PASSWORD.into())),
        ..ServerOptions::default()
    })
    .expect("start a password-protected cluster");
    let url = cluster.url_with_acl_user();
    assert!(url.starts_with(&format!("redis-cluster://{USER}:{PASSWORD}@")));
    // Replicas synced as the ACL user; the kit's helpers authenticate.
    assert_eq!(cluster.masters().len(), 3);
    assert!(cluster.keys().is_empty());
    assert!(cluster.shard_channels().is_empty());

    let (a, b) = (
        builder(url.clone())
            .build()
            .await
            .expect("connect as the ACL user"),
        builder(url.clone())
            .build()
            .await
            .expect("connect as the ACL user"),
    );
    let shown = format!("{a:?}");
    assert!(
        shown.contains(&format!("{USER}:***@")) && !shown.contains(PASSWORD),
        "{shown}"
    );

    // One name per master.
    let names = cluster.one_name_per_master("c90").unwrap();
    let ports: HashSet<u16> = names.iter().map(|(_, p)| *p).collect();
    assert_eq!(ports.len(), 3, "one name on each master");

    for (name, port) in &names {
        let fair = format!("{name}:fair");
        for lock in [a.lock(name.clone()), a.fair_lock(fair.clone())] {
            // Taken and released twice; the key is on the master that owns the slot.
            let g1 = lock.lock().await.unwrap();
            let owner = cluster.master_of(lock.name()).unwrap();
            assert!(
                owner.keys().unwrap().contains(&lock.name().to_string()),
                "{} on {}",
                lock.name(),
                owner.port()
            );
            let t1 = g1.fencing_token();
            g1.unlock().await.unwrap();
            let g2 = lock.lock().await.unwrap();
            assert!(g2.fencing_token() > t1, "tokens rise on {}", lock.name());
            g2.unlock().await.unwrap();
        }
        assert_eq!(cluster.master_of(name).unwrap().port(), *port);

        // A waiter of the other client, woken by the release through sharded pub/sub.
        // (A fair lock's waiters listen on its own channel: crates/relock/docs/data-layout.md.)
        for (held, waiting, prefix) in [
            (
                a.lock(name.clone()),
                b.lock(name.clone()),
                "redisson_lock__channel",
            ),
            (
                a.fair_lock(fair.clone()),
                b.fair_lock(fair.clone()),
                "relock_fair_channel",
            ),
        ] {
            let held = held.lock().await.unwrap();
            let channel = format!("{prefix}:{{{}}}", waiting.name());
            let before = b.parked_waiters();
            let waiter =
                tokio::spawn(async move { waiting.lock().await.map(|g| (Instant::now(), g)) });
            wait_until(Duration::from_secs(5), "the waiter to park", || async {
                b.parked_waiters() > before
            })
            .await
            .unwrap();
            assert!(
                cluster.shard_channels().contains(&channel),
                "{channel} among {:?}",
                cluster.shard_channels()
            );
            let released = Instant::now();
            held.unlock().await.unwrap();
            let (at, g) = bounded(Duration::from_secs(5), "the woken waiter", waiter)
                .await
                .unwrap()
                .unwrap();
            assert!(
                at - released < Duration::from_millis(500),
                "{channel}: woken {:?} after the release",
                at - released
            );
            g.unlock().await.unwrap();
        }
    }

    // Refused: a wrong password, the user's password for the default user, no credentials.
    let nodes = cluster.url().replacen("redis-cluster://", "", 1);
    acl::assert_refused_unshown(
        vec![
            (
                "wrong password",
                format!("redis-cluster://{USER}:{WRONG_PASSWORD}@{nodes}"),
                "WRONGPASS",
            ),
            (
                "no user name",
                format!("redis-cluster://:{PASSWORD}@{nodes}"),
                "WRONGPASS",
            ),
            ("no credentials", cluster.url(), "NOAUTH"),
        ],
        builder,
        |e, cause| {
            matches!(e, Error::Authentication { url, source }
                if url.starts_with("redis-cluster://") && source.details().contains(cause))
                && !e.is_transient()
        },
        &[PASSWORD, WRONG_PASSWORD, ADMIN_PASSWORD],
    )
    .await;

    a.shutdown().await;
    b.shutdown().await;
    wait_until(
        Duration::from_secs(5),
        "nothing left on the cluster",
        || async { cluster.keys().is_empty() && cluster.shard_channels().is_empty() },
    )
    .await
    .unwrap_or_else(|e| panic!("{e}: {:?} {:?}", cluster.keys(), cluster.shard_channels()));
}

//! `ClusterPubSub::Classic` (Redisson before 3.29, or `shardedSubscriptionMode: OFF`): on a
//! 3-master cluster, waiters on names owned by each master are woken by the release (classic
//! PUBLISH, broadcast to every node) within 500 ms, not by the 30 s lease; renewal batches still
//! keep to one slot; no shard channel is used; nothing is left.

use std::time::Duration;

use relock::ClusterPubSub;
use relock_testkit::RedisCluster;
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn classic_pubsub_on_a_cluster_wakes_waiters_on_every_master() {
    let cluster = RedisCluster::start().unwrap();
    let connect = || async {
        relock::Client::builder()
            .url(cluster.url())
            .cluster_pubsub(ClusterPubSub::Classic)
            .watchdog_lease(Duration::from_millis(900))
            .command_timeout(Duration::from_secs(2))
            .build()
            .await
            .expect("connect to the cluster")
    };
    let (a, b) = (connect().await, connect().await);
    // One name per master.
    let names = cluster.one_name_per_master("c70").unwrap();
    // All three held at once by one client, past a renewal (batched per slot, or CROSSSLOT).
    let mut held = Vec::new();
    for (name, _) in &names {
        held.push(a.lock(name.clone()).lock().await.unwrap());
    }
    let since = std::time::Instant::now();
    wait_until(Duration::from_secs(3), "two leases to pass", || async {
        since.elapsed() > Duration::from_millis(1800)
    })
    .await
    .unwrap();
    assert!(held.iter().all(|g| !g.is_lost()), "renewed across slots");
    for ((name, _), held) in names.iter().zip(held) {
        let lock = b.lock(name.clone());
        let waiter =
            tokio::spawn(async move { lock.lock().await.map(|g| (std::time::Instant::now(), g)) });
        wait_until(Duration::from_secs(5), "the waiter to park", || async {
            b.parked_waiters() == 1
        })
        .await
        .unwrap();
        // Subscribed with classic SUBSCRIBE (on some node), no shard channel anywhere.
        let channel = format!("redisson_lock__channel:{{{name}}}");
        let classic = cluster
            .nodes()
            .iter()
            .any(|n| n.pubsub_channels().unwrap().contains(&channel));
        assert!(classic, "classic subscription to {channel}");
        assert!(
            cluster.shard_channels().is_empty(),
            "no shard channel in classic mode"
        );
        let released = std::time::Instant::now();
        held.unlock().await.unwrap();
        let (at, g) = bounded(Duration::from_secs(5), "woken waiter", waiter)
            .await
            .unwrap()
            .unwrap();
        assert!(
            at - released < Duration::from_millis(500),
            "{name}: woken {:?} after the release",
            at - released
        );
        g.unlock().await.unwrap();
    }
    a.shutdown().await;
    b.shutdown().await;
    let masters: Vec<&RedisServer> = cluster.masters();
    assert_nothing_left_on(&masters).await;
}

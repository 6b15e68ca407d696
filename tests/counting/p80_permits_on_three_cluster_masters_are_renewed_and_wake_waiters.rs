//! On a 3-master Redis Cluster, with sharded pub/sub: renewed permits of semaphores on every
//! master (and one with a `{tag}` in its name) are renewed in per-slot batches past 3 leases; a
//! waiter parked on an SSUBSCRIBEd shard channel is woken by a release at once; at the end
//! every permit is back and the timeouts sets are empty.

use std::time::{Duration, Instant};

use relock_testkit::RedisCluster;
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permits_on_three_cluster_masters_are_renewed_and_wake_waiters() {
    let cluster = RedisCluster::start().unwrap();
    let lease = Duration::from_millis(900);
    let connect = || async {
        relock::Client::builder()
            .url(cluster.url())
            .watchdog_lease(lease)
            .command_timeout(Duration::from_secs(2))
            .build()
            .await
            .expect("connect to the cluster")
    };
    let (a, b) = (connect().await, connect().await);
    // One name per master, and a tagged one.
    let names = cluster.one_name_per_master("p80").unwrap();
    let mut names: Vec<String> = names.into_iter().map(|(n, _)| n).collect();
    names.push("p80:{t}:x".into());
    let mut guards = Vec::new();
    for name in &names {
        let sem = a.permit_expirable_semaphore(name.clone());
        assert!(sem.try_set_permits(2).await.unwrap());
        guards.push(sem.acquire(None).await.unwrap());
        guards.push(sem.acquire(None).await.unwrap());
    }
    let start = Instant::now();
    while start.elapsed() < lease * 3 + Duration::from_millis(300) {
        assert!(
            guards.iter().all(|g| !g.is_lost()),
            "lost after {:?}",
            start.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for name in &names {
        let sem = b.permit_expirable_semaphore(name.clone());
        assert_eq!(
            (
                sem.available().await.unwrap(),
                sem.acquired().await.unwrap()
            ),
            (0, 2),
            "{name}"
        );
    }

    // A waiter per semaphore on b, each woken by a's release of one permit.
    for (i, name) in names.iter().enumerate() {
        let sem = b.permit_expirable_semaphore(name.clone());
        let waiter =
            tokio::spawn(async move { sem.acquire(None).await.map(|g| (Instant::now(), g)) });
        let channel = if name.contains('{') {
            format!("redisson_sc:{name}")
        } else {
            format!("redisson_sc:{{{name}}}")
        };
        wait_until(
            Duration::from_secs(5),
            "the waiter to park on its shard channel",
            || async { b.parked_waiters() == 1 && cluster.shard_channels().contains(&channel) },
        )
        .await
        .unwrap();
        let released = Instant::now();
        guards.remove(0).release().await.unwrap();
        let (at, got) = bounded(Duration::from_secs(3), "the woken waiter", waiter)
            .await
            .unwrap()
            .unwrap();
        assert!(
            at - released < Duration::from_millis(300),
            "`{name}` woken {:?} after the release",
            at - released
        );
        got.release().await.unwrap();
        guards.remove(0).release().await.unwrap();
        assert_eq!(guards.len(), 2 * (names.len() - i - 1));
    }
    for name in &names {
        let sem = b.permit_expirable_semaphore(name.clone());
        assert_eq!(
            (
                sem.available().await.unwrap(),
                sem.acquired().await.unwrap()
            ),
            (2, 0),
            "{name}"
        );
    }
    assert_eq!(a.held_permits() + b.held_permits(), 0);
    crate::no_subscriptions(&[&a, &b]).await;
    a.shutdown().await;
    b.shutdown().await;
}

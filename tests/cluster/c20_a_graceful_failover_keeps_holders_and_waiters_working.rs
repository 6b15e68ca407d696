//! A master holding a lock fails over gracefully (CLUSTER FAILOVER on its replica). The holder
//! keeps its lock (renewed by the watchdog on the new master), a parked waiter on the other
//! client resubscribes and is woken by the release, and new locks work.

use std::time::{Duration, Instant};

use relock_testkit::RedisCluster;
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graceful_failover_keeps_holders_and_waiters_working() {
    let cluster = RedisCluster::start().unwrap();
    let client = || async {
        relock::Client::builder()
            .url(cluster.url())
            .watchdog_lease(Duration::from_millis(1500))
            .command_timeout(Duration::from_secs(2))
            .build()
            .await
            .unwrap()
    };
    let (a, b) = (client().await, client().await);
    let held = a.lock("c20").lock().await.unwrap();
    let waiter = {
        let l = b.lock("c20");
        tokio::spawn(async move { l.lock().await.map(|g| (Instant::now(), g)) })
    };
    wait_until(Duration::from_secs(3), "the waiter to park", || async {
        b.parked_waiters() == 1
    })
    .await
    .unwrap();

    let master = cluster.master_of("c20").unwrap();
    let promoted = tokio::task::block_in_place(|| cluster.failover(master)).unwrap();
    wait_until(
        Duration::from_secs(5),
        "every node to know the new master",
        || async {
            cluster
                .master_of("c20")
                .is_ok_and(|m| m.port() == promoted.port())
        },
    )
    .await
    .unwrap();

    // Two leases later the holder still holds it: renewals reached the new master.
    let since = Instant::now();
    wait_until(Duration::from_secs(5), "two leases", || async {
        since.elapsed() > Duration::from_millis(3000)
    })
    .await
    .unwrap();
    assert!(!held.is_lost(), "renewed across the failover");
    assert!(b.lock("c20").is_locked().await.unwrap());

    let released = Instant::now();
    held.unlock().await.unwrap();
    let (at, g) = bounded(Duration::from_secs(5), "waiter after the failover", waiter)
        .await
        .unwrap()
        .unwrap();
    println!("waiter woken {:?} after the release", at - released);
    assert!(
        at - released < Duration::from_secs(1),
        "{:?}",
        at - released
    );
    g.unlock().await.unwrap();
    lock_and_unlock(&a.lock("c20:new")).await;
    a.shutdown().await;
    b.shutdown().await;
    wait_until(Duration::from_secs(5), "nothing left", || async {
        cluster.keys().is_empty()
    })
    .await
    .unwrap();
}

//! 100 lock names spread over all 3 masters (50 plain, 50 fair), 2 clients × 1 worker per name,
//! 5 non-atomic increments each: every count is exact, tokens rise per name, a parked waiter
//! is woken through sharded pub/sub (not by the 30 s lease), and nothing is left.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use relock_testkit::RedisCluster;
use relock_tests::*;

async fn cluster_client(cluster: &RedisCluster) -> relock::Client {
    relock::Client::builder()
        .url(cluster.url())
        .command_timeout(Duration::from_secs(2))
        .build()
        .await
        .expect("connect to the cluster")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_and_fair_locks_on_a_hundred_names_across_three_masters_count_exactly() {
    let cluster = RedisCluster::start().unwrap();
    let (a, b) = (
        cluster_client(&cluster).await,
        cluster_client(&cluster).await,
    );
    let names: Vec<String> = (0..100).map(|i| format!("c10:{i}")).collect();
    let masters: HashSet<u16> = names
        .iter()
        .map(|n| cluster.master_of(n).unwrap().port())
        .collect();
    assert_eq!(masters.len(), 3, "the names cover all 3 masters");

    let counts = Arc::new(Mutex::new(vec![0u32; 100]));
    let mut workers = Vec::new();
    for (i, name) in names.iter().enumerate() {
        for c in [&a, &b] {
            let lock = if i < 50 {
                c.lock(name.clone())
            } else {
                c.fair_lock(name.clone())
            };
            let counts = counts.clone();
            workers.push(tokio::spawn(async move {
                let mut last = 0;
                for _ in 0..5 {
                    let g = lock.lock().await.unwrap();
                    assert!(g.fencing_token() > last);
                    last = g.fencing_token();
                    let v = counts.lock().unwrap()[i];
                    tokio::task::yield_now().await;
                    counts.lock().unwrap()[i] = v + 1;
                    g.unlock().await.unwrap();
                }
            }));
        }
    }
    for w in workers {
        bounded(Duration::from_secs(30), "worker", w).await.unwrap();
    }
    assert!(
        counts.lock().unwrap().iter().all(|&n| n == 10),
        "{:?}",
        counts.lock().unwrap()
    );

    // A parked waiter on each kind is woken by the release, not by the lease.
    for lock_of in [
        (|c: &relock::Client| c.lock("c10:wake")) as fn(&relock::Client) -> relock::Lock,
        |c: &relock::Client| c.fair_lock("c10:wake-fair"),
    ] {
        let held = lock_of(&a).lock().await.unwrap();
        let g = assert_release_wakes(&b, lock_of(&b), held).await;
        g.unlock().await.unwrap();
    }

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

//! A read-write lock on a 3-master Redis Cluster, one name per master: two clients' readers
//! share it, a writer is refused while they read, a reader parked behind a writer is woken
//! by the write release through the sharded channel (far sooner than the writer's 30 s
//! lease), the watchdog's read renewal (hash and timeout key in one slot) keeps a reader past
//! three short leases, and nothing is left behind.

use std::time::Duration;

use relock_testkit::RedisCluster;
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_cluster_readers_share_writers_exclude_and_a_write_release_wakes_readers() {
    let cluster = RedisCluster::start().unwrap();
    let connect = |lease: Duration| {
        let url = cluster.url();
        async move {
            relock::Client::builder()
                .url(url)
                .watchdog_lease(lease)
                .command_timeout(Duration::from_secs(2))
                .build()
                .await
                .expect("connect to the cluster")
        }
    };
    let a = connect(Duration::from_secs(30)).await;
    let b = connect(Duration::from_millis(600)).await;
    let names = cluster.one_name_per_master("r97").unwrap();
    for (name, _) in &names {
        let (ra, rb) = (
            a.read_write_lock(name.clone()),
            b.read_write_lock(name.clone()),
        );
        let r1 = ra.read_lock().lock().await.unwrap();
        let r2 = rb
            .read_lock()
            .try_lock()
            .await
            .unwrap()
            .expect("readers share");
        assert!(ra.write_lock().try_lock().await.unwrap().is_none());
        // b's reader (600 ms lease) is renewed past three leases while a's reads too.
        tokio::time::sleep(Duration::from_millis(2000)).await;
        assert!(!r2.is_lost(), "{name}: the renewed reader was lost");
        assert!(ra.write_lock().try_lock().await.unwrap().is_none());
        r1.unlock().await.unwrap();
        r2.unlock().await.unwrap();
        // A reader parked behind a writer is woken by the write release.
        let w = ra.write_lock().lock().await.unwrap();
        let reader = rb.read_lock();
        let parked = tokio::spawn(async move { reader.lock().await.map(|g| g.fencing_token()) });
        wait_until(Duration::from_secs(5), "b's reader parked", || async {
            b.parked_waiters() == 1
        })
        .await
        .unwrap();
        let wt = w.fencing_token();
        w.unlock().await.unwrap();
        let rt = bounded(
            Duration::from_secs(2),
            "the reader after the write release",
            parked,
        )
        .await
        .unwrap()
        .unwrap();
        assert!(
            rt > wt,
            "{name}: read token {rt} not above write token {wt}"
        );
    }
    wait_until(Duration::from_secs(3), "b's holds released", || async {
        b.held_locks() == 0
    })
    .await
    .unwrap();
    a.shutdown().await;
    b.shutdown().await;
    let _ = wait_until(Duration::from_secs(5), "no keys left", || async {
        cluster
            .keys()
            .iter()
            .all(|k| k.starts_with("redisson_lock_token:"))
    })
    .await;
    let left: Vec<String> = cluster
        .keys()
        .into_iter()
        .filter(|k| !k.starts_with("redisson_lock_token:"))
        .collect();
    assert!(left.is_empty(), "left: {left:?}");
}

//! With `sync_replicas(1, 300 ms)`, a lock is only handed out once a replica has it. When the
//! replica is stopped and its link cut (the situation that loses a lock in `c30`), the
//! acquisition fails with `ReplicationFailed { acked: 0 }` and the lock is released on the
//! master; so a failover cannot lose a lock the caller was told it holds. Once the replica is
//! back, locks work again.

use std::time::Duration;

use relock::Error;
use relock_testkit::RedisCluster;
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_replicas_refuses_a_lock_no_replica_acknowledged() {
    let bad = relock::Client::builder()
        .sync_replicas(0, Duration::from_millis(300))
        .build()
        .await;
    assert!(
        matches!(
            bad,
            Err(Error::InvalidArgument {
                name: "sync_replicas",
                ..
            })
        ),
        "{bad:?}"
    );

    let cluster = RedisCluster::start().unwrap();
    let client = relock::Client::builder()
        .url(cluster.url())
        .sync_replicas(1, Duration::from_millis(300))
        .command_timeout(Duration::from_secs(1))
        .build()
        .await
        .unwrap();
    let master = cluster.master_of("c50").unwrap();
    let replica = cluster.replica_of(master).unwrap();
    // A replica still on its first sync acknowledges nothing: wait for it before the first
    // lock, which must be acknowledged within 300 ms.
    tokio::task::block_in_place(|| cluster.wait_replica_synced(master)).unwrap();
    let lock = client.lock("c50");
    lock.lock().await.unwrap().unlock().await.unwrap();

    tokio::task::block_in_place(|| cluster.wait_replica_synced(master)).unwrap();
    replica.pause().unwrap();
    master.cmd(&["CLIENT", "KILL", "TYPE", "replica"]).unwrap();
    let r = lock.try_lock().await;
    let Err(Error::ReplicationFailed { acked, wanted, .. }) = &r else {
        panic!("{r:?}")
    };
    assert_eq!((*acked, *wanted), (0, 1));
    assert!(r.unwrap_err().to_string().contains("sync_replicas"));
    assert_eq!(
        master.cmd(&["EXISTS", "c50"]).unwrap().as_int(),
        Some(0),
        "released on the master"
    );

    replica.resume().unwrap();
    tokio::task::block_in_place(|| cluster.wait_ready()).unwrap();
    let g = eventually(
        Duration::from_secs(10),
        "a lock once the replica is back",
        || {
            let l = lock.clone();
            async move { l.try_lock().await.ok().flatten() }
        },
    )
    .await;
    g.unlock().await.unwrap();
    client.shutdown().await;
}

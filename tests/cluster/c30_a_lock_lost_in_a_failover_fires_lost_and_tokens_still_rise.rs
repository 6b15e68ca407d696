//! The lost-lock window of asynchronous replication, shown: the replica of the lock's master is
//! stopped and its link cut, the lock is taken (so only the master has it), the master is killed and the replica
//! takes over. The holder's `lost()` fires at its next renewal, and the next holder's fencing
//! token is still larger.

use std::time::{Duration, Instant};

use relock_testkit::RedisCluster;
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_lost_in_a_failover_fires_lost_and_tokens_still_rise() {
    let cluster = RedisCluster::start().unwrap();
    let lease = Duration::from_millis(1500);
    let a = relock::Client::builder()
        .url(cluster.url())
        .watchdog_lease(lease)
        .command_timeout(Duration::from_secs(1))
        .build()
        .await
        .unwrap();
    let master = cluster.master_of("c30").unwrap();
    let replica = cluster.replica_of(master).unwrap();
    // An earlier hold, so the counter exists on both master and replica.
    let first = a.lock("c30").lock().await.unwrap();
    let t0 = first.fencing_token();
    first.unlock().await.unwrap();
    tokio::task::block_in_place(|| cluster.wait_replica_synced(master)).unwrap();

    // Stop the replica and cut its link, so the next write reaches only the master.
    replica.pause().unwrap();
    master.cmd(&["CLIENT", "KILL", "TYPE", "replica"]).unwrap();
    let held = a.lock("c30").lock().await.unwrap();
    assert!(held.fencing_token() > t0);
    master.kill().unwrap();
    replica.resume().unwrap();
    let lost_at = Instant::now();
    tokio::task::block_in_place(|| cluster.takeover(master, replica)).unwrap();

    bounded(lease * 4, "lost() after the failover", held.lost()).await;
    println!("lost() fired {:?} after the master died", lost_at.elapsed());
    assert!(matches!(
        held.unlock().await,
        Err(relock::Error::LockLost { .. })
    ));
    let next = bounded(
        Duration::from_secs(5),
        "lock on the new master",
        a.lock("c30").lock(),
    )
    .await
    .unwrap();
    assert!(
        next.fencing_token() > t0,
        "tokens do not go back after a failover"
    );
    next.unlock().await.unwrap();
    a.shutdown().await;
}

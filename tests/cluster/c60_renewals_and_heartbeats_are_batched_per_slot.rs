//! On a cluster a script may touch only one slot: 60 locks on names in many slots, held by one
//! client with a 600 ms watchdog lease, are all renewed for more than three leases; and 20 fair
//! waiters on 20 names keep their places through several heartbeat deadlines.

use std::time::{Duration, Instant};

use relock_testkit::RedisCluster;
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renewals_and_heartbeats_are_batched_per_slot() {
    let cluster = RedisCluster::start().unwrap();
    let connect = || async {
        relock::Client::builder()
            .url(cluster.url())
            .watchdog_lease(Duration::from_millis(600))
            // A deadline of 1 s (refreshed every 200 ms): a waiter whose heartbeat comes after
            // its deadline is evicted and joins again, and a loaded machine can hold a
            // heartbeat back by several hundred ms.
            .fair_heartbeat(Duration::from_secs(1))
            .command_timeout(Duration::from_secs(1))
            .build()
            .await
            .unwrap()
    };
    let (a, b) = (connect().await, connect().await);
    let mut guards = Vec::new();
    for i in 0..60 {
        guards.push(a.lock(format!("c60:{i}")).lock().await.unwrap());
    }
    // 20 fair locks held by `a`, each with a waiter from `b` in line.
    let mut fair = Vec::new();
    let mut waiters = Vec::new();
    for i in 0..20 {
        let name = format!("c60:fair:{i}");
        // A fixed lease longer than the test: a waiter parks until the holder's lease would
        // end, so it asks nothing of the server meanwhile and only its heartbeats keep its
        // deadline ahead (with a 600 ms lease its own re-checks would, heartbeats or not).
        let held = a
            .fair_lock(name.clone())
            .with_lease(Duration::from_secs(60));
        fair.push(held.lock().await.unwrap());
        let l = b.fair_lock(name);
        waiters.push(tokio::spawn(async move {
            l.lock().await.map(|g| g.fencing_token())
        }));
    }
    wait_until(Duration::from_secs(5), "20 parked fair waiters", || async {
        b.parked_waiters() == 20
    })
    .await
    .unwrap();
    let since = Instant::now();
    wait_until(
        Duration::from_secs(5),
        "five leases and three heartbeat deadlines",
        || async { since.elapsed() > Duration::from_millis(3000) },
    )
    .await
    .unwrap();
    assert!(guards.iter().all(|g| !g.is_lost()), "every lock renewed");
    assert!(fair.iter().all(|g| !g.is_lost()));
    assert_eq!(b.queued_waiters(), 20, "no waiter evicted");
    for i in 0..20 {
        let name = format!("c60:fair:{i}");
        let master = cluster
            .master_of(&format!("relock_fair_line:{{{name}}}"))
            .unwrap();
        let line = fair_line(master, &name);
        assert_eq!(line.len(), 1, "waiter {i} still in line: {line:?}");
        // Kept there by its heartbeats, not by the lack of anyone to evict it: nothing else
        // runs on these locks meanwhile, so a waiter whose heartbeats all failed (a batch
        // across slots) would still be in line, its deadline long past.
        let now = server_ms(master);
        let deadlines = fair_heartbeats(master, &name);
        assert_eq!(
            deadlines.iter().map(|(f, _)| f).collect::<Vec<_>>(),
            [&line[0]],
            "waiter {i}'s deadline: {deadlines:?}"
        );
        assert!(
            deadlines[0].1 > now,
            "waiter {i}'s deadline {} ms is past (now {now}): its heartbeats stopped",
            deadlines[0].1
        );
    }
    drop(guards);
    drop(fair);
    for w in waiters {
        bounded(Duration::from_secs(5), "fair waiter", w)
            .await
            .unwrap()
            .unwrap();
    }
    a.shutdown().await;
    b.shutdown().await;
    wait_until(Duration::from_secs(5), "nothing left", || async {
        cluster.keys().is_empty() && cluster.shard_channels().is_empty()
    })
    .await
    .unwrap_or_else(|e| panic!("{e}: {:?}", cluster.keys()));
}

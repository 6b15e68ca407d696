//! On a 3-master Redis Cluster, with sharded pub/sub: for a semaphore and a latch on each
//! master, a parked waiter is woken by the release or count-down message itself (each one
//! counted by `relock_wakeups_total`), through an SSUBSCRIBEd shard channel; a latch name
//! whose Redisson channel would hash to another slot is refused; nothing is left.

use std::time::Duration;

use metrics_util::debugging::DebuggingRecorder;
use relock::Error;
use relock_testkit::RedisCluster;
use relock_tests::*;

// A current-thread runtime: the local recorder sees what every task records.
#[tokio::test]
async fn semaphores_and_latches_wake_waiters_across_three_cluster_masters() {
    let recorder = DebuggingRecorder::new();
    let _local = metrics::set_default_local_recorder(&recorder);
    let cluster = RedisCluster::start().unwrap();
    let connect = || async {
        relock::Client::builder()
            .url(cluster.url())
            .command_timeout(Duration::from_secs(2))
            .build()
            .await
            .expect("connect to the cluster")
    };
    let (a, b) = (connect().await, connect().await);
    // One name per master.
    let names = cluster.one_name_per_master("s80").unwrap();
    for (name, _) in &names {
        // Semaphore: b's release wakes a's waiter.
        let sem = a.semaphore(name.clone());
        let waiter = tokio::spawn(async move { sem.acquire(1).await.map(kept) });
        let channel = format!("redisson_sc:{{{name}}}");
        wait_until(
            Duration::from_secs(5),
            "the waiter to park on its shard channel",
            || async { a.parked_waiters() == 1 && cluster.shard_channels().contains(&channel) },
        )
        .await
        .unwrap();
        crate::wakeups(&recorder); // resets the counter
        b.semaphore(name.clone()).release(1).await.unwrap();
        bounded(Duration::from_secs(3), "the semaphore waiter", waiter)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            crate::wakeups(&recorder),
            1,
            "`{name}`: not woken by its message"
        );
        assert_eq!(b.semaphore(name.clone()).available().await.unwrap(), 0);

        // Latch: b's count-down opens a's two waiters with one message.
        let latch_name = format!("{name}:latch");
        assert!(b
            .count_down_latch(latch_name.clone())
            .try_set_count(1)
            .await
            .unwrap());
        let mut waiters = Vec::new();
        for _ in 0..2 {
            let latch = a.count_down_latch(latch_name.clone());
            waiters.push(tokio::spawn(async move { latch.wait().await }));
        }
        let channel = format!("redisson_countdownlatch__channel__{{{latch_name}}}");
        wait_until(
            Duration::from_secs(5),
            "the latch waiters to park",
            || async { a.parked_waiters() == 2 && cluster.shard_channels().contains(&channel) },
        )
        .await
        .unwrap();
        crate::wakeups(&recorder); // resets the counter
        b.count_down_latch(latch_name.clone())
            .count_down()
            .await
            .unwrap();
        for w in waiters {
            bounded(Duration::from_secs(3), "the latch waiters", w)
                .await
                .unwrap()
                .unwrap();
        }
        assert_eq!(
            crate::wakeups(&recorder),
            1,
            "`{latch_name}`: not opened by its message"
        );
    }
    // A tagged semaphore name keeps its tag; a latch name whose channel lands elsewhere is refused.
    let tagged = a.semaphore("s80:{t}:x");
    tagged.release(1).await.unwrap();
    assert!(tagged.try_acquire(1).await.map(taken).unwrap());
    match a.count_down_latch("s80:{t}:latch").count().await {
        Err(Error::InvalidArgument {
            name: "name",
            reason,
        }) => {
            assert!(reason.contains("different slots"), "{reason}")
        }
        other => panic!("{other:?}"),
    }

    let mut expected: Vec<String> = names.iter().map(|(n, _)| n.clone()).collect();
    expected.push("s80:{t}:x".into());
    expected.sort();
    // The request keys of releases and count-downs are deleted once their replies are in,
    // in the background.
    let sorted_keys = || {
        let mut keys = cluster.keys();
        keys.sort();
        keys
    };
    let _ = wait_until(Duration::from_secs(3), "only the counts left", || async {
        sorted_keys() == expected
    })
    .await;
    let keys = sorted_keys();
    assert_eq!(
        keys, expected,
        "only the semaphores' counts (at 0) are left"
    );
    for k in &keys {
        for m in cluster.masters() {
            let _ = m.cmd(&["DEL", k]);
        }
    }
    wait_until(Duration::from_secs(5), "no shard channels left", || async {
        cluster.shard_channels().is_empty() && a.subscribed_channels() == 0
    })
    .await
    .unwrap();
    assert!(cluster.keys().is_empty());
}

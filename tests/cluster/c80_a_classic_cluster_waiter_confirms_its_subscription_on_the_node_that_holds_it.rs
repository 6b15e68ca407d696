//! `ClusterPubSub::Classic` on a cluster: fred sends a classic SUBSCRIBE to the node of its
//! client id's slot, and resolves it on write. The PING that confirms the subscription must go
//! to that same node: for several clients, every PING lands on the node that holds the
//! subscription. And with that node paused (CLIENT PAUSE 2 s) while the holder releases, the
//! waiter is not fooled into parking on an unconfirmed subscription: it takes the lock within
//! a few seconds, not at the holder's 10 s lease end. Found by review: before the fix the PING
//! went to another node and the waiter woke only at the lease end (9.99 s).

use std::time::{Duration, Instant};

use relock::ClusterPubSub;
use relock_testkit::{RedisCluster, RedisServer};
use relock_tests::*;

fn chan(name: &str) -> String {
    format!("redisson_lock__channel:{{{name}}}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_classic_cluster_waiter_confirms_its_subscription_on_the_node_that_holds_it() {
    let cluster = RedisCluster::start().unwrap();
    let connect = |lease: Duration| {
        let url = cluster.url();
        async move {
            relock::Client::builder()
                .url(url)
                .cluster_pubsub(ClusterPubSub::Classic)
                .watchdog_lease(lease)
                // The holder's hold watch would subscribe and PING on its own node, beside
                // the waiter's PINGs this test counts.
                .watch_holds(false)
                .command_timeout(Duration::from_secs(3))
                .build()
                .await
                .expect("connect to the cluster")
        }
    };
    let holder = connect(Duration::from_secs(10)).await;
    let masters: Vec<&RedisServer> = cluster.masters();

    // For a few clients (fred's ids are random), the confirming PING goes to the node that
    // holds the classic subscription.
    let mut last = None;
    for attempt in 0..3 {
        let w = connect(Duration::from_secs(10)).await;
        let probe = format!("c80:probe:{attempt}");
        for m in &masters {
            m.reset_stats().unwrap();
        }
        let held = holder.lock(&probe).lock().await.unwrap();
        let waiter = {
            let l = w.lock(&probe);
            tokio::spawn(async move { l.lock().await })
        };
        wait_until(Duration::from_secs(3), "probe waiter parked", || async {
            w.parked_waiters() == 1
        })
        .await
        .unwrap();
        let sub_port = masters
            .iter()
            .find(|m| m.pubsub_numsub(&chan(&probe)).unwrap() > 0)
            .map(|m| m.port())
            .expect("the probe waiter is subscribed on some master");
        let ping_ports: Vec<u16> = masters
            .iter()
            .filter(|m| m.command_calls("ping").unwrap() > 0)
            .map(|m| m.port())
            .collect();
        held.unlock().await.unwrap();
        drop(bounded(Duration::from_secs(5), "probe waiter", waiter).await);
        assert_eq!(
            ping_ports,
            vec![sub_port],
            "client {attempt}: PINGs on {ping_ports:?}, SUBSCRIBE on {sub_port}"
        );
        if let Some((old, _)) = last.replace((w, sub_port)) {
            relock::Client::shutdown(&old).await;
        }
    }
    let (w, sub_port) = last.unwrap();
    let sub_node = masters.iter().find(|m| m.port() == sub_port).unwrap();
    // A lock whose master is not the SUBSCRIBE node (attempts and the release are not paused).
    let name = (0..)
        .map(|i| format!("c80:{i}"))
        .find(|n| cluster.master_of(n).unwrap().port() != sub_port)
        .unwrap();

    let held = holder.lock(&name).lock().await.unwrap();
    sub_node.client_pause(Duration::from_millis(2000)).unwrap();
    let waiter = {
        let l = w.lock(&name);
        tokio::spawn(async move { l.lock().await.map(|g| (Instant::now(), g)) })
    };
    // Released while the waiter's subscription cannot be confirmed (its node is paused).
    tokio::time::sleep(Duration::from_millis(300)).await;
    let released = Instant::now();
    held.unlock().await.unwrap();
    let (got_at, g) = bounded(Duration::from_secs(20), "waiter", waiter)
        .await
        .unwrap()
        .unwrap();
    let waited = got_at - released;
    drop(g);
    assert!(
        waited < Duration::from_secs(4),
        "the waiter took the lock {waited:?} after the release (lease 10 s): its subscription \
         was 'confirmed' by a PING to another node while the SUBSCRIBE had not landed"
    );
    w.shutdown().await;
    holder.shutdown().await;
}

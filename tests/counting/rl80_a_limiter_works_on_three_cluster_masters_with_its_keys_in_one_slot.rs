//! On a 3-master Redis Cluster, a limiter on each master grants exactly its rate across two
//! clients; its keys (Redisson's, tagged with the name) are all in the name's slot, on that
//! master, and a name with a `{tag}` of its own keeps it; nothing is left.

use std::time::Duration;

use relock::RateType;
use relock_testkit::RedisCluster;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limiter_works_on_three_cluster_masters_with_its_keys_in_one_slot() {
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
    let mut names: Vec<String> = cluster
        .one_name_per_master("rl80")
        .unwrap()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    names.push("rl80:{tag}:x".into());
    for name in &names {
        let (la, lb) = (a.rate_limiter(name.clone()), b.rate_limiter(name.clone()));
        assert!(la
            .try_set_rate(RateType::Overall, 3, Duration::from_secs(60))
            .await
            .unwrap());
        let mut granted = 0;
        for _ in 0..3 {
            granted += u32::from(la.try_acquire(1).await.unwrap());
            granted += u32::from(lb.try_acquire(1).await.unwrap());
        }
        assert_eq!(granted, 3, "{name}");
        assert_eq!(lb.available_permits().await.unwrap(), 0);
        let master = cluster.master_of(name).unwrap();
        let mut keys = master.keys().unwrap();
        keys.sort();
        let (value, permits) = if name.contains('{') {
            (format!("{name}:value"), format!("{name}:permits"))
        } else {
            (format!("{{{name}}}:value"), format!("{{{name}}}:permits"))
        };
        let mut expected = vec![name.clone(), value, permits];
        expected.sort();
        assert_eq!(keys, expected, "{name}");
        assert!(la.delete().await.unwrap());
    }
    a.shutdown().await;
    b.shutdown().await;
    assert!(cluster.keys().is_empty(), "{:?}", cluster.keys());
}

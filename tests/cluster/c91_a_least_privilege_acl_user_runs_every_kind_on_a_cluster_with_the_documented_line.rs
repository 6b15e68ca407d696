//! A user granted exactly the Cluster line of `crates/relock/docs/operations.md` ("Least-privilege
//! ACL users"), set on every node, runs every kind on a cluster: the lock kinds acquire, wait and
//! wake across clients (sharded pub/sub), renew, report their status and are force-unlocked; the
//! counting kinds acquire, wait and wake, and renew a permit. No node refused anything (`ACL LOG`
//! empty everywhere): nothing outside the line was even tried.

use std::time::Duration;

use relock_testkit::RedisCluster;
use relock_tests::*;

// Current-thread: the capture of warnings sees every task's events.
#[tokio::test]
async fn a_least_privilege_acl_user_runs_every_kind_on_a_cluster_with_the_documented_line() {
    let cluster = RedisCluster::start().expect("start a cluster");
    let addrs: Vec<String> = cluster.nodes().iter().map(|n| n.addr()).collect();
    let url = format!("redis-cluster://app:app-pw@{}", addrs.join(","));
    let nodes: Vec<&RedisServer> = cluster.nodes().iter().collect();
    let left =
        acl::every_kind_as_least_privileged(&nodes, &acl::cluster(), &url, Duration::from_secs(2))
            .await;
    for key in &left {
        cluster.master_of(key).unwrap().cmd(&["DEL", key]).unwrap();
    }
    wait_until(
        Duration::from_secs(5),
        "nothing left on the cluster",
        || async { cluster.keys().is_empty() && cluster.shard_channels().is_empty() },
    )
    .await
    .unwrap_or_else(|e| panic!("{e}: {:?} {:?}", cluster.keys(), cluster.shard_channels()));
}

//! A quorum waiter whose subscriptions are slow to land (1 s behind on every node) still wakes
//! on a release published while they are on the wire: the subscribe on each node returns only
//! once the node has registered it, so the retry after subscribing sees the lock free. Before
//! that fix (found by review) the waiter slept for the holder's lease (~7.7 s of 8 s).

use std::time::{Duration, Instant};

use relock_testkit::{ConnId, Direction, FaultProxy, Mode};
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quorum_waiter_whose_subscriptions_land_late_still_wakes_on_the_release() {
    let m = masters(3);
    let proxies: Vec<FaultProxy> = m
        .servers()
        .iter()
        .map(|s| FaultProxy::start(&s.addr()).unwrap())
        .collect();
    let waiter_client = relock::QuorumClient::builder()
        .urls(proxies.iter().map(FaultProxy::url))
        .node_timeout(Duration::from_millis(200))
        .watchdog_lease(Duration::from_secs(8))
        .restart_quarantine(Duration::ZERO)
        .connect_timeout(Duration::from_secs(5))
        .build()
        .await
        .unwrap();
    let holder = quorum_client(&m, Duration::from_secs(8), Duration::ZERO).await;
    // Each node's subscriber connection is the one the uptime checks (INFO every 250 ms on the
    // pool) never use.
    let before: Vec<Vec<(ConnId, u64)>> = proxies
        .iter()
        .map(|p| {
            p.conns()
                .into_iter()
                .map(|c| (c, p.conn_bytes(c, Direction::Up)))
                .collect()
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    for (p, b) in proxies.iter().zip(&before) {
        let idle: Vec<ConnId> = b
            .iter()
            .filter(|(c, n)| p.conn_bytes(*c, Direction::Up) == *n)
            .map(|(c, _)| *c)
            .collect();
        assert_eq!(
            idle.len(),
            1,
            "one idle (subscriber) connection per node: {idle:?}"
        );
        p.set_conn(
            idle[0],
            Direction::Up,
            Some(Mode::Delay(Duration::from_secs(1))),
        );
    }
    let name = "r31";
    let held = holder.lock(name).lock().await.unwrap();
    let waiter = {
        let lock = waiter_client.lock(name);
        tokio::spawn(async move { lock.lock().await.map(|g| (Instant::now(), g)) })
    };
    // Both attempts (before and after "subscribing") are refused well within the 1 s delay.
    wait_until(Duration::from_secs(3), "SUBSCRIBEs on the wire", || async {
        proxies.iter().all(|p| p.held(Direction::Up) > 0)
    })
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let channel = format!("redisson_lock__channel:{{{name}}}");
    let subscribed: Vec<i64> = m
        .servers()
        .iter()
        .map(|s| s.pubsub_numsub(&channel).unwrap())
        .collect();
    let released = Instant::now();
    held.unlock().await.unwrap();
    let (got_at, guard) = bounded(Duration::from_secs(15), "waiter", waiter)
        .await
        .unwrap()
        .unwrap();
    let waited = got_at - released;
    guard.unlock().await.unwrap();
    assert!(
        waited < Duration::from_secs(3),
        "released while the waiter slept (subscribers on the nodes at that moment: \
         {subscribed:?}); it got the lock only {waited:?} later (lease 8 s)"
    );
}

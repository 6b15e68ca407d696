//! A quorum call stops waiting once a majority answered; the calls to the other nodes are
//! meant to still run there. When a slower node has to be sent the script body (NOSCRIPT:
//! after a restart, a failover or SCRIPT FLUSH), a re-entry must still reach it: otherwise that
//! node keeps one count less, and releasing the nested guard deletes the hold there (and
//! publishes a release) while the outer guard still holds the lock.

use std::time::Duration;

use relock_testkit::{Direction, FaultProxy, Mode};
use relock_tests::*;

fn count_on(s: &RedisServer, key: &str) -> Option<i64> {
    match s.cmd(&["HVALS", key]).unwrap() {
        relock_testkit::Value::Array(Some(v)) if v.len() == 1 => v[0].as_int(),
        _ => None,
    }
}

#[tokio::test]
async fn a_quorum_reentry_reaches_the_nodes_that_answer_after_the_quorum() {
    let m = masters(5);
    // Node 4 answers 20 ms later than the others (within the 50 ms node timeout).
    let slow = FaultProxy::start(&m[4].addr()).unwrap();
    let mut urls: Vec<String> = m.servers()[..4].iter().map(RedisServer::url).collect();
    urls.push(slow.url());
    let client = relock::QuorumClient::builder()
        .urls(urls)
        .node_timeout(Duration::from_millis(50))
        .watchdog_lease(Duration::from_secs(30))
        .restart_quarantine(Duration::ZERO)
        .build()
        .await
        .unwrap();
    let name = "q86";
    let lock = client.lock(name).with_lease(Duration::from_secs(10));
    // Load every script (acquire, fence, re-entry, release) on every node first. Through a
    // one-node client for node 4, since a five-node call may stop waiting before node 4's
    // NOSCRIPT fallback is sent (the very gap this test is about).
    let one = relock::QuorumClient::builder()
        .urls([m[4].url()])
        .restart_quarantine(Duration::ZERO)
        .build()
        .await
        .unwrap();
    for c in [&client, &one] {
        let warm = c.lock("q86:warm-up");
        let w = warm.lock().await.unwrap();
        w.scope(warm.lock()).await.unwrap().unlock().await.unwrap();
        w.unlock().await.unwrap();
    }
    one.shutdown().await;
    slow.set(Direction::Up, Mode::Delay(Duration::from_millis(20)));

    let outer = lock.lock().await.unwrap();
    wait_until(
        Duration::from_secs(1),
        "the hold on the slow node",
        || async { count_on(&m[4], name) == Some(1) },
    )
    .await
    .unwrap();
    // The slow node forgets its scripts (as after a restart or failover).
    m[4].script_flush().unwrap();
    let nested = outer.scope(lock.lock()).await.unwrap();
    let r = wait_until(
        Duration::from_secs(1),
        "the re-entry to land on the slow node too",
        || async { count_on(&m[4], name) == Some(2) },
    )
    .await;
    let counts: Vec<Option<i64>> = m.servers().iter().map(|s| count_on(s, name)).collect();
    nested.unlock().await.unwrap();
    // Let the release land on the slow node as well.
    let _ = wait_until(
        Duration::from_millis(500),
        "the release on the slow node",
        || async { count_on(&m[4], name) != counts[4] },
    )
    .await;
    let after: Vec<Option<i64>> = m.servers().iter().map(|s| count_on(s, name)).collect();
    assert!(
        r.is_ok(),
        "counts after the re-entry {counts:?}; after releasing the nested guard {after:?} (the outer guard still holds)"
    );
    outer.unlock().await.unwrap();
    slow.heal();
    client.shutdown().await;
    let all: Vec<&RedisServer> = m.servers().iter().collect();
    assert_nothing_left_on(&all).await;
}

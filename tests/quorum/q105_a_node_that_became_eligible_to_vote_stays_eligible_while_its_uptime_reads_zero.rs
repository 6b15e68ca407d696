//! A restart quarantine shorter than a second: a node whose uptime still reads 0 s becomes
//! eligible once the quarantine has passed, and stays eligible. (Every uptime check, each
//! 250 ms, used to restart the quarantine from its own time while `uptime_in_seconds` read 0,
//! so the node flapped: eligible for a moment, then quarantined again, until a second had
//! passed. Found by the least-privilege quorum test, q104.)

use std::time::Duration;

use relock_testkit::RedisMasters;
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_that_became_eligible_to_vote_stays_eligible_while_its_uptime_reads_zero() {
    let masters = RedisMasters::start(3).unwrap();
    let c = relock::QuorumClient::builder()
        .urls(masters.urls())
        .node_timeout(Duration::from_millis(50))
        .restart_quarantine(Duration::from_millis(100))
        .connect_timeout(Duration::from_secs(2))
        .build()
        .await
        .unwrap();
    wait_until(Duration::from_secs(3), "the quarantine to pass", || async {
        matches!(c.lock("q105:first").try_lock().await, Ok(Some(_)))
    })
    .await
    .unwrap();
    // New instances, whose uptime reads 0 for a second.
    for m in masters.servers() {
        m.restart_empty().unwrap();
    }
    let restarted = std::time::Instant::now();
    wait_until(
        Duration::from_secs(3),
        "the new quarantine to pass",
        || async { matches!(c.lock("q105:again").try_lock().await, Ok(Some(_))) },
    )
    .await
    .unwrap();
    let eligible = restarted.elapsed();
    // Until the uptime reads 1 (at least three uptime checks), every acquisition gets its
    // votes.
    let mut refused = Vec::new();
    let mut i = 0;
    while restarted.elapsed() < Duration::from_millis(1000) {
        i += 1;
        let name = format!("q105:{i}");
        match c.lock(name).try_lock().await {
            Ok(Some(g)) => g.unlock().await.unwrap(),
            other => refused.push(format!("{i}: {other:?}")),
        }
        // The pace of the attempts (not a synchronisation): 25 ms apart.
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(
        refused.is_empty(),
        "eligible {eligible:?} after the restart, then quarantined again: {refused:?}"
    );
    c.shutdown().await;
    for m in masters.servers() {
        assert_nothing_left(m).await;
    }
}

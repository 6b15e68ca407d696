//! The quorum watchdog keeps a lock for more than six leases while nodes 1 and 2 are killed
//! and restarted empty one after the other, and puts the lock back on each restarted node.

use std::time::{Duration, Instant};

use relock_tests::*;

#[tokio::test]
async fn the_watchdog_keeps_a_lock_through_minority_kills_and_restarts() {
    let m = masters(5);
    let lease = Duration::from_millis(600);
    let client = quorum_client(&m, lease, Duration::ZERO).await;
    let g = client.lock("q50").lock().await.unwrap();
    let start = Instant::now();
    for i in [0, 1] {
        m[i].kill().unwrap();
        let at = Instant::now();
        wait_until(
            Duration::from_secs(3),
            "a lease with the node down",
            || async { at.elapsed() > lease },
        )
        .await
        .unwrap();
        m[i].restart_empty().unwrap();
        wait_until(
            Duration::from_secs(5),
            "the lock put back on the restarted node",
            || async { m[i].cmd(&["EXISTS", "q50"]).ok().and_then(|v| v.as_int()) == Some(1) },
        )
        .await
        .unwrap();
        assert!(!g.is_lost());
    }
    assert!(start.elapsed() > lease * 2);
    wait_until(Duration::from_secs(5), "six leases in all", || async {
        start.elapsed() > lease * 6
    })
    .await
    .unwrap();
    assert!(!g.is_lost(), "kept through the faults");
    assert!(client.lock("q50").is_locked().await.unwrap());
    g.unlock().await.unwrap();
    client.shutdown().await;
    let all: Vec<&RedisServer> = m.servers().iter().collect();
    assert_nothing_left_on(&all).await;
}

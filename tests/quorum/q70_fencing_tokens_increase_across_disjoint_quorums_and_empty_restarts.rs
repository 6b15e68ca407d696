//! The naive "max over the granting quorum" token is not monotonic; relock's write-back is.
//! Node 1's clock runs 0.5 s ahead, so its counter is seeded higher. A is granted by {1, 2, 3}
//! (4 and 5 down); then 1 and 2 become unreachable and B is granted by {3, 4, 5}, where 4 and
//! 5 restarted empty. B's token is still above A's, because A wrote its token back to a
//! majority. Then every node in turn restarts empty between acquisitions: tokens keep rising.

use std::time::Duration;

use relock_tests::*;

fn server_us(s: &RedisServer) -> i64 {
    server_ms(s) * 1000
}

#[tokio::test]
async fn fencing_tokens_increase_across_disjoint_quorums_and_empty_restarts() {
    let m = masters(5);
    let client = quorum_client(&m, Duration::from_secs(30), Duration::ZERO).await;
    let ahead = (server_us(&m[0]) + 500_000).to_string();
    m[0].cmd(&["SET", "redisson_lock_token:{q70}", &ahead, "PX", "60000"])
        .unwrap();
    m[3].kill().unwrap();
    m[4].kill().unwrap();
    let lock = client.lock("q70").with_lease(Duration::from_secs(5));
    // Within a few tries: on a loaded machine one of the three can miss the 50 ms node
    // timeout once, and with 4 and 5 down that one miss is no quorum.
    let a = lock
        .try_lock_for(Duration::from_secs(5))
        .await
        .unwrap()
        .expect("granted by {1, 2, 3}");
    let ta = a.fencing_token();
    assert!(
        ta > ahead.parse::<u64>().unwrap(),
        "A's token comes from node 1"
    );

    // Nodes 4 and 5 come back empty, 1 and 2 become unreachable.
    m[3].restart_empty().unwrap();
    m[4].restart_empty().unwrap();
    m[0].pause().unwrap();
    m[1].pause().unwrap();
    wait_until(
        Duration::from_secs(5),
        "{3, 4, 5} to form a quorum",
        || async { matches!(client.lock("q70:probe").try_lock().await, Ok(Some(_))) },
    )
    .await
    .unwrap();
    a.unlock().await.unwrap();
    let b = lock
        .try_lock_for(Duration::from_secs(5))
        .await
        .unwrap()
        .expect("granted by {3, 4, 5}");
    let tb = b.fencing_token();
    // Without the write-back, node 3 would mint from its own counter and 4, 5 from their
    // clocks: all below A's token.
    assert!(tb > ta, "B's token {tb} must exceed A's {ta}");
    b.unlock().await.unwrap();
    m[0].resume().unwrap();
    m[1].resume().unwrap();

    // Each node in turn restarts empty between two acquisitions.
    let mut last = tb;
    for i in 0..5 {
        m[i].restart_empty().unwrap();
        let g = eventually(
            Duration::from_secs(5),
            "an acquisition after the restart",
            || {
                let l = lock.clone();
                async move { l.try_lock().await.ok().flatten() }
            },
        )
        .await;
        assert!(
            g.fencing_token() > last,
            "after restarting node {}: {} then {}",
            i + 1,
            last,
            g.fencing_token()
        );
        last = g.fencing_token();
        g.unlock().await.unwrap();
    }
    client.shutdown().await;
    let all: Vec<&RedisServer> = m.servers().iter().collect();
    assert_nothing_left_on(&all).await;
}

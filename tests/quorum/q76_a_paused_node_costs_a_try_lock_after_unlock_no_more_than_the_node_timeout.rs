//! With node 3 paused, a try_lock whose outcome hangs on node 3's vote (node 1
//! is held by another owner) gives up after the node timeout. Right after this client's own
//! unlock, whose release to node 3 is still unanswered, the vote first waits for that release
//! (up to a node timeout), then for its own answer (another node timeout).

use std::time::{Duration, Instant};

use relock_tests::*;

const NODE_TIMEOUT: Duration = Duration::from_millis(500);

#[tokio::test]
async fn a_paused_node_costs_a_try_lock_after_unlock_no_more_than_the_node_timeout() {
    let m = masters(3);
    let client = warm_quorum_client(m.urls(), NODE_TIMEOUT, "q76:warm").await;
    let lock = client.lock("q76").with_lease(Duration::from_secs(30));
    let g = lock.try_lock().await.unwrap().expect("a free lock");
    wait_held_on_every_node(&m, "q76").await;
    m[2].pause().unwrap();
    g.unlock().await.unwrap();
    // Another owner holds it on node 1 only.
    m[0].cmd(&["HSET", "q76", "someone-else:1", "1"]).unwrap();
    m[0].cmd(&["PEXPIRE", "q76", "2000"]).unwrap();
    let t = Instant::now();
    let r = lock.try_lock().await;
    let took = t.elapsed();
    m[2].resume().unwrap();
    if let Ok(Some(g)) = r {
        g.unlock().await.unwrap();
    }
    client.shutdown().await;
    let all: Vec<&RedisServer> = m.servers().iter().collect();
    assert_nothing_left_on(&all).await;
    println!("try_lock with node 3 paused took {took:?}");
    assert!(
        took < NODE_TIMEOUT + NODE_TIMEOUT / 2,
        "try_lock took {took:?} (node timeout {NODE_TIMEOUT:?})"
    );
}

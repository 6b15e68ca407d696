//! With one of 5 masters stopped (SIGSTOP), 20 acquire+release pairs each acquire within the
//! node timeout (50 ms) plus a margin: the quorum is reached without waiting for it. After it
//! resumes, nothing is left on any node.

use std::time::{Duration, Instant};

use relock_tests::*;

#[tokio::test]
async fn a_paused_node_costs_acquire_no_more_than_the_node_timeout() {
    let m = masters(5);
    let client = quorum_client(&m, Duration::from_secs(30), Duration::ZERO).await;
    let lock = client.lock("q30").with_lease(Duration::from_secs(3));
    lock.try_lock()
        .await
        .unwrap()
        .unwrap()
        .unlock()
        .await
        .unwrap();
    m[2].pause().unwrap();
    let mut worst = Duration::ZERO;
    for _ in 0..20 {
        let t = Instant::now();
        let g = lock
            .try_lock()
            .await
            .unwrap()
            .expect("4 live nodes grant it");
        worst = worst.max(t.elapsed());
        g.unlock().await.unwrap();
    }
    println!("worst acquire with a paused node: {worst:?}");
    assert!(
        worst < Duration::from_millis(50 + 40),
        "worst acquire {worst:?}"
    );
    m[2].resume().unwrap();
    client.shutdown().await;
    let all: Vec<&RedisServer> = m.servers().iter().collect();
    assert_nothing_left_on(&all).await;
}

//! A vote that follows this client's own release of the lock on a node must
//! reach the node after it, but need not wait for the release's answer: on the lock's pinned
//! connection it is queued behind it (the same argument as q98, the other way round). With
//! node 3 slow (its replies a second late), node 1 frozen right after the unlock, a try_lock
//! right after the unlock needs node 3's vote: it should take about one delay, not two.

use std::time::{Duration, Instant};

use relock_testkit::{Direction, Mode};
use relock_tests::*;

const DELAY: Duration = Duration::from_millis(1000);

#[tokio::test]
async fn a_try_lock_right_after_unlock_waits_for_a_slow_nodes_release_to_be_sent_not_answered() {
    let m = masters(3);
    let p1 = relock_testkit::FaultProxy::start(&m[0].addr()).unwrap();
    let p3 = relock_testkit::FaultProxy::start(&m[2].addr()).unwrap();
    let mut urls = m.urls();
    urls[0] = p1.url();
    urls[2] = p3.url();
    let client = warm_quorum_client(urls, Duration::from_millis(2500), "q75:warm").await;
    let lock = client.lock("q75").with_lease(Duration::from_secs(30));
    // Equal counters on every node: no write-back round (it would cost a delay of its own).
    let seed = (server_ms(&m[0]) * 1000).to_string();
    for s in m.servers() {
        s.cmd(&["SET", "redisson_lock_token:{q75}", &seed, "PX", "3000"])
            .unwrap();
    }
    p3.set(Direction::Down, Mode::Delay(DELAY));
    let g = lock
        .try_lock()
        .await
        .unwrap()
        .expect("nodes 1 and 2 grant it");
    // Node 3's release is still on its way back when unlock() returns (nodes 1 and 2 answered).
    g.unlock().await.unwrap();
    p1.set(Direction::Up, Mode::Freeze);
    let t = Instant::now();
    let again = lock.try_lock().await;
    let took = t.elapsed();
    p1.heal();
    p3.heal();
    let again = again.unwrap().expect("nodes 2 and 3 grant it");
    again.unlock().await.unwrap();
    client.shutdown().await;
    let all: Vec<&RedisServer> = m.servers().iter().collect();
    assert_nothing_left_on(&all).await;
    println!("try_lock after unlock took {took:?}");
    assert!(
        took < DELAY + DELAY / 2,
        "try_lock took {took:?}: its vote on the slow node waited for the answer to the \
         release before it (delay {DELAY:?})"
    );
}

//! a vote answered "held" by another owner, while this client's release of the lock on
//! that node (here: the clean-up of a failed attempt just before) has not answered yet, is sent
//! a second time. With node 3 slow (its replies a delay late) and deciding the outcome (node 1
//! held by another owner, node 2 free, node 3 held by that owner), a try_lock repeated right
//! after a failed one should take one delay, as the first did.

use std::time::{Duration, Instant};

use relock_testkit::{Direction, Mode};
use relock_tests::*;

const DELAY: Duration = Duration::from_millis(1000);

#[tokio::test]
async fn a_try_lock_of_a_held_lock_after_a_failed_attempts_clean_up_asks_a_slow_node_once() {
    let m = masters(3);
    let (p3, urls) = urls_with_proxy(&m, 2);
    let client = warm_quorum_client(urls, Duration::from_millis(2500), "q100:warm").await;
    let lock = client.lock("q100").with_lease(Duration::from_secs(30));
    for s in [&m[0], &m[2]] {
        s.cmd(&["HSET", "q100", "someone-else:1", "1"]).unwrap();
        s.cmd(&["PEXPIRE", "q100", "30000"]).unwrap();
    }
    p3.set(Direction::Down, Mode::Delay(DELAY));
    let t = Instant::now();
    let first = lock.try_lock().await.unwrap();
    let first_took = t.elapsed();
    assert!(first.is_none(), "held on nodes 1 and 3");
    // The clean-up of node 2's grant went to every node; node 3's answer is on its way.
    let t = Instant::now();
    let second = lock.try_lock().await.unwrap();
    let second_took = t.elapsed();
    assert!(second.is_none(), "still held on nodes 1 and 3");
    p3.heal();
    for s in [&m[0], &m[2]] {
        s.cmd(&["DEL", "q100"]).unwrap();
    }
    client.shutdown().await;
    let all: Vec<&RedisServer> = m.servers().iter().collect();
    assert_nothing_left_on(&all).await;
    println!("first try_lock took {first_took:?}, the second {second_took:?}");
    assert!(
        second_took < DELAY + DELAY / 2,
        "the second try_lock took {second_took:?} (the first {first_took:?}; node 3's delay \
         {DELAY:?}): its vote on node 3 was sent twice"
    );
}

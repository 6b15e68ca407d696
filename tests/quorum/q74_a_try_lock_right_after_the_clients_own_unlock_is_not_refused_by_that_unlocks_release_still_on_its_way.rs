//! `unlock()` of a quorum hold returns once a majority of nodes answered its release; the
//! other nodes' releases are still on their way. A `try_lock()` of the same lock by the same
//! client right afterwards sends its votes at once. A vote must not reach a node ahead of that
//! node's release: the node would answer "held" by the very hold just released, and with one
//! more node not answering, the `try_lock()` finds no majority and reports the lock held by
//! someone else, when nobody holds it.
//!
//! Node 4's release is made to come late (its script cache is flushed, so the release's
//! EVALSHA meets NOSCRIPT and the script body follows a round trip later; node 4 is 40 ms
//! away), node 5 is stopped, and node 3 stops answering right after the unlock.

use std::time::Duration;

use relock_testkit::{Direction, Mode};
use relock_tests::*;

#[tokio::test]
async fn a_try_lock_right_after_the_clients_own_unlock_is_not_refused_by_that_unlocks_release_still_on_its_way(
) {
    let m = masters(5);
    let c3 = relock_testkit::FaultProxy::start(&m[2].addr()).unwrap();
    let d4 = relock_testkit::FaultProxy::start(&m[3].addr()).unwrap();
    let mut urls = m.urls();
    urls[2] = c3.url();
    urls[3] = d4.url();
    let client = warm_quorum_client(urls, Duration::from_millis(400), "q74:warm-up").await;
    let lock = client.lock("q74").with_lease(Duration::from_secs(10));
    let g = lock.try_lock().await.unwrap().expect("a free lock");
    wait_held_on_every_node(&m, "q74").await;
    // Node 4 keeps the vote script but loses the release script, and is 40 ms away.
    m[3].script_flush().unwrap();
    m[3].cmd(&["SCRIPT", "LOAD", relock::lua::ACQUIRE]).unwrap();
    d4.set_both(Mode::Delay(Duration::from_millis(20)));
    m[4].pause().unwrap();
    g.unlock().await.unwrap();
    c3.set(Direction::Up, Mode::Freeze);
    let again = lock.try_lock().await;
    let on_node_4 = m[3].cmd(&["EXISTS", "q74"]).unwrap().as_int();
    c3.heal();
    d4.heal();
    m[4].resume().unwrap();
    let again = again.expect("no error: nodes 1, 2 and 4 answer");
    let granted = again.is_some();
    if let Some(g) = again {
        g.unlock().await.unwrap();
    }
    assert!(
        granted,
        "try_lock() right after this client's own unlock() of a free lock was refused as \
         held (a vote reached node 4 before the release); q74 on node 4 afterwards: \
         {on_node_4:?}"
    );
    client.shutdown().await;
    let all: Vec<&RedisServer> = m.servers().iter().collect();
    assert_nothing_left_on(&all).await;
}

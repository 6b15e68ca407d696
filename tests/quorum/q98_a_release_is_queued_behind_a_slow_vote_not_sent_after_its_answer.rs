//! A node's release must come after the vote it undoes, but it need not wait for that vote's
//! answer: once the vote is with fred, the release is queued behind it on the same connection.
//! With one node down and one slow (its replies a second late), an unlock right after the lock
//! needs the slow node's answer: it takes about one delay, not two (found by review: the
//! first version of the wait waited for the vote's answer).

use std::time::{Duration, Instant};

use relock_testkit::{Direction, Mode};
use relock_tests::*;

const DELAY: Duration = Duration::from_millis(1000);

#[tokio::test]
async fn a_release_is_queued_behind_a_slow_vote_not_sent_after_its_answer() {
    let m = masters(3);
    let (proxy, urls) = urls_with_proxy(&m, 2);
    // Above DELAY, but no higher: shutdown waits 8 node timeouts for the release to the
    // killed node to find a new connection.
    let b = quorum_builder(urls, Duration::from_millis(1800))
        .build()
        .await
        .unwrap();
    warm_up(&b, "q98:warm").await;

    proxy.set(Direction::Down, Mode::Delay(DELAY));
    let g = b
        .lock("q98")
        .with_lease(Duration::from_secs(30))
        .lock()
        .await
        .unwrap();
    // Node 0 goes down while the lock is held (node 2's vote is still on its way back).
    m[0].kill().unwrap();
    let t = Instant::now();
    let r = g.unlock().await;
    let took = t.elapsed();
    r.unwrap();
    proxy.set(Direction::Down, Mode::Pass);
    b.shutdown().await;
    assert_nothing_left_on(&[&m[1], &m[2]]).await;
    assert!(
        took < DELAY + DELAY / 2,
        "unlock took {took:?}: it waited for the slow node's vote to be answered (delay {DELAY:?})"
    );
}

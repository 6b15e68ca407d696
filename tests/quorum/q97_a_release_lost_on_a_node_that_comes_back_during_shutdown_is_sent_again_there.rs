//! A whole hold's release that one node never received is sent again on the node's new set of
//! connections, and (since the resend outlives `shutting_down`) also during shutdown's settle
//! time: "this is when a paused node resumes and shutdown follows at once". But a new set that
//! is made after shutdown began is never installed, so the resend has nothing to go on: a
//! node that comes back just after shutdown was called keeps the hold for its whole lease.

use std::time::Duration;

use relock_testkit::{Direction, Mode};
use relock_tests::*;

#[tokio::test]
async fn a_release_lost_on_a_node_that_comes_back_during_shutdown_is_sent_again_there() {
    let m = masters(3);
    let (lossy, urls) = urls_with_proxy(&m, 0);
    let client = quorum_builder(urls, Duration::from_millis(100))
        .build()
        .await
        .unwrap();
    warm_up(&client, "q97:warm-up").await;
    let guard = hold_seen_on(&client, "q97", Duration::from_secs(30), &m[0]).await;

    // The release to node 1 is held on the way and then lost with its connection; node 1 is
    // unreachable for a moment.
    lossy.set(Direction::Up, Mode::Freeze);
    guard.unlock().await.unwrap();
    lossy.refuse(true);
    let accepted = lossy.accepted();
    lossy.reset();
    lossy.set(Direction::Up, Mode::Pass);
    // The client tries node 1 again and is turned away.
    wait_until(Duration::from_secs(3), "a refused reconnection", || async {
        lossy.accepted() > accepted
    })
    .await
    .unwrap();
    assert_eq!(m[0].cmd(&["EXISTS", "q97"]).unwrap().as_int(), Some(1));

    // Shutdown, and node 1 is back 100 ms later, well inside its settle time (900 ms each).
    let back = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        lossy.refuse(false);
    };
    tokio::join!(client.shutdown(), back);
    let left = m[0].cmd(&["PTTL", "q97"]).unwrap().as_int();
    assert!(
        left == Some(-2),
        "node 1 came back 100 ms into shutdown and still holds the released lock (PTTL {left:?} ms)"
    );
}

//! A whole hold's release that one node never received is sent again on the node's new set of
//! connections, and (since the resend outlives `shutting_down`) also during shutdown's settle
//! time: "this is when a paused node resumes and shutdown follows at once". But a new set that
//! is made after shutdown began is never installed, so the resend has nothing to go on: a
//! node that comes back just after shutdown was called keeps the hold for its whole lease.

use std::time::Duration;

use relock_testkit::{Direction, FaultProxy, Mode};
use relock_tests::*;

#[tokio::test]
async fn a_release_lost_on_a_node_that_comes_back_during_shutdown_is_sent_again_there() {
    let m = masters(3);
    let lossy = FaultProxy::start(&m[0].addr()).unwrap();
    let mut urls = vec![lossy.url()];
    urls.extend(m.servers()[1..].iter().map(RedisServer::url));
    let client = relock::QuorumClient::builder()
        .urls(urls)
        .node_timeout(Duration::from_millis(100))
        .restart_quarantine(Duration::ZERO)
        .build()
        .await
        .unwrap();
    let warm = client.lock("q97:warm-up").lock().await.unwrap();
    warm.unlock().await.unwrap();
    let guard = client
        .lock("q97")
        .with_lease(Duration::from_secs(30))
        .lock()
        .await
        .unwrap();
    wait_until(Duration::from_secs(2), "the hold on node 1", || async {
        m[0].cmd(&["EXISTS", "q97"]).ok().and_then(|v| v.as_int()) == Some(1)
    })
    .await
    .unwrap();

    // The release to node 1 is held on the way and then lost with its connection; node 1 is
    // unreachable for a moment.
    lossy.set(Direction::Up, Mode::Freeze);
    guard.unlock().await.unwrap();
    lossy.refuse(true);
    lossy.reset();
    lossy.set(Direction::Up, Mode::Pass);
    tokio::time::sleep(Duration::from_millis(300)).await;
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

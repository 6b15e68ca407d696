//! A whole hold's release with no known outcome on one node is sent again on the node's next
//! set of connections, now until shutdown closes the nodes (its settle wait). When that node
//! is down and stays down there is no set to send it on: shutdown must not sit out its
//! settle waits for it (it has three, each `node_timeout * 8 + 200 ms`), and the commit that
//! made the resend outlive `shutting_down` says it is bounded by one settle wait.

use std::time::{Duration, Instant};

use relock_testkit::{Direction, Mode};
use relock_tests::*;

#[tokio::test]
async fn shutdown_is_not_held_up_by_a_release_resend_waiting_for_a_node_that_is_down() {
    let m = masters(3);
    let (lossy, urls) = urls_with_proxy(&m, 0);
    let node_timeout = Duration::from_millis(200);
    let settle = node_timeout * 8 + Duration::from_millis(200);
    let client = quorum_builder(urls, node_timeout).build().await.unwrap();
    warm_up(&client, "q95:warm-up").await;
    let guard = client
        .lock("q95")
        .with_lease(Duration::from_secs(30))
        .lock()
        .await
        .unwrap();
    // Node 1 stops answering with the release on its way; the other two release it.
    lossy.set(Direction::Up, Mode::Freeze);
    guard.unlock().await.unwrap();
    // Then node 1 goes away for good: its connections break and no new one gets through.
    lossy.refuse(true);
    let accepted = lossy.accepted();
    lossy.reset();
    // The release task has seen the set fail: the client is trying node 1 again (refused).
    wait_until(Duration::from_secs(3), "a refused reconnection", || async {
        lossy.accepted() > accepted
    })
    .await
    .unwrap();
    assert_eq!(client.held_locks(), 0);

    let started = Instant::now();
    client.shutdown().await;
    let took = started.elapsed();
    assert!(
        took < settle + Duration::from_millis(500),
        "shutdown with nothing held and one node down took {took:?} (one settle wait is {settle:?})"
    );
}

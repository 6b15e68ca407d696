//! A release that one node never received (its connection broke with the request on the way)
//! is sent again once the node is reachable: the hold must not stay there for its whole
//! lease, since with another node down or in restart quarantine no majority could form for
//! anyone meanwhile.

use std::time::Duration;

use relock_testkit::{Direction, Mode};
use relock_tests::*;

#[tokio::test]
async fn a_release_lost_on_one_node_is_sent_again_so_the_hold_does_not_outlive_it() {
    let m = masters(3);
    let (lossy, urls) = urls_with_proxy(&m, 0);
    let client = quorum_builder(urls, Duration::from_millis(100))
        .build()
        .await
        .unwrap();
    // Every script loaded on node 1 first, so that the lost release is the script call itself.
    warm_up(&client, "q90:warm-up").await;
    let guard = hold_seen_on(&client, "q90", Duration::from_secs(20), &m[0]).await;

    // The release to node 1 is held on the way; the other two answer, so unlock succeeds.
    lossy.set(Direction::Up, Mode::Freeze);
    guard.unlock().await.unwrap();
    wait_until(
        Duration::from_secs(2),
        "the release held by the proxy",
        || async { lossy.held(Direction::Up) > 0 },
    )
    .await
    .unwrap();
    // Then the connection breaks (the server closes it), and the held request is lost with it.
    assert!(m[0].client_kill_type("normal").unwrap() > 0);
    lossy.set(Direction::Up, Mode::Blackhole);
    lossy.set(Direction::Up, Mode::Pass);
    assert_eq!(
        m[0].cmd(&["EXISTS", "q90"]).unwrap().as_int(),
        Some(1),
        "not released there"
    );

    // Sent again on new connections: gone long before its 20 s lease.
    wait_until(
        Duration::from_secs(8),
        "the hold gone from node 1",
        || async { m[0].cmd(&["EXISTS", "q90"]).ok().and_then(|v| v.as_int()) == Some(0) },
    )
    .await
    .unwrap();
    client.shutdown().await;
    let all: Vec<&RedisServer> = m.servers().iter().collect();
    assert_nothing_left_on(&all).await;
}

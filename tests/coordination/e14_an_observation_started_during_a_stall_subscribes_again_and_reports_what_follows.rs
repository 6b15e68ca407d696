//! An observation whose subscription times out (started while the link stalls: a reconnect,
//! a failover) subscribes again, backing off, instead of ending with that retryable error;
//! once the link is back it reports the leader elected after the stall.

use std::time::Duration;

use relock::LeaderEvent;
use relock_testkit::{Direction, Mode};
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_observation_started_during_a_stall_subscribes_again_and_reports_what_follows() {
    let server = server();
    let (proxy, a) = client_behind_proxy(&server, Duration::from_millis(500)).await;
    let b = client(&server).await;
    // Every reply held: the observation's first subscription times out.
    let accepted = proxy.accepted();
    proxy.set(Direction::Down, Mode::Freeze);
    let mut changes = a.election("e14").observe();
    // The subscription timed out: the subscriber connects again (and stalls again).
    wait_until(
        Duration::from_secs(5),
        "the subscriber reconnecting",
        || async { proxy.accepted() > accepted },
    )
    .await
    .unwrap();
    // The link back: the replies held so far are dropped (their calls timed out), then every
    // reply passes.
    proxy.set(Direction::Down, Mode::Blackhole);
    proxy.set(Direction::Down, Mode::Pass);
    let leading = b.election("e14").campaign("b").await.unwrap();
    let first = bounded(Duration::from_secs(10), "the first event", changes.next()).await;
    match first {
        Some(Ok(LeaderEvent::Elected(l))) => assert_eq!(l.term, leading.term()),
        other => panic!("expected the leader elected after the stall, got {other:?}"),
    }
    leading.resign().await.unwrap();
    a.shutdown().await;
    b.shutdown().await;
}

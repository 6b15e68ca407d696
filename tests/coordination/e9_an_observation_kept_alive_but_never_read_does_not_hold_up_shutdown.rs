//! An election observation kept alive but never read, whose queue of events has filled up
//! (the leader proclaims a new value many times), does not hold up the client's shutdown:
//! its task stops waiting for room when shutdown begins, and the stream then ends.

use std::time::{Duration, Instant};

use relock_tests::*;

#[tokio::test]
async fn an_observation_kept_alive_but_never_read_does_not_hold_up_shutdown() {
    let server = server();
    let observer = client(&server).await; // command timeout 1 s
    let leader_client = client(&server).await;
    let leader = leader_client.election("e9").campaign("v0").await.unwrap();
    let mut obs = observer.election("e9").observe();
    wait_until(
        Duration::from_secs(2),
        "the observer subscribed",
        || async {
            server
                .pubsub_numsub("relock_election_channel:{e9}")
                .unwrap()
                == 1
        },
    )
    .await
    .unwrap();
    // Far more changes than the observation queues while nobody reads it.
    for i in 1..=300 {
        leader.proclaim(format!("v{i}")).await.unwrap();
    }
    let started = Instant::now();
    observer.shutdown().await;
    let took = started.elapsed();
    assert!(
        took < Duration::from_millis(800),
        "shutdown with a full, unread observation took {took:?}"
    );
    // What was queued is still there, then the stream ends.
    let mut seen = 0;
    while bounded(Duration::from_secs(2), "the observation", obs.next())
        .await
        .is_some()
    {
        seen += 1;
    }
    assert!(seen >= 1, "the queued events are yielded before the end");
    leader.resign().await.unwrap();
    leader_client.shutdown().await;
}

//! Review repro: an observer's task (on the client's tracker) waits for `inner.shutdown`, which
//! `Client::shutdown` sends only at its very end, after waiting for the tracker's tasks (twice,
//! up to a command timeout + 100 ms each). So a live, idle `Observation` makes every shutdown
//! take two command timeouts and log "work in flight did not finish".

use std::time::{Duration, Instant};

use relock_tests::*;

#[tokio::test]
async fn a_live_observation_does_not_hold_up_shutdown() {
    let server = server();
    let a = client(&server).await; // command timeout 1 s
    let mut obs = a.election("e4").observe();
    wait_until(
        Duration::from_secs(2),
        "the observer subscribed",
        || async {
            server
                .pubsub_numsub("relock_election_channel:{e4}")
                .unwrap()
                == 1
        },
    )
    .await
    .unwrap();
    let started = Instant::now();
    a.shutdown().await;
    let took = started.elapsed();
    assert!(
        bounded(Duration::from_secs(2), "the observation's end", obs.next())
            .await
            .is_none()
    );
    assert!(
        took < Duration::from_millis(500),
        "shutdown with a live observation took {took:?}"
    );
}

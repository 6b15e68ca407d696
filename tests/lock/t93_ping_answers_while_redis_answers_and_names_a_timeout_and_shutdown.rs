//! `Client::ping`, a readiness probe: it answers with a round trip while Redis answers, gives
//! `Timeout { operation: "ping" }` within the command timeout while Redis is paused, answers
//! again once it resumes, and says `Shutdown` after shutdown.

use std::time::Duration;

use relock::Error;
use relock_tests::*;

#[tokio::test]
async fn ping_answers_while_redis_answers_and_names_a_timeout_and_shutdown() {
    let server = server();
    let c = client(&server).await; // command timeout 1 s
    let rtt = c.ping().await.unwrap();
    assert!(rtt < Duration::from_secs(1), "{rtt:?}");

    server.pause().unwrap();
    let started = tokio::time::Instant::now();
    let paused = c.ping().await;
    let took = started.elapsed();
    server.resume().unwrap();
    match paused {
        Err(Error::Timeout { operation, .. }) => assert_eq!(operation, "ping"),
        other => panic!("expected a ping timeout while paused, got {other:?}"),
    }
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_millis(2_500),
        "bounded by the command timeout: {took:?}"
    );

    wait_until(Duration::from_secs(5), "a ping after the pause", || async {
        c.ping().await.is_ok()
    })
    .await
    .unwrap();

    c.shutdown().await;
    assert!(matches!(c.ping().await, Err(Error::Shutdown)));
}

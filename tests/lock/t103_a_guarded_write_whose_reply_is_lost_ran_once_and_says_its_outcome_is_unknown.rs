//! A guarded write whose reply is lost (the proxy holds it, then resets the connection) has
//! run exactly once on the server, and the caller is told its outcome is unknown
//! (`OutcomeUnknown`), never that it failed.

use std::time::Duration;

use relock::{Commands, Error};
use relock_testkit::Direction;
use relock_tests::*;

#[tokio::test]
async fn a_guarded_write_whose_reply_is_lost_ran_once_and_says_its_outcome_is_unknown() {
    let server = server();
    let proxy = relock_testkit::FaultProxy::start(&server.addr()).unwrap();
    let a = relock::Client::builder()
        .url(proxy.url())
        .command_timeout(Duration::from_secs(5))
        .connect_timeout(Duration::from_secs(2))
        .build()
        .await
        .unwrap();
    let guard = a.lock("t103").lock().await.unwrap();
    // Once first, so that the server has the script (a NOSCRIPT reply would be held too).
    guard
        .write(Commands::new().cmd("INCR").key("{t103}:warm"))
        .await
        .unwrap();
    let frozen = proxy.freeze_existing(Direction::Down);
    let write = tokio::spawn(async move {
        let r = guard
            .write(Commands::new().cmd("INCR").key("{t103}:n"))
            .await;
        (r, guard)
    });
    wait_until(Duration::from_secs(3), "the batch to run", || async {
        server
            .cmd(&["GET", "{t103}:n"])
            .unwrap()
            .as_string()
            .as_deref()
            == Some("1")
    })
    .await
    .unwrap();
    lose_replies(&proxy, &frozen);
    let (r, guard) = bounded(Duration::from_secs(10), "the write's answer", write)
        .await
        .unwrap();
    match &r {
        Err(e @ Error::OutcomeUnknown { operation, .. }) => {
            assert_eq!(*operation, "guarded write");
            assert!(e.to_string().contains("end the hold"), "{e}");
        }
        other => panic!("expected OutcomeUnknown, got {other:?}"),
    }
    // Once: the batch was not sent again after the reconnect.
    wait_until(
        Duration::from_secs(3),
        "the client to reconnect",
        || async { a.ping().await.is_ok() },
    )
    .await
    .unwrap();
    assert_eq!(
        server
            .cmd(&["GET", "{t103}:n"])
            .unwrap()
            .as_string()
            .as_deref(),
        Some("1")
    );
    // The hold itself is intact: the next guarded write runs.
    let replies = guard
        .write(Commands::new().cmd("INCR").key("{t103}:n"))
        .await
        .unwrap();
    assert_eq!(replies[0], relock::fred::types::Value::Integer(2));
    guard.unlock().await.unwrap();
    server.cmd(&["DEL", "{t103}:n", "{t103}:warm"]).unwrap();
    a.shutdown().await;
}

//! Cancellation and bad input: read and write waits dropped while parked behind a writer leave
//! no subscription, no hold and no key; a key of another type gives `WrongType` and is left
//! alone; a bad name gives `InvalidArgument`.

use std::time::Duration;

use relock::Error;
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_waits_and_bad_input_leave_nothing_behind() {
    let server = server();
    let (a, b) = (client(&server).await, client(&server).await);
    let rw = b.read_write_lock("r50");
    let writer = a.read_write_lock("r50").write_lock().lock().await.unwrap();
    for i in 0..20 {
        let wait = if i % 2 == 0 {
            tokio::time::timeout(Duration::from_millis(20 + i), rw.read_lock().lock()).await
        } else {
            tokio::time::timeout(Duration::from_millis(20 + i), rw.write_lock().lock()).await
        };
        assert!(wait.is_err(), "a wait behind the writer returned");
    }
    wait_until(
        Duration::from_secs(3),
        "b's subscriptions released",
        || async { b.subscribed_channels() == 0 && b.held_locks() == 0 },
    )
    .await
    .unwrap();
    writer.unlock().await.unwrap();
    server.cmd(&["SET", "r50:text", "x"]).unwrap();
    let wrong = b.read_write_lock("r50:text").read_lock().try_lock().await;
    assert!(
        matches!(&wrong, Err(Error::WrongType { key }) if key == "r50:text"),
        "{wrong:?}"
    );
    let wrong = b.read_write_lock("r50:text").write_lock().try_lock().await;
    assert!(matches!(&wrong, Err(Error::WrongType { .. })), "{wrong:?}");
    assert_eq!(
        server
            .cmd(&["GET", "r50:text"])
            .unwrap()
            .as_string()
            .as_deref(),
        Some("x")
    );
    server.cmd(&["DEL", "r50:text"]).unwrap();
    let bad = b.read_write_lock("a{b").read_lock().try_lock().await;
    assert!(
        matches!(&bad, Err(Error::InvalidArgument { name: "name", .. })),
        "{bad:?}"
    );
    a.shutdown().await;
    b.shutdown().await;
    assert_nothing_left(&server).await;
}

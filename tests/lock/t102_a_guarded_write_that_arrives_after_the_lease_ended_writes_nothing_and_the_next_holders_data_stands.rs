//! A guarded write is checked by the server when it runs, not by the client when it sends:
//! a holder sends its write while its hold is valid, the write is held up in the network
//! (the test kit's proxy freezes the holder's connections) until the lease has ended and a
//! second holder has taken the lock and written. When the first write arrives it is refused
//! (`LockLost`), nothing of it is applied, and the data is the second holder's.

use std::time::Duration;

use relock::{Commands, Error};
use relock_testkit::Direction;
use relock_tests::*;

#[tokio::test]
async fn a_guarded_write_that_arrives_after_the_lease_ended_writes_nothing_and_the_next_holders_data_stands(
) {
    let server = server();
    let proxy = relock_testkit::FaultProxy::start(&server.addr()).unwrap();
    let a = relock::Client::builder()
        .url(proxy.url())
        .command_timeout(Duration::from_secs(8))
        .connect_timeout(Duration::from_secs(2))
        .build()
        .await
        .unwrap();
    let b = client(&server).await;
    let write = |who: &str| {
        Commands::new()
            .cmd("HSET")
            .key("{t102}:row")
            .arg("owner")
            .arg(who)
            .cmd("INCR")
            .key("{t102}:writes")
    };

    let first = a
        .lock("t102")
        .with_lease(Duration::from_millis(1500))
        .lock()
        .await
        .unwrap();
    // Sent while valid, held in the network.
    let frozen = proxy.freeze_existing(Direction::Up);
    assert!(!frozen.is_empty());
    let late = tokio::spawn(async move {
        let r = first.write(write("a")).await;
        (r, first)
    });
    wait_until(Duration::from_secs(4), "the first lease to end", || async {
        server.cmd(&["EXISTS", "t102"]).unwrap().as_int() == Some(0)
    })
    .await
    .unwrap();
    let second = b.lock("t102").lock().await.unwrap();
    let replies = second.write(write("b")).await.unwrap();
    assert_eq!(replies.len(), 2);

    // The first write arrives now.
    proxy.clear_overrides();
    let (r, first) = bounded(Duration::from_secs(10), "the late write", late)
        .await
        .unwrap();
    assert!(
        matches!(&r, Err(Error::LockLost { name }) if name == "t102"),
        "{r:?}"
    );
    assert!(first.is_lost());
    let owner = server.cmd(&["HGET", "{t102}:row", "owner"]).unwrap();
    assert_eq!(owner.as_string().as_deref(), Some("b"));
    assert_eq!(
        server
            .cmd(&["GET", "{t102}:writes"])
            .unwrap()
            .as_string()
            .as_deref(),
        Some("1"),
        "only the second holder's batch ran"
    );
    drop(first);
    second.unlock().await.unwrap();
    server.cmd(&["DEL", "{t102}:row", "{t102}:writes"]).unwrap();
    a.shutdown().await;
    b.shutdown().await;
    assert_nothing_left(&server).await;
}

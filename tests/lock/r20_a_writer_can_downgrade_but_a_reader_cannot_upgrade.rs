//! Downgrade and upgrade: inside a write hold's scope a read `lock()` is granted at once; after
//! the write hold goes the read hold stays (mode `read`), another client's reader shares it and
//! a writer waits. Inside a read hold's scope a write `lock()` fails with `UpgradeRefused`
//! (not a deadlock), and nothing is changed on the server.

use std::time::Duration;

use relock::Error;
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_can_downgrade_but_a_reader_cannot_upgrade() {
    let server = server();
    let (a, b) = (client(&server).await, client(&server).await);
    let rw = a.read_write_lock("r20");
    let write = rw.write_lock().lock().await.unwrap();
    let read = bounded(
        Duration::from_secs(2),
        "a read lock inside the write scope",
        write.scope(rw.read_lock().lock()),
    )
    .await
    .unwrap();
    assert!(read.fencing_token() > write.fencing_token());
    let hash = |s: &RedisServer| s.cmd(&["HGET", "r20", "mode"]).unwrap().as_string();
    assert_eq!(hash(&server).as_deref(), Some("write"));
    write.unlock().await.unwrap();
    assert_eq!(
        hash(&server).as_deref(),
        Some("read"),
        "the read hold stays"
    );
    // Another client reads beside it; a writer of that client cannot get in.
    let other = b.read_write_lock("r20");
    let shared = other.read_lock().try_lock().await.unwrap();
    assert!(shared.is_some(), "a second reader shares a downgraded lock");
    assert!(other.write_lock().try_lock().await.unwrap().is_none());
    drop(shared);
    // No upgrade: refused at once, and the read hold is untouched.
    let upgrade = bounded(
        Duration::from_secs(2),
        "a write lock inside a read scope",
        read.scope(rw.write_lock().lock()),
    )
    .await;
    match upgrade {
        Err(Error::UpgradeRefused { name }) => assert_eq!(name, "r20"),
        other => panic!("expected UpgradeRefused, got {other:?}"),
    }
    assert_eq!(hash(&server).as_deref(), Some("read"));
    // Re-entry of the read hold inside its scope: count 2, same token.
    let again = read.scope(rw.read_lock().lock()).await.unwrap();
    assert_eq!(again.fencing_token(), read.fencing_token());
    assert_eq!(
        server
            .cmd(&["HGET", "r20", read.owner()])
            .unwrap()
            .as_string()
            .as_deref(),
        Some("2")
    );
    drop(again);
    read.unlock().await.unwrap();
    // The lock is free: b's writer gets it.
    let w = bounded(
        Duration::from_secs(2),
        "b's writer",
        other.write_lock().lock(),
    )
    .await
    .unwrap();
    w.unlock().await.unwrap();
    a.shutdown().await;
    b.shutdown().await;
    assert_nothing_left(&server).await;
}

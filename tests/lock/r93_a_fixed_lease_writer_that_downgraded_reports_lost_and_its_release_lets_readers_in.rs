//! The documented limit of a downgrade under a fixed write lease (crates/relock/docs/safety.md,
//! read-write lock; found by review): the write field lives in the hash that the downgraded read
//! hold's renewals keep alive, so after the write lease the guard reports itself lost while `mode`
//! stays `write` and other readers are refused. What the docs tell the holder to do (release the
//! write guard once it reports lost) lets them in at once, and the read hold goes on.

use std::time::Duration;

use relock::Error;
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fixed_lease_writer_that_downgraded_reports_lost_and_its_release_lets_readers_in() {
    let server = server();
    let a = client_with_lease(&server, Duration::from_millis(900)).await;
    let b = client(&server).await;
    let rw = a.read_write_lock("r93");
    let write = rw
        .write_lock()
        .with_lease(Duration::from_millis(500))
        .lock()
        .await
        .unwrap();
    let read = write.scope(rw.read_lock().lock()).await.unwrap();
    bounded(
        Duration::from_secs(2),
        "lost() at the write lease",
        write.lost(),
    )
    .await;
    assert!(!read.is_lost());
    // The limit: the write field is still there (the read hold renewed the hash).
    let other = b.read_write_lock("r93").read_lock();
    assert_eq!(
        server
            .cmd(&["HGET", "r93", "mode"])
            .unwrap()
            .as_string()
            .as_deref(),
        Some("write")
    );
    assert!(other.try_lock().await.unwrap().is_none());
    // The remedy: release the lost write guard; its field goes, readers share.
    assert!(matches!(write.unlock().await, Err(Error::LockLost { .. })));
    let shared = other.try_lock().await.unwrap();
    assert!(
        shared.is_some(),
        "a reader was refused after the write guard's release"
    );
    assert!(!read.is_lost());
    drop(shared);
    read.unlock().await.unwrap();
    a.shutdown().await;
    b.shutdown().await;
    assert_nothing_left(&server).await;
}

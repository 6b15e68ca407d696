//! All or nothing, across kinds and servers, and one `lost()`: a multi-lock over a plain lock
//! and a write lock on one server and a lock on a second server gives up within its bound
//! while another client holds one part, holding none of them afterwards; once that part is
//! free it takes all three; force-unlocking one part makes the multi-guard's `lost()` resolve.
//! Bad input (no parts, a lock twice) gets `InvalidArgument`; a dropped `lock()` leaves nothing.

use std::time::Duration;

use relock::{Error, MultiLock};
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_lock_that_cannot_get_one_part_holds_none_and_lost_fires_for_any_part() {
    let (one, two) = (server(), server());
    let (a, b, other) = (client(&one).await, client(&two).await, client(&one).await);
    let multi = MultiLock::new()
        .with(a.lock("m20:plain"))
        .with(a.read_write_lock("m20:rw").write_lock())
        .with(b.lock("m20:far"));
    let blocker = other.lock("m20:plain").lock().await.unwrap();
    let started = std::time::Instant::now();
    let none = multi
        .try_lock_for(Duration::from_millis(300))
        .await
        .unwrap();
    assert!(none.is_none());
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    // Nothing of the multi-lock is held: the other parts are free.
    wait_until(
        Duration::from_secs(3),
        "the parts it took released",
        || async { a.held_locks() == 0 && b.held_locks() == 0 },
    )
    .await
    .unwrap();
    assert_eq!(two.cmd(&["EXISTS", "m20:far"]).unwrap().as_int(), Some(0));
    assert_eq!(one.cmd(&["EXISTS", "m20:rw"]).unwrap().as_int(), Some(0));
    // Also with a wait that ends while it waits for the last part: nothing is kept.
    let dropped = tokio::time::timeout(Duration::from_millis(200), multi.lock()).await;
    assert!(dropped.is_err());
    wait_until(
        Duration::from_secs(3),
        "a dropped lock() released its parts",
        || async { a.held_locks() == 0 && b.held_locks() == 0 },
    )
    .await
    .unwrap();
    blocker.unlock().await.unwrap();
    let guard = bounded(Duration::from_secs(3), "all three parts", multi.lock())
        .await
        .unwrap();
    assert_eq!(guard.guards().len(), 3);
    assert_eq!(
        guard.guards()[2].name(),
        "m20:far",
        "guards in the order given"
    );
    assert!(!guard.is_lost());
    assert!(b.lock("m20:far").force_unlock().await.unwrap());
    bounded(
        Duration::from_secs(2),
        "lost() after one part went",
        guard.lost(),
    )
    .await;
    assert!(guard.is_lost());
    assert!(matches!(guard.unlock().await, Err(Error::LockLost { .. })));
    // Bad input.
    let empty = MultiLock::new().try_lock().await;
    assert!(
        matches!(&empty, Err(Error::InvalidArgument { name: "parts", .. })),
        "{empty:?}"
    );
    let twice = MultiLock::new()
        .with(a.lock("m20:x"))
        .with(a.read_write_lock("m20:x").read_lock())
        .try_lock()
        .await;
    assert!(
        matches!(&twice, Err(Error::InvalidArgument { name: "parts", .. })),
        "{twice:?}"
    );
    for c in [&a, &b, &other] {
        c.shutdown().await;
    }
    assert_nothing_left(&one).await;
    assert_nothing_left(&two).await;
}

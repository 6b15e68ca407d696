//! `with_until_lost` runs its body only while the lock is held: a force-unlock from another
//! client stops a long body at once (it never reaches its end) with `LockLost`; a body that
//! ends while held returns its value and releases; a panic is resumed after the release.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use relock::Error;
use relock_tests::*;

#[tokio::test]
async fn with_until_lost_stops_its_body_when_the_hold_is_lost_and_returns_lock_lost() {
    let server = server();
    let (a, b) = (client(&server).await, client(&server).await);
    let lock = a.lock("t94");

    // Ends while held: its value, and the lock is free afterwards.
    let token = lock
        .with_until_lost(async |guard| guard.fencing_token())
        .await
        .unwrap();
    assert!(token > 0);
    assert!(!lock.is_locked().await.unwrap());

    // Lost while the body waits: the body is dropped there, promptly.
    let reached_end = Arc::new(AtomicBool::new(false));
    let body = {
        let (lock, reached_end) = (lock.clone(), reached_end.clone());
        tokio::spawn(async move {
            lock.with_until_lost(async |_guard| {
                tokio::time::sleep(Duration::from_secs(10)).await;
                reached_end.store(true, Ordering::SeqCst);
            })
            .await
        })
    };
    wait_until(
        Duration::from_secs(3),
        "the body to hold the lock",
        || async { b.lock("t94").is_locked().await.unwrap() },
    )
    .await
    .unwrap();
    let started = tokio::time::Instant::now();
    assert!(b.lock("t94").force_unlock().await.unwrap());
    let r = tokio::time::timeout(Duration::from_secs(3), body)
        .await
        .expect("the body was stopped")
        .unwrap();
    assert!(
        matches!(r, Err(Error::LockLost { ref name }) if name == "t94"),
        "{r:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert!(
        !reached_end.load(Ordering::SeqCst),
        "the body ran on without the lock"
    );

    // A panic in the body: resumed, and the lock released first.
    let panicked = {
        let lock = lock.clone();
        tokio::spawn(async move { lock.with_until_lost(async |_guard| panic!("boom")).await })
    };
    assert!(panicked.await.unwrap_err().is_panic());
    wait_until(
        Duration::from_secs(3),
        "the lock free after the panic",
        || async { !b.lock("t94").is_locked().await.unwrap() },
    )
    .await
    .unwrap();
}

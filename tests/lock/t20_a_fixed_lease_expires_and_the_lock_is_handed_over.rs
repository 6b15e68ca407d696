//! A fixed lease expires without renewal, the waiter gets the lock, and the old guard reports
//! itself lost.

use std::time::{Duration, Instant};

use relock_tests::*;

#[tokio::test]
async fn a_fixed_lease_expires_and_the_lock_is_handed_over() {
    let server = server();
    let (a, b) = (client(&server).await, client(&server).await);
    let start = Instant::now();
    let held = a
        .lock("t20")
        .with_lease(Duration::from_millis(500))
        .lock()
        .await
        .unwrap();
    assert!(!held.is_renewed());
    let taken = bounded(
        Duration::from_secs(5),
        "waiter",
        b.lock("t20").try_lock_for(Duration::from_secs(3)),
    )
    .await
    .unwrap();
    let waited = start.elapsed();
    let taken = taken.expect("the waiter gets the lock once the lease ends");
    assert!(
        waited >= Duration::from_millis(450),
        "handed over before the lease ended: {waited:?}"
    );
    assert!(
        waited < Duration::from_millis(1500),
        "handed over late: {waited:?}"
    );
    assert!(taken.fencing_token() > held.fencing_token());
    bounded(Duration::from_secs(1), "lost()", held.lost()).await;
    assert!(matches!(
        held.unlock().await,
        Err(relock::Error::LockLost { .. })
    ));
    // The new holder is untouched by the old guard's unlock.
    assert!(b.lock("t20").is_locked().await.unwrap());
    taken.unlock().await.unwrap();
    assert_nothing_left(&server).await;
}

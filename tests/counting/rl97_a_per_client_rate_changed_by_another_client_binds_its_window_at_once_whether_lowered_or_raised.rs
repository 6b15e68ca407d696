//! A `PerClient` rate changed by another client (whose `set_rate` starts only its own state
//! afresh) binds this client's window at once: lowered below what it already took in the
//! window, it is granted nothing more; raised, it is granted the new rate less what it took.
//! `available_permits` reads the same.

use std::time::Duration;

use relock::RateType;
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_per_client_rate_changed_by_another_client_binds_its_window_at_once_whether_lowered_or_raised(
) {
    let server = server();
    let (a, b) = (client(&server).await, client(&server).await);
    let (la, lb) = (a.rate_limiter("rl97"), b.rate_limiter("rl97"));
    let minute = Duration::from_secs(60);
    la.set_rate(RateType::PerClient, 10, minute).await.unwrap();
    // b takes 8 of its 10: its value is 2.
    assert!(lb.try_acquire(8).await.unwrap());
    // a lowers the rate to 3: b already took more than that in the window.
    la.set_rate(RateType::PerClient, 3, minute).await.unwrap();
    let lowered_available = lb.available_permits().await.unwrap();
    let mut lowered = 0;
    for _ in 0..3 {
        lowered += u64::from(lb.try_acquire(1).await.unwrap());
    }
    // a raises the rate to 20: b may take 20 less its 8.
    la.set_rate(RateType::PerClient, 20, minute).await.unwrap();
    let raised_available = lb.available_permits().await.unwrap();
    let mut raised = 0;
    for _ in 0..14 {
        raised += u64::from(lb.try_acquire(1).await.unwrap());
    }
    a.shutdown().await;
    b.shutdown().await;
    assert_eq!(
        (lowered_available, lowered),
        (0, 0),
        "after 8 permits in the window the rate was lowered to 3: available_permits read \
         {lowered_available} and {lowered} more were granted"
    );
    assert_eq!(
        (raised_available, raised),
        (12, 12),
        "after 8 permits in the window the rate was raised to 20: available_permits read \
         {raised_available} and {raised} of 14 asked were granted"
    );
}

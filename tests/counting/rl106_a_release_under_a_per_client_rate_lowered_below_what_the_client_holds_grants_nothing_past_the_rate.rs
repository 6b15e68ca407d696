//! A release by a client whose `PerClient` rate another client lowered below what it took in
//! its window gives back permits it is still over the new rate by: the records left in the
//! window still add up to more than the rate, so nothing more is granted.

use std::time::Duration;

use relock::RateType;
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_under_a_per_client_rate_lowered_below_what_the_client_holds_grants_nothing_past_the_rate(
) {
    let server = server();
    let (a, b) = (client(&server).await, client(&server).await);
    let (la, lb) = (a.rate_limiter("rl106"), b.rate_limiter("rl106"));
    let minute = Duration::from_secs(60);
    la.set_rate(RateType::PerClient, 4, minute).await.unwrap();
    assert!(lb.try_acquire(4).await.unwrap());
    // a lowers the rate to 2: b took 4 in the window.
    la.set_rate(RateType::PerClient, 2, minute).await.unwrap();
    assert!(!lb.try_acquire(1).await.unwrap());
    // b gives 1 back: 3 stay in the window, still above the rate of 2.
    lb.release(1).await.unwrap();
    let available = lb.available_permits().await.unwrap();
    let mut granted = 0;
    for _ in 0..2 {
        granted += u64::from(lb.try_acquire(1).await.unwrap());
    }
    a.shutdown().await;
    b.shutdown().await;
    assert_eq!(
        (available, granted),
        (0, 0),
        "4 taken, 1 released under a rate lowered to 2 (3 in the window): available_permits \
         read {available} and {granted} of 2 more were granted"
    );
}

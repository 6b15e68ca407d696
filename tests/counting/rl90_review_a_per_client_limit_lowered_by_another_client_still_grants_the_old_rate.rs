//! Review reproduction: `set_rate` of a `PerClient` limit deletes only the calling client's
//! own value and records. Another client keeps its old value, which may be above the new
//! rate, and is granted that many permits in one window of the new rate.

use std::time::Duration;

use relock::RateType;
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "reproduces a bug: a PerClient value above a lowered rate is not clamped"]
async fn a_per_client_limit_lowered_by_another_client_still_grants_the_old_rate() {
    let server = server();
    let (a, b) = (client(&server).await, client(&server).await);
    let (la, lb) = (a.rate_limiter("rl90"), b.rate_limiter("rl90"));
    let minute = Duration::from_secs(60);
    la.set_rate(RateType::PerClient, 10, minute).await.unwrap();
    // b takes one permit: its own value is now 9.
    assert!(lb.try_acquire(1).await.unwrap());
    // a lowers the limit to 2 per client per minute.
    la.set_rate(RateType::PerClient, 2, minute).await.unwrap();
    assert_eq!(lb.config().await.unwrap().unwrap().rate(), 2);
    let mut granted = 0;
    for _ in 0..9 {
        granted += u64::from(lb.try_acquire(1).await.unwrap());
    }
    let available = lb.available_permits().await.unwrap();
    a.shutdown().await;
    b.shutdown().await;
    assert!(
        granted <= 2,
        "b was granted {granted} permits within one minute under a rate of 2 per minute \
         (available_permits then read {available})"
    );
}

//! A `PerClient` rate lowered by one client (its `set_rate` starts only its own state afresh)
//! binds another client at once: that client's value, written under the old rate and now
//! above the new one, is recomputed as the new rate less its records' permits, so it is
//! granted no more than the new rate in a window.

use std::time::Duration;

use relock::RateType;
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_per_client_value_above_a_rate_lowered_by_another_client_grants_only_the_new_rate() {
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
    // b's one earlier permit still counts in the window: one more of the new rate of 2.
    assert_eq!(
        (granted, available),
        (1, 0),
        "b was granted {granted} permits within one minute under a rate of 2 per minute, one \
         already taken (available_permits then read {available})"
    );
}

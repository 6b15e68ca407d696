//! A `PerClient` rate lowered by another client below what this client took in its window
//! binds for the rest of that window, not only at once: while the records still in the window
//! add up to more than the new rate, the expiry of an older one gives nothing back to grant.

use std::time::Duration;

use relock::RateType;
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_per_client_rate_lowered_below_what_the_client_holds_binds_until_its_records_in_the_window_fit(
) {
    let server = server();
    let (a, b) = (client(&server).await, client(&server).await);
    let (la, lb) = (a.rate_limiter("rl105"), b.rate_limiter("rl105"));
    let interval = Duration::from_secs(3);
    la.set_rate(RateType::PerClient, 4, interval).await.unwrap();
    // b takes 1, then 3 a second later: 4 in its window.
    assert!(lb.try_acquire(1).await.unwrap());
    let first = server_ms(&server);
    wait_until(
        Duration::from_secs(3),
        "a second on the server's clock",
        || async { server_ms(&server) >= first + 1000 },
    )
    .await
    .unwrap();
    let second = server_ms(&server);
    assert!(lb.try_acquire(3).await.unwrap());
    // a lowers the rate to 2: b's 3 taken a second later still count for 2 more seconds.
    la.set_rate(RateType::PerClient, 2, interval).await.unwrap();
    assert!(!lb.try_acquire(1).await.unwrap());
    // The first record's interval ends; the record of 3 stays in the window.
    let window = i64::try_from(interval.as_millis()).unwrap();
    wait_until(
        Duration::from_secs(5),
        "the first record's interval to end",
        || async { server_ms(&server) > first + window },
    )
    .await
    .unwrap();
    let available = lb.available_permits().await.unwrap();
    let granted = lb.try_acquire(1).await.unwrap();
    let at = server_ms(&server);
    a.shutdown().await;
    b.shutdown().await;
    assert!(
        at < second + window,
        "too slow to observe: the record of 3 left the window too (at {at}, taken at {second})"
    );
    assert_eq!(
        (available, granted),
        (0, false),
        "3 permits taken within the window under a rate lowered to 2: available_permits read \
         {available} and a further acquire was granted: {granted}"
    );
}

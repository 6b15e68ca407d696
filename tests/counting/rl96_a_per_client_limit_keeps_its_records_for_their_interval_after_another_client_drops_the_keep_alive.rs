//! A `PerClient` limiter whose keep-alive another client removes (its `set_rate` without one
//! starts only its own state afresh) still counts this client's earlier grants for their whole
//! interval: its value and records, written with the old keep-alive's time to live, are kept
//! at least an interval from each grant, so they do not expire inside their window and hand
//! out the full rate again.

use std::time::{Duration, Instant};

use relock::{RateConfig, RateType};
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_per_client_limit_keeps_its_records_for_their_interval_after_another_client_drops_the_keep_alive(
) {
    let server = server();
    let (a, b) = (client(&server).await, client(&server).await);
    let (la, lb) = (a.rate_limiter("rl96"), b.rate_limiter("rl96"));
    let interval = Duration::from_secs(2);
    la.set(RateConfig::new(RateType::PerClient, 2, interval).with_keep_alive(interval))
        .await
        .unwrap();
    // b's first grant: its value and records now live for the keep-alive, 2 s.
    let start = server_ms(&server);
    assert!(lb.try_acquire(1).await.unwrap());
    let at = |ms: i64| {
        let server = &server;
        eventually(
            Duration::from_secs(5),
            "the server's clock",
            move || async move { (server_ms(server) >= start + ms).then_some(()) },
        )
    };
    at(1200).await;
    // a sets the same rate without a keep-alive: b's keys are no longer refreshed by it.
    la.set_rate(RateType::PerClient, 2, interval).await.unwrap();
    assert!(lb.try_acquire(1).await.unwrap(), "b's second permit of 2");
    let second = Instant::now();
    // Past the first grant's interval, inside the second's: one permit of the 2 is free.
    at(2300).await;
    let two = lb.try_acquire(2).await.unwrap();
    let one = lb.try_acquire(1).await.unwrap();
    let more = lb.try_acquire(1).await.unwrap();
    let late = second.elapsed();
    a.shutdown().await;
    b.shutdown().await;
    assert!(
        late < interval,
        "the checks ran {late:?} after the second grant, past its interval: rerun on a less \
         loaded machine"
    );
    assert_eq!(
        (two, one, more),
        (false, true, false),
        "within one interval of its second grant, b was granted 2 at once: {two}, then 1: \
         {one}, then 1 more: {more} (a rate of 2 per {interval:?} leaves exactly 1)"
    );
}

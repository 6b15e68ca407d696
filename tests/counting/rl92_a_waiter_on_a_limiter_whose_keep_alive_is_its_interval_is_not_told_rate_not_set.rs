//! A keep-alive equal to the interval is allowed. A waiter that asks right after the only
//! grant is told to sleep `interval + 3 - age` ms, longer than the keep-alive: its refused
//! acquire makes the keys outlive that sleep, so `acquire` (ended only by shutdown) takes the
//! permit when it wakes instead of failing with `RateNotSet`.

use std::time::Duration;

use relock::{RateConfig, RateType};
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_on_a_limiter_whose_keep_alive_is_its_interval_is_not_told_rate_not_set() {
    let server = server();
    let c = client(&server).await;
    let interval = Duration::from_millis(200);
    let mut failures = Vec::new();
    for round in 0..5 {
        let l = c.rate_limiter(format!("rl92:{round}"));
        l.set(RateConfig::new(RateType::Overall, 1, interval).with_keep_alive(interval))
            .await
            .unwrap();
        assert!(l.try_acquire(1).await.unwrap());
        let r = bounded(Duration::from_secs(3), "acquire", l.acquire(1)).await;
        if let Err(e) = r {
            failures.push(e.to_string());
        }
    }
    c.shutdown().await;
    assert!(
        failures.is_empty(),
        "acquire right after the only grant, on a limiter with keep-alive = interval: {failures:?}"
    );
}

//! A `PerClient` limiter whose config has a time to live but no keep-alive (an operator's
//! `PEXPIRE`, or Redisson's `RRateLimiter.expire`) still counts this client's grants for their
//! whole interval: another client's `set` with a keep-alive renews the config, and this
//! client's value and records, given the config's time to live by its grant, must not expire
//! inside their window and hand out the full rate again.

use std::time::{Duration, Instant};

use relock::{RateConfig, RateType};
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_per_client_limit_whose_config_has_a_ttl_but_no_keep_alive_keeps_its_records_for_their_interval(
) {
    let server = server();
    let (a, b) = (client(&server).await, client(&server).await);
    let (la, lb) = (a.rate_limiter("rl98"), b.rate_limiter("rl98"));
    let interval = Duration::from_secs(3);
    la.set_rate(RateType::PerClient, 1, interval).await.unwrap();
    // An operator gives the limiter a second to live (no keep-alive is set).
    assert_eq!(
        server.cmd(&["PEXPIRE", "rl98", "1000"]).unwrap().as_int(),
        Some(1)
    );
    let start = Instant::now();
    let granted = server_ms(&server);
    assert!(lb.try_acquire(1).await.unwrap(), "b's one permit of 1");
    let records = format!("{{rl98}}:permits:{}", b.client_id());
    let ttl = server.cmd(&["PTTL", &records]).unwrap().as_int().unwrap();
    // a sets the same rate with a keep-alive: the config lives on for it.
    la.set(RateConfig::new(RateType::PerClient, 1, interval).with_keep_alive(interval))
        .await
        .unwrap();
    // Past the config's second (which b's grant once gave its records too).
    eventually(Duration::from_secs(3), "1.3 s after the grant", || async {
        (server_ms(&server) >= granted + 1300).then_some(())
    })
    .await;
    let again = lb.try_acquire(1).await.unwrap();
    let late = start.elapsed();
    a.shutdown().await;
    b.shutdown().await;
    assert!(
        late < interval,
        "the check ran {late:?} after the grant, past its interval: rerun on a less loaded \
         machine"
    );
    assert!(
        !again,
        "b was granted a second permit {late:?} after its first, inside one interval \
         ({interval:?}) of a rate of 1: its records were given {ttl} ms to live"
    );
}

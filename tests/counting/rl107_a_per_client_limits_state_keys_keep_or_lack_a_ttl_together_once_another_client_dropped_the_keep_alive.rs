//! A `PerClient` limiter's state keys keep or lack a time to live together after another
//! client's `set_rate` dropped the keep-alive: a records key that the acquire emptied of
//! expired records and wrote again gets the value's time to live, so a client that goes away
//! leaves no key behind that its value and rate key left.

use std::time::Duration;

use relock::{RateConfig, RateType};
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_per_client_limits_state_keys_keep_or_lack_a_ttl_together_once_another_client_dropped_the_keep_alive(
) {
    let server = server();
    let (a, b) = (client(&server).await, client(&server).await);
    let (la, lb) = (a.rate_limiter("rl107"), b.rate_limiter("rl107"));
    let interval = Duration::from_millis(500);
    la.set(
        RateConfig::new(RateType::PerClient, 5, interval).with_keep_alive(Duration::from_secs(5)),
    )
    .await
    .unwrap();
    assert!(lb.try_acquire(1).await.unwrap());
    let granted = server_ms(&server);
    // a sets the same rate without a keep-alive: b's keys keep the TTL they have.
    la.set_rate(RateType::PerClient, 5, interval).await.unwrap();
    let window = i64::try_from(interval.as_millis()).unwrap();
    wait_until(
        Duration::from_secs(3),
        "b's record's interval to end",
        || async { server_ms(&server) > granted + window },
    )
    .await
    .unwrap();
    // The acquire expires b's only record (its key goes) and writes a new one.
    assert!(lb.try_acquire(1).await.unwrap());
    let id = b.client_id();
    let pttl = |key: String| server.cmd(&["PTTL", &key]).unwrap().as_int().unwrap();
    let ttls = [
        pttl(format!("{{rl107}}:value:{id}")),
        pttl(format!("{{rl107}}:permits:{id}")),
        pttl(format!("{{rl107}}:rate:{id}")),
    ];
    a.shutdown().await;
    b.shutdown().await;
    assert!(
        ttls.iter().all(|t| *t > 0) || ttls.iter().all(|t| *t == -1),
        "b's value, records and rate keys' PTTLs: {ttls:?} ms (some with a TTL, some without)"
    );
}

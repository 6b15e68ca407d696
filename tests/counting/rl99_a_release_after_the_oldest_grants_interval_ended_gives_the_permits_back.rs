//! `release(n)` gives `n` permits back: the permits available grow by `n` (at most to the
//! rate), as its docs say, also when the oldest record's interval has ended but no acquire has
//! expired it yet. (Redisson's script, which relock's follows, takes the `n` permits off the
//! oldest records first, expired or not: an expired record's permits are available already,
//! so the release gives nothing back.)

use std::time::Duration;

use relock::RateType;
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_after_the_oldest_grants_interval_ended_gives_the_permits_back() {
    let server = server();
    let c = client(&server).await;
    let l = c.rate_limiter("rl99");
    let interval = Duration::from_secs(2);
    l.set_rate(RateType::Overall, 2, interval).await.unwrap();
    assert!(l.try_acquire(1).await.unwrap());
    let first = server_ms(&server);
    eventually(Duration::from_secs(3), "a second", || async {
        (server_ms(&server) >= first + 1000).then_some(())
    })
    .await;
    let second = server_ms(&server);
    assert!(l.try_acquire(1).await.unwrap());
    // The first grant's interval has ended; the second's runs until `second + 2000`.
    eventually(
        Duration::from_secs(3),
        "the first grant's interval to end",
        || async { (server_ms(&server) > first + 2000).then_some(()) },
    )
    .await;
    let before = l.available_permits().await.unwrap();
    // The second grant's call did not happen after all: give its permit back.
    l.release(1).await.unwrap();
    let after = l.available_permits().await.unwrap();
    let both = l.try_acquire(2).await.unwrap();
    let late = server_ms(&server) - second;
    c.shutdown().await;
    assert!(
        late < 2000,
        "the checks ran {late} ms after the second grant, past its interval: rerun on a less \
         loaded machine"
    );
    assert_eq!(
        (before, after, both),
        (1, 2, true),
        "one permit of 2 in use, then release(1): available_permits read {before} before and \
         {after} after, and try_acquire(2) was {both}"
    );
}

//! Permits come back once their interval has passed. A `try_acquire_for` that must wait gets
//! its permit no earlier than the oldest record's expiry (on the server's clock) and within a
//! small slack of it; one whose bound is shorter than the delay returns false within its
//! bound; `acquire` sleeps the delay the script returns. None of them polls: the server
//! counts two or three script calls per wait.

use std::time::{Duration, Instant};

use relock::RateType;
use relock_tests::*;

/// The scores of `key`'s records, in ms on the server's clock.
fn scores(server: &RedisServer, key: &str) -> Vec<i64> {
    match server
        .cmd(&["ZRANGE", key, "0", "-1", "WITHSCORES"])
        .unwrap()
    {
        relock_testkit::Value::Array(Some(v)) => v
            .chunks(2)
            .map(|p| p[1].as_string().unwrap().parse().unwrap())
            .collect(),
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permits_come_back_after_the_interval_and_waits_sleep_until_the_oldest_record_expires() {
    let server = server();
    let c = client(&server).await;
    let interval = Duration::from_millis(400);
    let l = c.rate_limiter("rl20");
    assert!(l
        .try_set_rate(RateType::Overall, 2, interval)
        .await
        .unwrap());
    assert!(l.try_acquire(2).await.unwrap());
    assert_eq!(l.available_permits().await.unwrap(), 0);
    wait_until(
        Duration::from_secs(3),
        "the permits to come back",
        || async { l.available_permits().await.unwrap() == 2 },
    )
    .await
    .unwrap();

    // A wait that must wait: its grant is scored at the oldest record's expiry or later.
    assert!(l.try_acquire(1).await.unwrap());
    assert!(l.try_acquire(1).await.unwrap());
    let oldest = scores(&server, "{rl20}:permits")[0];
    server.reset_stats().unwrap();
    assert!(l.try_acquire_for(1, Duration::from_secs(3)).await.unwrap());
    let calls = server.command_calls("evalsha").unwrap();
    let granted = *scores(&server, "{rl20}:permits").last().unwrap();
    let expiry = oldest + interval.as_millis() as i64;
    assert!(
        granted >= expiry && granted <= expiry + 150,
        "granted at {granted}, the oldest record expired at {expiry}"
    );
    assert!(calls <= 3, "{calls} script calls for one wait");

    // A bound shorter than the delay: false within it, after at most one more call.
    let short = c.rate_limiter("rl20:short");
    assert!(short
        .try_set_rate(RateType::Overall, 1, interval)
        .await
        .unwrap());
    assert!(short.try_acquire(1).await.unwrap());
    server.reset_stats().unwrap();
    let bound = Duration::from_millis(60);
    let started = Instant::now();
    assert!(!short.try_acquire_for(1, bound).await.unwrap());
    let took = started.elapsed();
    assert!(
        took >= bound && took <= bound + Duration::from_millis(150),
        "{took:?}"
    );
    let calls = server.command_calls("evalsha").unwrap();
    assert!(calls <= 2, "{calls} script calls within a 60 ms bound");

    // acquire: sleeps the returned delay, whatever the wait.
    let full = c.rate_limiter("rl20:acquire");
    assert!(full
        .try_set_rate(RateType::Overall, 1, interval)
        .await
        .unwrap());
    assert!(full.try_acquire(1).await.unwrap());
    server.reset_stats().unwrap();
    let started = Instant::now();
    bounded(Duration::from_secs(3), "acquire", full.acquire(1))
        .await
        .unwrap();
    let took = started.elapsed();
    let calls = server.command_calls("evalsha").unwrap();
    assert!(
        took >= interval - Duration::from_millis(60)
            && took <= interval + Duration::from_millis(200),
        "{took:?}"
    );
    assert!(calls <= 3, "{calls} script calls over a {took:?} wait");

    // Three more permits, one per interval: one sleep each.
    server.reset_stats().unwrap();
    let started = Instant::now();
    for _ in 0..3 {
        bounded(Duration::from_secs(3), "acquire", full.acquire(1))
            .await
            .unwrap();
    }
    let took = started.elapsed();
    let calls = server.command_calls("evalsha").unwrap();
    assert!(took >= interval * 5 / 2, "{took:?}");
    assert!(calls <= 9, "{calls} script calls for three waits");
    for l in [l, short, full] {
        assert!(l.delete().await.unwrap());
    }
    c.shutdown().await;
    assert_nothing_left(&server).await;
}

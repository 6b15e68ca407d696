//! A spin waiter's attempts, counted on the server over a known wait (a `try_lock_for` that
//! gives up), follow its back-off: Redisson's default (from 1 ms, doubling, at most 128 ms)
//! makes about 15 attempts in a second, not the thousand of a 1 ms poll, and only about twice
//! as many in a second as in its first 100 ms (the sleeps grow); a back-off capped at 40 ms
//! keeps attempting every 40 ms once it reaches the cap (about 50 in 2 s, where doubling
//! without a cap would make 8); a constant 50 ms makes about 20 in a second.

use std::time::{Duration, Instant};

use relock::SpinBackoff;
use relock_tests::*;

/// The number of attempts of a `try_lock_for(wait)` of a spin lock of `waiter` that is held
/// throughout, counted on the server.
async fn attempts_over(server: &RedisServer, waiter: &relock::Client, wait: Duration) -> u64 {
    let lock = waiter.spin_lock("sp6");
    server.reset_stats().unwrap();
    let start = Instant::now();
    assert!(lock.try_lock_for(wait).await.unwrap().is_none());
    let took = start.elapsed();
    let n = server.command_calls("evalsha").unwrap() + server.command_calls("eval").unwrap();
    println!("{wait:?}: {n} attempts in {took:?}");
    n
}

async fn client_with(server: &RedisServer, backoff: SpinBackoff) -> relock::Client {
    relock::Client::builder()
        .url(server.url())
        .spin_backoff(backoff)
        .command_timeout(Duration::from_secs(1))
        .build()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_spin_waiters_back_off_grows_to_its_cap_and_stays_there() {
    let server = server();
    let holder = client(&server).await;
    let held = holder.spin_lock("sp6").lock().await.unwrap();

    // Redisson's default: attempts at about 0, 1, 3, 7, 15, 31, 63, 127, 255 ms, then every
    // 128 ms (plus up to 4 ms of jitter each), and one last at the deadline.
    let default = client(&server).await;
    attempts_over(&server, &default, Duration::from_millis(20)).await; // warm
    let first = attempts_over(&server, &default, Duration::from_millis(100)).await;
    let second = attempts_over(&server, &default, Duration::from_secs(1)).await;
    assert!((5..=9).contains(&first), "{first} attempts in 100 ms");
    assert!((9..=18).contains(&second), "{second} attempts in 1 s");
    assert!(
        second < 3 * first,
        "the sleeps did not grow: {first} then {second}"
    );

    // Capped at 40 ms, no jitter: 0, 10, 30, 70, then every 40 ms.
    let capped = client_with(
        &server,
        SpinBackoff::exponential(Duration::from_millis(10), 2, Duration::from_millis(40))
            .with_jitter(Duration::ZERO),
    )
    .await;
    let n = attempts_over(&server, &capped, Duration::from_secs(2)).await;
    assert!(
        (30..=53).contains(&n),
        "{n} attempts in 2 s capped at 40 ms"
    );

    // Constant 50 ms: 0, 50, 100, … 1000.
    let constant = client_with(
        &server,
        SpinBackoff::constant(Duration::from_millis(50)).with_jitter(Duration::ZERO),
    )
    .await;
    let n = attempts_over(&server, &constant, Duration::from_secs(1)).await;
    assert!((12..=22).contains(&n), "{n} attempts in 1 s every 50 ms");

    // A bad back-off is refused when the client is built, naming the setting.
    let bad = relock::Client::builder()
        .url(server.url())
        .spin_backoff(SpinBackoff::exponential(
            Duration::from_millis(50),
            2,
            Duration::from_millis(10),
        ))
        .build()
        .await;
    assert_invalid(bad, "spin_backoff");

    held.unlock().await.unwrap();
    for c in [holder, default, capped, constant] {
        c.shutdown().await;
    }
    assert_nothing_left(&server).await;
}

//! A rate limiter's waiter subscribes to nothing: no message can wake it, so its client's
//! subscriber connection being down changes nothing for it. It sleeps the whole delay the
//! server returned (until the oldest record expires) and asks again; it must not re-check every
//! 100 ms as a waiter that a message would wake does while no message can reach it.

use std::time::{Duration, Instant};

use relock::RateType;
use relock_testkit::{Direction, Mode};
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limiter_waiter_sleeps_its_whole_delay_while_its_subscriber_connection_is_down() {
    let s = server();
    let (proxy, client, sub) = crate::support::proxied_waiter(&s, Duration::from_secs(3)).await;
    let limiter = client.rate_limiter("x103");
    let interval = Duration::from_millis(1200);
    limiter
        .try_set_rate(RateType::Overall, 1, interval)
        .await
        .unwrap();

    // The pool's connections pass; any new connection (the subscriber's next) is 5 s behind,
    // so the subscriber stays down for the whole wait.
    for c in proxy.conns() {
        if c != sub {
            proxy.set_conn(c, Direction::Up, Some(Mode::Pass));
        }
    }
    proxy.set(Direction::Up, Mode::Delay(Duration::from_secs(5)));
    assert!(proxy.reset_conn(sub));
    wait_until(
        Duration::from_secs(3),
        "the subscriber's reconnect on the wire",
        || async {
            proxy
                .conns()
                .into_iter()
                .any(|c| c.get() > sub.get() && proxy.conn_held(c, Direction::Up) > 0)
        },
    )
    .await
    .unwrap();

    assert!(limiter.try_acquire(1).await.unwrap());
    s.reset_stats().unwrap();
    let began = Instant::now();
    assert!(limiter
        .try_acquire_for(1, Duration::from_secs(3))
        .await
        .unwrap());
    let took = began.elapsed();
    let calls = s.command_calls("evalsha").unwrap() + s.command_calls("eval").unwrap();
    assert!(
        took >= interval - Duration::from_millis(200),
        "granted after {took:?}, before the first permit's record expired ({interval:?})"
    );
    assert!(
        calls <= 3,
        "{calls} script calls over a {took:?} wait: the waiter polled while its subscriber was down"
    );
    client.shutdown().await;
}

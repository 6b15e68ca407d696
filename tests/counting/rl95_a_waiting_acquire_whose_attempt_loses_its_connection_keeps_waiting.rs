//! A rate limiter's waiter whose attempt meets a reset connection retries, as the
//! semaphore's and latch's waits do, and ends with the permit: `acquire` is ended early only
//! by shutdown. (The lost attempt took a permit too: it counts until its interval ends.)

use std::time::Duration;

use relock::RateType;
use relock_testkit::Direction;
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_acquire_whose_attempt_loses_its_connection_keeps_waiting() {
    let server = server();
    let (proxy, c) = client_behind_proxy(&server, Duration::from_secs(3)).await;
    let l = c.rate_limiter("rl95");
    l.set_rate(RateType::Overall, 2, Duration::from_millis(600))
        .await
        .unwrap();
    assert!(l.try_acquire(2).await.unwrap());
    let waiter = {
        let l = l.clone();
        tokio::spawn(async move { l.acquire(1).await })
    };
    wait_until(Duration::from_secs(3), "the waiter to park", || async {
        c.parked_waiters() == 1
    })
    .await
    .unwrap();
    // Hold the replies of the connections open now; once the waiter's next attempt has run on
    // the server (the expired record counted back, one permit taken: value 1), reset them.
    let frozen = proxy.freeze_existing(Direction::Down);
    wait_until(Duration::from_secs(3), "the attempt to run", || async {
        crate::get(&server, "{rl95}:value").as_deref() == Some("1")
    })
    .await
    .unwrap();
    for id in frozen {
        proxy.reset_conn(id);
    }
    let r = bounded(Duration::from_secs(5), "acquire", waiter)
        .await
        .unwrap();
    c.shutdown().await;
    assert!(
        r.is_ok(),
        "acquire(1) ended with {r:?} after its attempt's connection was reset (the permit was taken)"
    );
}

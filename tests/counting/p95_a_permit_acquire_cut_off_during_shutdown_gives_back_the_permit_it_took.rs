//! A permit acquire whose script ran (it took the permit under its id) and whose reply is lost
//! with its connection while `shutdown()` waits for work in flight. The counting semaphore
//! gives such a permit back (s92); the permit-expirable one must too, or its permit is held by
//! nobody until its lease ends, and its keys outlive the shutdown.

use std::time::Duration;

use relock_testkit::Direction;
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permit_acquire_cut_off_during_shutdown_gives_back_the_permit_it_took() {
    let server = server();
    let (proxy, c) = client_behind_proxy(&server, Duration::from_millis(1500)).await;
    let sem = c.permit_expirable_semaphore("p95");
    assert!(sem.try_set_permits(1).await.unwrap());
    // Load the scripts first.
    let warm = sem.try_acquire(None).await.unwrap().unwrap();
    warm.release().await.unwrap();
    let held = || {
        server
            .cmd(&["ZCARD", "{p95}:timeout"])
            .unwrap()
            .as_int()
            .unwrap()
    };
    let count = || crate::get(&server, "p95");

    let frozen = proxy.freeze_existing(Direction::Down);
    let acquire = {
        let sem = sem.clone();
        tokio::spawn(async move { sem.acquire(None).await.map(drop) })
    };
    wait_until(
        Duration::from_secs(3),
        "the attempt to take the permit",
        || async { held() == 1 },
    )
    .await
    .unwrap();
    // Shutdown begins while the attempt is in flight; then its reply is lost.
    let shutdown = shut_down_losing_the_held_reply(&proxy, &frozen, &c, || async {
        matches!(sem.available().await, Err(relock::Error::Shutdown))
    })
    .await;
    let r = bounded(Duration::from_secs(5), "acquire", acquire)
        .await
        .unwrap();
    assert!(r.is_err(), "the reply was lost: {r:?}");
    bounded(Duration::from_secs(10), "shutdown", shutdown)
        .await
        .unwrap();
    let back = wait_until(Duration::from_secs(2), "the permit given back", || async {
        held() == 0 && count().as_deref() == Some("1")
    })
    .await;
    assert!(
        back.is_ok(),
        "shutdown returned and the permit the cut-off attempt took is not back: {} held (PTTL of its lease {:?}), count {:?}, keys {:?}",
        held(),
        server.cmd(&["ZRANGE", "{p95}:timeout", "0", "-1", "WITHSCORES"]).map(|v| format!("{v:?}")),
        count(),
        server.keys().unwrap()
    );
}

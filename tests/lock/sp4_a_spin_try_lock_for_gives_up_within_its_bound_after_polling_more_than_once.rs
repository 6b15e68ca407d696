//! A spin lock's `try_lock_for` returns `None` within its bound while another client holds the
//! lock, having attempted more than once (each attempt one script call on the server) and
//! never sleeping past its bound: the last sleep is cut to the deadline and one last attempt
//! made there. `try_lock` makes one attempt and returns at once. Nothing subscribes.

use std::time::{Duration, Instant};

use relock_tests::*;

/// The acquire script calls the server ran since its stats were reset.
fn script_calls(server: &RedisServer) -> u64 {
    server.command_calls("evalsha").unwrap() + server.command_calls("eval").unwrap()
}

#[tokio::test]
async fn a_spin_try_lock_for_gives_up_within_its_bound_after_polling_more_than_once() {
    let server = server();
    let a = client(&server).await;
    let b = client(&server).await;
    let held = a.spin_lock("sp4").lock().await.unwrap();
    let lock = b.spin_lock("sp4");
    // Warm: the script is cached, so each attempt is one EVALSHA.
    assert!(lock.try_lock().await.unwrap().is_none());

    server.reset_stats().unwrap();
    let start = Instant::now();
    assert!(lock.try_lock().await.unwrap().is_none());
    assert!(start.elapsed() < Duration::from_millis(200));
    assert_eq!(script_calls(&server), 1, "try_lock attempts once");

    for bound in [
        Duration::from_millis(5),
        Duration::from_millis(300),
        Duration::from_millis(800),
    ] {
        server.reset_stats().unwrap();
        let start = Instant::now();
        let r = bounded(
            Duration::from_secs(3),
            "try_lock_for",
            lock.try_lock_for(bound),
        )
        .await
        .unwrap();
        let took = start.elapsed();
        let attempts = script_calls(&server);
        println!("try_lock_for({bound:?}): None after {took:?}, {attempts} attempts");
        assert!(r.is_none());
        assert!(took >= bound, "gave up early: {took:?} < {bound:?}");
        // One last attempt at the deadline: a round trip, not another sleep.
        assert!(
            took <= bound + Duration::from_millis(100),
            "gave up late: {took:?} for {bound:?}"
        );
        assert!(attempts > 1, "{attempts} attempts in {bound:?}");
    }
    assert_eq!(
        server
            .pubsub_numsub("redisson_lock__channel:{sp4}")
            .unwrap(),
        0
    );
    assert_eq!(b.subscribed_channels(), 0);
    held.unlock().await.unwrap();
    let g = lock
        .try_lock()
        .await
        .unwrap()
        .expect("free after the release");
    g.unlock().await.unwrap();
    a.shutdown().await;
    b.shutdown().await;
    assert_nothing_left(&server).await;
}

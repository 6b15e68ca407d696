//! Two local waiters share one channel subscription. The first (`try_lock_for(300 ms)`) gives
//! up while its SUBSCRIBE and confirmation are still on the wire (the subscriber connection is
//! 1.2 s behind); the second must then send and confirm the subscription itself before it
//! relies on it, so the holder's release, published meanwhile, is not lost. Found by review:
//! before the fix the second waiter skipped the confirmation and slept 9.45 s of a 10 s lease.

use std::time::{Duration, Instant};

use relock_testkit::{Direction, Mode};
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_that_gives_up_mid_confirm_leaves_the_next_local_waiter_an_unconfirmed_subscription(
) {
    let s = server();
    let (proxy, waiter_client, sub) =
        crate::support::proxied_waiter(&s, Duration::from_secs(3)).await;
    // Its own subscription (its hold's watch) would count as the waiter's below.
    let holder = client_not_watching_holds(&s, Duration::from_secs(10)).await;
    let name = "rv10";
    proxy.set_conn(
        sub,
        Direction::Up,
        Some(Mode::Delay(Duration::from_millis(1200))),
    );
    let channel = format!("redisson_lock__channel:{{{name}}}");

    let held = holder.lock(name).lock().await.unwrap();
    // A gives up after 300 ms, while its SUBSCRIBE + PING are still held by the proxy.
    let a = {
        let lock = waiter_client.lock(name);
        tokio::spawn(async move { lock.try_lock_for(Duration::from_millis(300)).await })
    };
    wait_until(
        Duration::from_secs(3),
        "A's SUBSCRIBE on the wire",
        || async { proxy.conn_held(sub, Direction::Up) > 0 },
    )
    .await
    .unwrap();
    // B arrives while A's confirmation is in flight.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let b = {
        let lock = waiter_client.lock(name);
        tokio::spawn(async move { lock.lock().await.map(|g| (Instant::now(), g)) })
    };
    let a = bounded(Duration::from_secs(3), "A", a)
        .await
        .unwrap()
        .unwrap();
    assert!(a.is_none(), "A gave up");
    // Let B make its retry, then release while the SUBSCRIBE is still on the wire.
    tokio::time::sleep(Duration::from_millis(250)).await;
    let waited = crate::support::release_before_subscribed(
        &s,
        &channel,
        held,
        b,
        "B",
        "the release must happen before the SUBSCRIBE landed for this scenario",
    )
    .await;
    assert!(
        waited < Duration::from_secs(3),
        "B got the lock only {waited:?} after its release (holder's lease 10 s): B retried on \
         a subscription A had left unconfirmed, and the release message reached nobody"
    );
}

//! A waiter is parked; its client's subscriber connection is reset and cannot come back
//! promptly (every new connection is 1 s behind, so fred's reconnects keep timing out). With no
//! subscription, no release message can reach it: the connection error wakes it, and while the
//! subscriber is down it re-checks every 100 ms instead of sleeping for the holder's lease.
//! Found by review: before the fix it took the lock 9.6 s after the release (lease 10 s).

use std::time::Duration;

use relock_testkit::{Direction, Mode};
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_whose_subscriber_connection_is_down_still_takes_a_released_lock_promptly() {
    let s = server();
    let (proxy, waiter_client, sub) =
        crate::support::proxied_waiter(&s, Duration::from_secs(3)).await;
    // Its own subscription (its hold's watch) would count as the waiter's below.
    let holder = client_not_watching_holds(&s, Duration::from_secs(10)).await;
    let name = "rv20";
    let channel = format!("redisson_lock__channel:{{{name}}}");

    let held = holder.lock(name).lock().await.unwrap();
    let waiter = spawn_parked_waiter(&s, &waiter_client, waiter_client.lock(name)).await;
    wait_until(Duration::from_secs(3), "the waiter parked", || async {
        waiter_client.parked_waiters() == 1
    })
    .await
    .unwrap();
    // The pool's connections pass; any new connection (the subscriber's next) is 1 s behind.
    for c in proxy.conns() {
        if c != sub {
            proxy.set_conn(c, Direction::Up, Some(Mode::Pass));
        }
    }
    proxy.set(Direction::Up, Mode::Delay(Duration::from_millis(1000)));
    assert!(proxy.reset_conn(sub));
    // The new subscriber connection's re-SUBSCRIBE is on the wire.
    wait_until(
        Duration::from_secs(3),
        "re-SUBSCRIBE on the wire",
        || async {
            proxy
                .conns()
                .into_iter()
                .any(|c| c.get() > sub.get() && proxy.conn_held(c, Direction::Up) > 0)
        },
    )
    .await
    .unwrap();
    // The waiter was woken by the reconnect and has retried over the pool by now.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let waited = crate::support::release_before_subscribed(
        &s,
        &channel,
        held,
        waiter,
        "waiter",
        "the release must happen before the re-SUBSCRIBE landed for this scenario",
    )
    .await;
    assert!(
        waited < Duration::from_secs(3),
        "the waiter got the lock only {waited:?} after its release (holder's lease 10 s): \
         woken by the reconnect, it retried before the re-SUBSCRIBE landed"
    );
}

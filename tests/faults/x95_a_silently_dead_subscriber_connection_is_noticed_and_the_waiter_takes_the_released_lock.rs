//! The subscriber connection goes silent (a half-open TCP connection: replies and pushes are
//! dropped, no RST). Nothing is in flight on it, so neither fred nor the OS notices; relock's
//! keep-alive PING (every second while waiters rely on it) times out, the subscriber is
//! reconnected and every waiter woken, and the waiter takes the released lock within a few
//! seconds instead of at the holder's 12 s lease end. Found by review: before the keep-alive it
//! slept 8.99 s after the release.

use std::time::Duration;

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silently_dead_subscriber_connection_is_noticed_and_the_waiter_takes_the_released_lock() {
    let s = server();
    let (proxy, waiter_client, sub) =
        crate::support::proxied_waiter(&s, Duration::from_secs(2)).await;
    let holder = client_with_lease(&s, Duration::from_secs(12)).await;
    let name = "r20";
    let waited = crate::support::waited_behind_a_silent_subscriber(
        &s,
        &proxy,
        sub,
        &holder,
        &waiter_client,
        name,
    )
    .await;
    assert!(
        waited < Duration::from_secs(4),
        "the waiter took the lock {waited:?} after the release (lease 12 s): its subscriber \
         connection was dead but never detected"
    );
}

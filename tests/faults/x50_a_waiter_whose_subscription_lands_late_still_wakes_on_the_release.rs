//! A waiter whose subscription is slow to land (its subscriber connection is 600 ms behind the
//! pool) still wakes on a release published while its SUBSCRIBE is on the wire: `subscribe`
//! returns only once the server has registered the subscription (a PING on the same connection
//! answers after it), so the waiter's "subscribe, then retry" is ordered on the server and the
//! retry sees the lock free. Before that fix, the waiter slept for the holder's whole lease
//! (found by review: ~8 s here).

use std::time::{Duration, Instant};

use relock_testkit::{Direction, Mode};
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_whose_subscription_lands_late_still_wakes_on_the_release() {
    let s = server();
    let (proxy, waiter_client, sub) =
        crate::support::proxied_waiter(&s, Duration::from_secs(2)).await;
    // Its own subscription (its hold's watch) would count as the waiter's below.
    let holder = client_not_watching_holds(&s, Duration::from_secs(8)).await;
    let name = "r30";
    proxy.set_conn(
        sub,
        Direction::Up,
        Some(Mode::Delay(Duration::from_millis(600))),
    );

    let held = holder.lock(name).lock().await.unwrap();
    let channel = format!("redisson_lock__channel:{{{name}}}");
    let waiter = {
        let lock = waiter_client.lock(name);
        tokio::spawn(async move { lock.lock().await.map(|g| (Instant::now(), g)) })
    };
    // The waiter's SUBSCRIBE is on the wire (held 1 s by the proxy) ...
    wait_until(Duration::from_secs(3), "SUBSCRIBE on the wire", || async {
        proxy.conn_held(sub, Direction::Up) > 0
    })
    .await
    .unwrap();
    // Release while the SUBSCRIBE is still held by the proxy.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let waited = crate::support::release_before_subscribed(
        &s,
        &channel,
        held,
        waiter,
        "waiter",
        "released before the subscription landed",
    )
    .await;
    assert!(
        waited < Duration::from_secs(3),
        "the lock was released but the waiter got it only {waited:?} later (the holder's \
         lease was 8 s): the release message was published before its SUBSCRIBE landed"
    );
}

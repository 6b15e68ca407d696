//! A `lock()` future that was polled (its acquire is on the wire, its reply held back) and is
//! kept alive, unpolled, in the caller's scope while the caller runs `shutdown()` (the
//! `tokio::pin!` + `select!` pattern). The attempt finishes on its own while shutdown waits,
//! and shutdown releases its grant: nothing is left on the server. (Found by review of a
//! design that ran attempts in the caller's task: there the grant stayed for a lease.)

use std::time::Duration;

use relock_testkit::{Direction, FaultProxy, Mode};
use relock_tests::*;

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_kept_alive_across_shutdown_leaves_no_hold() {
    let s = server();
    let proxy = FaultProxy::start(&s.addr()).unwrap();
    let c = proxied_client(
        &proxy,
        "x98",
        Duration::from_secs(1),
        Duration::from_secs(20),
    )
    .await;
    let lock = c.lock("x98");
    // The scripts are loaded (an EVALSHA's NOSCRIPT reply would be held too).
    lock_and_unlock(&c.lock("x98-warm")).await;
    // Replies are held back: the acquire reaches the server, its reply does not come yet.
    // Boxed, not `tokio::pin!`ed, so that it can be dropped at a chosen moment.
    let acquire = ran_with_reply_held(&proxy, &s, "x98", true, Box::pin(lock.lock())).await;
    // The network is fine again; the application shuts down (the acquire future is still in
    // scope, as after a `select!` over `&mut acquire`).
    proxy.set(Direction::Down, Mode::Pass);
    let t = std::time::Instant::now();
    bounded(Duration::from_secs(10), "shutdown", c.shutdown()).await;
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "shutdown took {:?}",
        t.elapsed()
    );
    drop(acquire);
    let r = wait_until(Duration::from_secs(3), "the lock released", || async {
        s.cmd(&["EXISTS", "x98"]).unwrap().as_int() == Some(0)
    })
    .await;
    assert!(
        r.is_ok(),
        "the grant of an acquire in flight at shutdown is still on the server: PTTL {:?}, HGETALL {:?}",
        s.cmd(&["PTTL", "x98"]).unwrap(),
        hgetall(&s, "x98")
    );
}

//! A `lock()` future whose acquire is on the wire (granted on the server, reply held back) is
//! dropped by a thread that is not one of the runtime's (a plain `std::thread`, as a sync
//! `Drop` of a struct holding the future would). The runtime is alive and well: the grant's
//! reply comes, and the attempt must still end as a guard whose drop releases it (or be
//! released at shutdown). Nothing may be left on the server.

use std::time::Duration;

use relock_testkit::{Direction, FaultProxy, Mode};
use relock_tests::*;

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_dropped_off_the_runtime_threads_still_releases_its_grant() {
    let s = server();
    let proxy = FaultProxy::start(&s.addr()).unwrap();
    let c = proxied_client(
        &proxy,
        "x92",
        Duration::from_secs(1),
        Duration::from_secs(20),
    )
    .await;
    let lock = c.lock("x92");
    lock_and_unlock(&c.lock("x92-warm")).await;
    let acquire = ran_with_reply_held(&proxy, &s, "x92", true, Box::pin(lock.lock())).await;
    // Dropped on a thread outside the runtime's context.
    std::thread::scope(|t| {
        t.spawn(move || drop(acquire));
    });
    proxy.set(Direction::Down, Mode::Pass);
    let released = wait_until(Duration::from_secs(3), "the lock released", || async {
        s.cmd(&["EXISTS", "x92"]).unwrap().as_int() == Some(0)
    })
    .await;
    let before_shutdown = (s.cmd(&["PTTL", "x92"]).unwrap(), hgetall(&s, "x92"));
    bounded(Duration::from_secs(10), "shutdown", c.shutdown()).await;
    let after_shutdown = (s.cmd(&["PTTL", "x92"]).unwrap(), hgetall(&s, "x92"));
    assert!(
        released.is_ok() && after_shutdown.1.is_empty(),
        "the grant of a dropped acquire is left on the server: 3 s after its reply came \
         (PTTL, HGETALL) = {before_shutdown:?}; after shutdown {after_shutdown:?}"
    );
}

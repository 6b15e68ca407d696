//! An `unlock()` future whose release is on the wire (reply held back) is dropped by a thread
//! that is not one of the runtime's. The runtime is alive: the release must still run to its
//! end and take the hold out of the client's records. Otherwise the hold stays "releasing"
//! forever, and every later `lock()` of that name on this client first waits a whole command
//! timeout for a release that will never land (`await_local_release`).

use std::time::{Duration, Instant};

use relock_testkit::{Direction, FaultProxy, Mode};
use relock_tests::*;

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unlock_dropped_off_the_runtime_threads_still_ends_the_hold() {
    let s = server();
    let proxy = FaultProxy::start(&s.addr()).unwrap();
    // Command timeout 3 s (the default).
    let c = proxied_client(
        &proxy,
        "x93",
        Duration::from_secs(3),
        Duration::from_secs(20),
    )
    .await;
    let lock = c.lock("x93");
    lock_and_unlock(&c.lock("x93-warm")).await;
    let guard = lock.lock().await.unwrap();
    let unlock = ran_with_reply_held(&proxy, &s, "x93", false, Box::pin(guard.unlock())).await;
    std::thread::scope(|t| {
        t.spawn(move || drop(unlock));
    });
    proxy.set(Direction::Down, Mode::Pass);
    wait_until(
        Duration::from_secs(3),
        "the lock released on the server",
        || async { s.cmd(&["EXISTS", "x93"]).unwrap().as_int() == Some(0) },
    )
    .await
    .expect("the release reached the server");
    // The release's reply comes back and is handled without the caller: the hold leaves the
    // client's records.
    wait_until(
        Duration::from_secs(3),
        "the hold out of the client's records",
        || async { c.held_locks() == 0 },
    )
    .await
    .expect("the dropped unlock's release ended the hold");
    let mut slow = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        let g = bounded(Duration::from_secs(10), "lock", lock.lock())
            .await
            .unwrap();
        slow.push(t.elapsed());
        g.unlock().await.unwrap();
    }
    bounded(Duration::from_secs(15), "shutdown", c.shutdown()).await;
    assert!(
        slow.iter().all(|d| *d < Duration::from_secs(1)),
        "each lock() of a free lock waited for a release that will never land: {slow:?}"
    );
}

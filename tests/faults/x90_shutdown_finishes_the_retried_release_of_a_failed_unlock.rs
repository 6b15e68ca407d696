//! `unlock()` times out (its release is dropped by the network) and the release is retried in
//! the background; the application then calls `shutdown()` with the network fine again. The
//! retry makes its last attempt when shutdown begins, and shutdown waits for it: after
//! `shutdown()` returns the lock is gone. Found by review: before the fix the lock stayed held
//! for the rest of its lease (17.6 s).

use std::time::Duration;

use relock_testkit::{Direction, FaultProxy, Mode};
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_finishes_the_retried_release_of_a_failed_unlock() {
    let s = server();
    let proxy = FaultProxy::start(&s.addr()).unwrap();
    let c = relock::Client::builder()
        .url(proxy.url())
        .watchdog_lease(Duration::from_secs(20))
        .command_timeout(Duration::from_secs(1))
        .connect_timeout(Duration::from_secs(2))
        .build()
        .await
        .unwrap();
    let name = "rv30";
    let guard = c.lock(name).lock().await.unwrap();
    let key = name.to_string();
    assert_eq!(s.cmd(&["EXISTS", &key]).unwrap().as_int(), Some(1));

    // The release is lost on the way (every connection open now drops what it is sent).
    let conns = proxy.conns();
    for &id in &conns {
        proxy.set_conn(id, Direction::Up, Some(Mode::Blackhole));
    }
    let r = bounded(Duration::from_secs(5), "unlock", guard.unlock()).await;
    assert!(r.is_err(), "the release was dropped: {r:?}");
    // The network is healthy again; the application shuts the client down.
    for &id in &conns {
        proxy.set_conn(id, Direction::Up, None);
        proxy.reset_conn(id);
    }
    bounded(Duration::from_secs(10), "shutdown", c.shutdown()).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let pttl = s.cmd(&["PTTL", &key]).unwrap().as_int().unwrap();
    assert!(
        pttl < 0,
        "after shutdown() returned the lock is still held on the server for {pttl} ms more \
         (keys {:?}): the failed unlock's background retry gave up at shutdown and shutdown \
         did not release the hold",
        s.keys().unwrap()
    );
}

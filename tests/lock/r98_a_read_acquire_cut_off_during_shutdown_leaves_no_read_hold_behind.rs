//! A read acquire whose script ran (the read hold and its timeout key are written) and whose
//! reply is lost with its connection while `shutdown()` waits for work in flight. The hold is
//! nobody's: it must be cleaned up before shutdown returns, so that a writer of another client
//! gets in at once rather than after the reader's lease, and no key is left behind.

use std::time::Duration;

use relock_testkit::Direction;
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_acquire_cut_off_during_shutdown_leaves_no_read_hold_behind() {
    let server = server();
    let (proxy, c) = client_behind_proxy(&server, Duration::from_millis(1500)).await;
    let other = client(&server).await;
    let rw = c.read_write_lock("r98");
    // Load the scripts first.
    rw.read_lock().lock().await.unwrap().unlock().await.unwrap();

    let frozen = proxy.freeze_existing(Direction::Down);
    let acquire = {
        let rw = rw.clone();
        tokio::spawn(async move { rw.read_lock().lock().await.map(drop) })
    };
    wait_until(Duration::from_secs(3), "the read hold written", || async {
        server.cmd(&["HLEN", "r98"]).unwrap().as_int() == Some(2)
    })
    .await
    .unwrap();
    // Shutdown begins while the attempt is in flight; then its reply is lost.
    let shutdown = shut_down_losing_the_held_reply(&proxy, &frozen, &c, || async {
        matches!(
            rw.read_lock().try_lock().await,
            Err(relock::Error::Shutdown)
        )
    })
    .await;
    let r = bounded(Duration::from_secs(5), "acquire", acquire)
        .await
        .unwrap();
    assert!(r.is_err(), "the reply was lost: {r:?}");
    bounded(Duration::from_secs(10), "shutdown", shutdown)
        .await
        .unwrap();
    // A writer of another client gets in now, not after the orphan reader's 30 s lease.
    let w = bounded(
        Duration::from_secs(2),
        "a writer of another client",
        other.read_write_lock("r98").write_lock().try_lock(),
    )
    .await
    .unwrap();
    assert!(
        w.is_some(),
        "shutdown returned and a read hold nobody holds is left: {:?}",
        server.keys().unwrap()
    );
    w.unwrap().unlock().await.unwrap();
    other.shutdown().await;
    assert_nothing_left(&server).await;
}

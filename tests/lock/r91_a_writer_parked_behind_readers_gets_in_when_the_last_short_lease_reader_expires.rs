//! Review (lost wake-up): a writer parks behind two readers; its sleep bound is the hash's
//! PTTL, the longest reader's lease (20 s). The long reader releases: `rw_read_release.lua`
//! shortens the hash's TTL to the other reader's (1 s) and publishes nothing (the lock is still
//! held). That reader then dies (its guard is forgotten): the hash expires after about 1 s, and
//! nothing wakes the writer, which sleeps on until its 20 s bound. Expected: the writer gets
//! the lock within about the remaining holder's lease.

use std::time::Duration;

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_parked_behind_readers_gets_in_when_the_last_short_lease_reader_expires() {
    let server = server();
    let (a, b, c) = (
        client(&server).await,
        client(&server).await,
        client(&server).await,
    );
    let name = "r91";
    let long = a
        .read_write_lock(name)
        .read_lock()
        .with_lease(Duration::from_secs(20))
        .lock()
        .await
        .unwrap();
    let short = b
        .read_write_lock(name)
        .read_lock()
        .with_lease(Duration::from_secs(1))
        .lock()
        .await
        .unwrap();
    // The short reader's process dies: nobody releases it, its lease ends it.
    std::mem::forget(short);
    let w = c.read_write_lock(name).write_lock();
    let writer = tokio::spawn(async move { w.lock().await.map(|g| g.fencing_token()) });
    wait_until(Duration::from_secs(3), "a parked writer", || async {
        c.parked_waiters() == 1
    })
    .await
    .unwrap();
    let released = tokio::time::Instant::now();
    long.unlock().await.unwrap();
    // The only holder left has under 1 s of lease: the writer should be in well within 3 s.
    let got = tokio::time::timeout(Duration::from_secs(3), writer).await;
    let pttl = server.cmd(&["PTTL", name]).unwrap().as_int();
    assert!(
        got.is_ok(),
        "the writer was still parked {:?} after the long reader's release, although the lock \
         has been free since its last holder's 1 s lease ended (hash PTTL now {pttl:?})",
        released.elapsed()
    );
    a.shutdown().await;
    b.shutdown().await;
    c.shutdown().await;
}

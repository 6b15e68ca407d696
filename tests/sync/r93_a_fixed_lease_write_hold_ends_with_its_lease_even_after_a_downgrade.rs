//! Review (behaviour vs docs): `WriteLock::with_lease` says write holds taken through it
//! expire after the lease. After a downgrade (a read hold with the watchdog beside it), the
//! write field lives in the same hash, whose TTL the read hold's renewals keep extending: the
//! write hold never expires on the server. Its guard reports itself lost at its lease, yet
//! `mode` stays `write` and other clients' readers are refused for as long as the read hold
//! is renewed.

use std::time::Duration;

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "known limit (docs/safety.md, read-write lock): a downgraded read hold's renewals keep a fixed-lease write hold's field alive on the server after its guard reported it lost"]
async fn a_fixed_lease_write_hold_ends_with_its_lease_even_after_a_downgrade() {
    let server = server();
    let a = client_with_lease(&server, Duration::from_millis(900)).await;
    let b = client(&server).await;
    let rw = a.read_write_lock("r93");
    let write = rw
        .write_lock()
        .with_lease(Duration::from_millis(500))
        .lock()
        .await
        .unwrap();
    let read = write.scope(rw.read_lock().lock()).await.unwrap();
    // Well past the write lease (and past the read hold's own lease: it is renewed).
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(write.is_lost(), "the write guard's lease ended");
    assert!(!read.is_lost());
    let mode = server.cmd(&["HGET", "r93", "mode"]).unwrap().as_string();
    let other = b
        .read_write_lock("r93")
        .read_lock()
        .try_lock()
        .await
        .unwrap();
    let shared = other.is_some();
    drop(other);
    assert!(
        shared,
        "another client's reader was refused 1 s after the write hold's 500 ms lease ended \
         (mode {mode:?}): the write hold lives on with the read hold's renewals"
    );
    drop(read);
    drop(write);
    a.shutdown().await;
    b.shutdown().await;
}

//! Review (double grant across lock kinds): a plain lock and a read-write lock of one name are
//! one hash on the server, so a plain `lock()` waits while readers hold it. Inside the scope of
//! a read hold, though, the plain lock's `reentry::resolve` finds that read hold (it matches
//! holds by key only, not by kind) and "re-enters" it: the caller gets an exclusive plain-lock
//! guard while another client's reader shares the key.

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_lock_inside_a_read_hold_scope_is_not_granted_while_other_readers_share_the_key() {
    let server = server();
    let (a, b) = (client(&server).await, client(&server).await);
    let mine = a.read_write_lock("r94").read_lock().lock().await.unwrap();
    let other = b.read_write_lock("r94").read_lock().lock().await.unwrap();
    // Outside the scope the plain lock is refused, as it should be.
    assert!(a.lock("r94").try_lock().await.unwrap().is_none());
    let plain = mine.scope(a.lock("r94").try_lock()).await.unwrap();
    let granted = plain.is_some();
    drop(plain);
    assert!(
        !granted,
        "an exclusive plain lock was granted on a key that another client reads"
    );
    drop(other);
    drop(mine);
    a.shutdown().await;
    b.shutdown().await;
}

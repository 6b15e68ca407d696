//! Review (leak): `force_unlock` deletes the hash only. Each read hold's timeout key
//! (`{name}:<field>:rwlock_timeout:1`) stays; the holder's later release finds its field gone
//! and returns before deleting it, so it is left for the whole lease (30 s by default).

use std::time::Duration;

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_force_unlock_of_a_read_write_lock_leaves_no_timeout_keys_behind() {
    let server = server();
    let (a, b) = (client(&server).await, client(&server).await);
    let reader = a.read_write_lock("r92").read_lock().lock().await.unwrap();
    let timeout_key = format!("{{r92}}:{}:rwlock_timeout:1", reader.owner());
    assert!(b
        .read_write_lock("r92")
        .write_lock()
        .force_unlock()
        .await
        .unwrap());
    // The holder lets go (its release reports the lock lost).
    let _ = reader.unlock().await;
    a.shutdown().await;
    b.shutdown().await;
    let left = wait_until(Duration::from_secs(5), "no keys left", || async {
        server.dbsize().unwrap() == 0
    })
    .await;
    assert!(
        left.is_ok(),
        "left behind: {:?} (timeout key PTTL {:?})",
        server.keys().unwrap(),
        server.cmd(&["PTTL", &timeout_key]).unwrap().as_int()
    );
}

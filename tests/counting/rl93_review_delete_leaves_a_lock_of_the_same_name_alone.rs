//! Review reproduction: every rate-limiter script but `rate_delete.lua` refuses a key of
//! another kind (`WrongType`, nothing written), and a latch's `delete` does too. A rate
//! limiter's `delete` on a name that holds a lock deletes the held lock.

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "reproduces a bug: delete removes keys of another kind"]
async fn delete_leaves_a_lock_of_the_same_name_alone() {
    let server = server();
    let c = client(&server).await;
    let guard = c.lock("rl93").lock().await.unwrap();
    let deleted = c.rate_limiter("rl93").delete().await;
    let still_held = c.lock("rl93").is_locked().await.unwrap();
    drop(guard);
    c.shutdown().await;
    assert!(
        still_held,
        "rate_limiter(\"rl93\").delete() returned {deleted:?} and the held lock rl93 is gone"
    );
}

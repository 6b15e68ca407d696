//! A rate limiter's `delete` on a name that holds another kind's keys (a held lock) is refused
//! with `WrongType` naming the key, as every other rate-limiter call is, and deletes nothing:
//! the lock stays held.

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_refuses_a_name_holding_a_lock_and_leaves_the_lock_held() {
    let server = server();
    let c = client(&server).await;
    let guard = c.lock("rl93").lock().await.unwrap();
    let deleted = c.rate_limiter("rl93").delete().await;
    let still_held = c.lock("rl93").is_locked().await.unwrap();
    drop(guard);
    c.shutdown().await;
    assert!(
        matches!(&deleted, Err(relock::Error::WrongType { key }) if key == "rl93"),
        "rate_limiter(\"rl93\").delete() on a held lock returned {deleted:?}"
    );
    assert!(
        still_held,
        "rate_limiter(\"rl93\").delete() returned {deleted:?} and the held lock rl93 is gone"
    );
}

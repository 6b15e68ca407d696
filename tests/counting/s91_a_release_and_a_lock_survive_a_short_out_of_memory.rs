//! A server out of memory (maxmemory with `noeviction`, the usual setting for a lock store)
//! refuses writes until memory is freed: an OOM reply is transient. A semaphore release and a
//! lock acquire met by 300 ms of OOM are sent again and succeed within the command timeout
//! (review of issue #14: narrowing `Error::is_transient` first made them fail at once).

use std::time::Duration;

use relock_tests::*;

/// Runs `call` while the server is out of memory for its first 300 ms.
async fn during_oom<T>(server: &RedisServer, call: impl std::future::Future<Output = T>) -> T {
    server.cmd(&["CONFIG", "SET", "maxmemory", "1"]).unwrap();
    let (r, ()) = tokio::join!(call, async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        server.cmd(&["CONFIG", "SET", "maxmemory", "0"]).unwrap();
    });
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_and_a_lock_survive_a_short_out_of_memory() {
    let server = server();
    let c = client(&server).await;
    let sem = c.semaphore("s91");
    assert!(sem.try_set_permits(1).await.unwrap());
    // Load the scripts first.
    assert!(sem.try_acquire(1).await.map(taken).unwrap());
    sem.release(1).await.unwrap();
    lock_and_unlock(&c.lock("s91:lock")).await;

    assert!(sem.try_acquire(1).await.map(taken).unwrap());
    let released = during_oom(&server, sem.release(1)).await;
    assert!(released.is_ok(), "release: {released:?}");
    assert_eq!(crate::get(&server, "s91").as_deref(), Some("1"));
    let lock = c.lock("s91:lock");
    let locked = during_oom(&server, lock.lock()).await;
    let guard = locked.unwrap_or_else(|e| panic!("lock: {e}"));
    guard.unlock().await.unwrap();
    c.shutdown().await;
    server.cmd(&["DEL", "s91"]).unwrap();
    assert_nothing_left(&server).await;
}

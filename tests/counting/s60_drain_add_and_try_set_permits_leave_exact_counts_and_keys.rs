//! The count operations, with the exact key left after each: a missing key is 0 permits and
//! reading or failing to acquire creates nothing; `try_set_permits` sets only if absent;
//! `drain` takes everything and leaves the key at "0"; `add_permits` may go below 0 (which
//! reads as 0 and blocks acquires) and back.

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drain_add_and_try_set_permits_leave_exact_counts_and_keys() {
    let server = server();
    let a = client(&server).await;
    let sem = a.semaphore("s60");

    assert_eq!(sem.available().await.unwrap(), 0);
    assert!(!sem.try_acquire(1).await.map(taken).unwrap());
    assert_eq!(sem.drain().await.unwrap(), 0);
    crate::keys_become(&server, &[]).await;

    assert!(sem.try_set_permits(5).await.unwrap());
    assert!(!sem.try_set_permits(9).await.unwrap());
    assert_eq!(sem.available().await.unwrap(), 5);

    assert_eq!(sem.drain().await.unwrap(), 5);
    assert_eq!(crate::get(&server, "s60").as_deref(), Some("0"));
    assert_eq!(sem.drain().await.unwrap(), 0);
    assert!(
        !sem.try_set_permits(1).await.unwrap(),
        "drained, but it exists"
    );

    sem.add_permits(3).await.unwrap();
    sem.add_permits(-5).await.unwrap();
    assert_eq!(crate::get(&server, "s60").as_deref(), Some("-2"));
    assert_eq!(sem.available().await.unwrap(), 0);
    assert!(!sem.try_acquire(1).await.map(taken).unwrap());
    sem.add_permits(4).await.unwrap();
    assert_eq!(sem.available().await.unwrap(), 2);
    assert!(sem.try_acquire(2).await.map(taken).unwrap());
    assert_eq!(crate::get(&server, "s60").as_deref(), Some("0"));

    // A release of a missing semaphore creates it.
    let other = a.semaphore("s60:{x}");
    other.release(7).await.unwrap();
    assert_eq!(crate::get(&server, "s60:{x}").as_deref(), Some("7"));

    // The same operations through the trait, for code generic over the semaphore.
    async fn take_and_give<S: relock::DistributedSemaphore>(s: &S) -> (bool, u64, u64) {
        let took = s.try_acquire(3).await.unwrap();
        let during = s.available().await.unwrap();
        s.release(3).await.unwrap();
        (took, during, s.available().await.unwrap())
    }
    assert_eq!(take_and_give(&other).await, (true, 4, 7));

    crate::keys_become(&server, &["s60", "s60:{x}"]).await;
    let _ = server.cmd(&["DEL", "s60", "s60:{x}"]).unwrap();
    crate::no_subscriptions(&[&a]).await;
    assert_nothing_left(&server).await;
}

//! Independent reader leases: reader A takes a 300 ms fixed lease and dies (its guard is
//! forgotten); reader B is renewed by the watchdog (lease 600 ms) for well past three leases.
//! A's expiry must not free the lock while B reads (B's timeout key is renewed), and when B
//! releases, A's dead field is dropped and the lock is free at once: a writer gets it.

use std::time::Duration;

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_reader_is_cleaned_up_and_a_renewed_reader_is_not() {
    let server = server();
    let a = client(&server).await;
    let b = client_with_lease(&server, Duration::from_millis(600)).await;
    let dead = a
        .read_write_lock("r40")
        .read_lock()
        .with_lease(Duration::from_millis(300))
        .lock()
        .await
        .unwrap();
    let dead_field = dead.owner().to_string();
    std::mem::forget(dead);
    let live = b.read_write_lock("r40").read_lock().lock().await.unwrap();
    let writer = a.read_write_lock("r40").write_lock();
    // Past three of B's leases: still held for reading, and no writer gets in.
    let until = tokio::time::Instant::now() + Duration::from_millis(2000);
    while tokio::time::Instant::now() < until {
        assert!(
            writer.try_lock().await.unwrap().is_none(),
            "a writer got in while B reads"
        );
        assert!(!live.is_lost());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let timeout_key = format!("{{r40}}:{dead_field}:rwlock_timeout:1");
    assert_eq!(
        server.cmd(&["EXISTS", &timeout_key]).unwrap().as_int(),
        Some(0)
    );
    live.unlock().await.unwrap();
    // A's field is dead: the release freed the lock.
    assert_eq!(server.cmd(&["EXISTS", "r40"]).unwrap().as_int(), Some(0));
    let w = writer.try_lock().await.unwrap().expect("the lock is free");
    w.unlock().await.unwrap();
    a.shutdown().await;
    b.shutdown().await;
    assert_nothing_left(&server).await;
}

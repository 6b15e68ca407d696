//! Waking: six readers (three per client) park behind a writer with a 30 s lease; its release
//! lets all of them in promptly (one message wakes every waiter). Then a writer parks behind
//! those readers, and the last read release lets it in promptly.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_release_wakes_every_waiting_reader_and_a_read_release_wakes_a_writer() {
    let server = server();
    let (a, b) = (client(&server).await, client(&server).await);
    let writer = a.read_write_lock("r30").write_lock().lock().await.unwrap();
    let reading = Arc::new(AtomicU64::new(0));
    let (release_tx, _) = tokio::sync::broadcast::channel::<()>(1);
    let mut readers = Vec::new();
    for c in [&a, &b] {
        for _ in 0..3 {
            let lock = c.read_write_lock("r30").read_lock();
            let (reading, mut release) = (reading.clone(), release_tx.subscribe());
            readers.push(tokio::spawn(async move {
                let g = lock.lock().await.unwrap();
                reading.fetch_add(1, Ordering::SeqCst);
                let _ = release.recv().await;
                g.unlock().await.unwrap();
            }));
        }
    }
    wait_until(Duration::from_secs(5), "six parked readers", || async {
        a.parked_waiters() + b.parked_waiters() == 6
    })
    .await
    .unwrap();
    assert_eq!(reading.load(Ordering::SeqCst), 0);
    writer.unlock().await.unwrap();
    // Far below the writer's 30 s lease, and below any re-check: the message woke them all.
    wait_until(Duration::from_millis(1500), "every reader in", || async {
        reading.load(Ordering::SeqCst) == 6
    })
    .await
    .unwrap();
    // A writer now waits for the six readers.
    let w = b.read_write_lock("r30").write_lock();
    let waiter = tokio::spawn(async move { w.lock().await.map(|g| g.fencing_token()) });
    wait_until(Duration::from_secs(5), "a parked writer", || async {
        b.parked_waiters() == 1
    })
    .await
    .unwrap();
    release_tx.send(()).unwrap();
    for r in readers {
        r.await.unwrap();
    }
    let token = bounded(
        Duration::from_millis(1500),
        "the writer after the readers",
        waiter,
    )
    .await
    .unwrap()
    .unwrap();
    assert!(token > 0);
    a.shutdown().await;
    b.shutdown().await;
    assert_nothing_left(&server).await;
}

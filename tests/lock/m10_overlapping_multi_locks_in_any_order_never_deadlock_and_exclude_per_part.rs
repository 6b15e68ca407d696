//! No deadlock, and exclusion per part: 2 clients × 8 tasks each take a multi-lock over three
//! of four locks, given in a task-specific order (so naive in-order locking would deadlock),
//! 10 times each. Every task finishes in bounded time, no part is ever held by two tasks at
//! once, every acquisition is counted, and nothing is left behind.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use relock::MultiLock;
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overlapping_multi_locks_in_any_order_never_deadlock_and_exclude_per_part() {
    let server = server();
    let clients = [client(&server).await, client(&server).await];
    let holders: Arc<Vec<AtomicU64>> = Arc::new((0..4).map(|_| AtomicU64::new(0)).collect());
    let overlaps = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for (ci, c) in clients.iter().enumerate() {
        for t in 0..8usize {
            // Three of the four locks, starting at a different one and going the other way
            // round for odd tasks.
            let picks: Vec<usize> = (0..3)
                .map(|k| {
                    let step = if t % 2 == 0 { k } else { 4 - k };
                    (t + ci + step) % 4
                })
                .collect();
            let mut multi = MultiLock::new();
            for p in &picks {
                multi = multi.with(c.lock(format!("m10:{p}")));
            }
            let (holders, overlaps, done) = (holders.clone(), overlaps.clone(), done.clone());
            tasks.push(tokio::spawn(async move {
                for _ in 0..10 {
                    let guard = multi.lock().await.unwrap();
                    assert_eq!(guard.fencing_tokens().len(), 3);
                    for p in &picks {
                        if holders[*p].fetch_add(1, Ordering::SeqCst) != 0 {
                            overlaps.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    for p in &picks {
                        holders[*p].fetch_sub(1, Ordering::SeqCst);
                    }
                    guard.unlock().await.unwrap();
                    done.fetch_add(1, Ordering::SeqCst);
                }
            }));
        }
    }
    bounded(Duration::from_secs(25), "160 multi-lock holds", async {
        for t in tasks {
            t.await.unwrap();
        }
    })
    .await;
    assert_eq!(done.load(Ordering::SeqCst), 2 * 8 * 10);
    assert_eq!(overlaps.load(Ordering::SeqCst), 0, "a part was held twice");
    for c in &clients {
        c.shutdown().await;
    }
    assert_nothing_left(&server).await;
}

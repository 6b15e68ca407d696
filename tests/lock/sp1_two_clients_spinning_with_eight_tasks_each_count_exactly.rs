//! Mutual exclusion of the spin lock: 2 clients × 8 tasks × 50 non-atomic GET/SET increments
//! give the exact total, the most holders ever seen at once is 1, and nothing subscribed.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fred::interfaces::{ClientLike, KeysInterface};
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clients_spinning_with_eight_tasks_each_count_exactly() {
    let server = server();
    let clients = [client(&server).await, client(&server).await];
    let counter = fred::clients::Client::new(
        fred::types::config::Config::from_url(&server.url()).unwrap(),
        None,
        None,
        None,
    );
    counter.init().await.unwrap();
    let inside = Arc::new(AtomicUsize::new(0));
    let max_inside = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for c in &clients {
        for _ in 0..8 {
            let (lock, counter) = (c.spin_lock("sp1"), counter.clone());
            let (inside, max_inside) = (inside.clone(), max_inside.clone());
            tasks.push(tokio::spawn(async move {
                for _ in 0..50 {
                    let guard = lock.lock().await.unwrap();
                    let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                    max_inside.fetch_max(now, Ordering::SeqCst);
                    let v: Option<u64> = counter.get("sp1:counter").await.unwrap();
                    let _: () = counter
                        .set("sp1:counter", v.unwrap_or(0) + 1, None, None, false)
                        .await
                        .unwrap();
                    inside.fetch_sub(1, Ordering::SeqCst);
                    guard.unlock().await.unwrap();
                }
            }));
        }
    }
    bounded(Duration::from_secs(90), "800 increments", async {
        for t in tasks {
            t.await.unwrap();
        }
    })
    .await;
    let total: u64 = counter.get("sp1:counter").await.unwrap();
    assert_eq!(total, 2 * 8 * 50);
    assert_eq!(max_inside.load(Ordering::SeqCst), 1);
    for c in &clients {
        assert_eq!(c.subscribed_channels(), 0);
    }
    let _: () = counter.del("sp1:counter").await.unwrap();
    assert_nothing_left(&server).await;
}

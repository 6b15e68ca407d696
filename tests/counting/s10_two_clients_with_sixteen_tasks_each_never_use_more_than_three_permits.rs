//! Conservation and exclusion: 2 clients × 16 tasks take 1 or 2 of 3 permits, 20 times each.
//! The permits in use never exceed 3 (and do exceed 1: it is a semaphore, not a lock), every
//! acquisition is counted, and at the end 3 are available, the key holds "3" and no
//! subscription is left.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clients_with_sixteen_tasks_each_never_use_more_than_three_permits() {
    let server = server();
    let clients = [client(&server).await, client(&server).await];
    let set = [
        clients[0]
            .semaphore("s10")
            .try_set_permits(3)
            .await
            .unwrap(),
        clients[1]
            .semaphore("s10")
            .try_set_permits(3)
            .await
            .unwrap(),
    ];
    assert_eq!(set, [true, false], "only the first try_set_permits sets");
    let in_use = Arc::new(AtomicU64::new(0));
    let max_in_use = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for c in &clients {
        for t in 0..16u64 {
            let sem = c.semaphore("s10");
            let (in_use, max_in_use, done) = (in_use.clone(), max_in_use.clone(), done.clone());
            let n = 1 + t % 2;
            tasks.push(tokio::spawn(async move {
                for _ in 0..20 {
                    sem.acquire(n).await.map(kept).unwrap();
                    let now = in_use.fetch_add(n, Ordering::SeqCst) + n;
                    max_in_use.fetch_max(now, Ordering::SeqCst);
                    // Hold the permits across a round trip, so that holders overlap.
                    let _ = sem.available().await.unwrap();
                    in_use.fetch_sub(n, Ordering::SeqCst);
                    done.fetch_add(1, Ordering::SeqCst);
                    sem.release(n).await.unwrap();
                }
            }));
        }
    }
    bounded(Duration::from_secs(25), "640 acquisitions", async {
        for t in tasks {
            t.await.unwrap();
        }
    })
    .await;
    assert_eq!(done.load(Ordering::SeqCst), 2 * 16 * 20);
    let max = max_in_use.load(Ordering::SeqCst);
    assert!(max <= 3, "{max} permits in use at once, of 3");
    assert!(
        max >= 2,
        "never more than {max} permit in use: nothing ran concurrently"
    );
    assert_eq!(clients[0].semaphore("s10").available().await.unwrap(), 3);
    assert_eq!(crate::get(&server, "s10").as_deref(), Some("3"));
    crate::no_subscriptions(&[&clients[0], &clients[1]]).await;
    crate::keys_become(&server, &["s10"]).await;
    let _ = server.cmd(&["DEL", "s10"]).unwrap();
    assert_nothing_left(&server).await;
}

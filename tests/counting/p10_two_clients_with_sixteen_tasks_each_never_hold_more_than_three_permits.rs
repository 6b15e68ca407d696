//! Exclusion and conservation for the permit-expirable semaphore: 2 clients × 16 tasks take one
//! of 3 permits 20 times each (half with the watchdog lease, half with a fixed lease), release
//! half and drop the other half. Never more than 3 guards are alive at once, every acquisition
//! is counted, and at the end 3 are available, none acquired, the timeouts set is gone, and no
//! subscription is left.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clients_with_sixteen_tasks_each_never_hold_more_than_three_permits() {
    let server = server();
    let clients = [client(&server).await, client(&server).await];
    let set = [
        clients[0]
            .permit_expirable_semaphore("p10")
            .try_set_permits(3)
            .await
            .unwrap(),
        clients[1]
            .permit_expirable_semaphore("p10")
            .try_set_permits(3)
            .await
            .unwrap(),
    ];
    assert_eq!(set, [true, false], "only the first try_set_permits sets");
    let live = Arc::new(AtomicU64::new(0));
    let max_live = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for c in &clients {
        for t in 0..16u64 {
            let sem = c.permit_expirable_semaphore("p10");
            let (live, max_live, done) = (live.clone(), max_live.clone(), done.clone());
            tasks.push(tokio::spawn(async move {
                for i in 0..20u64 {
                    let lease = (t % 2 == 0).then_some(Duration::from_secs(20));
                    let guard = sem.acquire(lease).await.unwrap();
                    assert_eq!(guard.id().len(), 32);
                    assert_eq!(guard.is_renewed(), lease.is_none());
                    let now = live.fetch_add(1, Ordering::SeqCst) + 1;
                    max_live.fetch_max(now, Ordering::SeqCst);
                    // Hold the permit across a round trip, so that holders overlap.
                    let _ = sem.available().await.unwrap();
                    live.fetch_sub(1, Ordering::SeqCst);
                    done.fetch_add(1, Ordering::SeqCst);
                    if i % 2 == 0 {
                        guard.release().await.unwrap();
                    } else {
                        drop(guard);
                    }
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
    let max = max_live.load(Ordering::SeqCst);
    assert!(max <= 3, "{max} permits held at once, of 3");
    assert!(
        max >= 2,
        "never more than {max} permit held: nothing ran concurrently"
    );
    let sem = clients[0].permit_expirable_semaphore("p10");
    // Dropped guards give their permits back in the background.
    wait_until(Duration::from_secs(3), "every permit back", || async {
        sem.available().await.unwrap() == 3
    })
    .await
    .unwrap();
    assert_eq!(sem.acquired().await.unwrap(), 0);
    assert_eq!(crate::get(&server, "p10").as_deref(), Some("3"));
    assert_eq!(
        server.cmd(&["ZCARD", "{p10}:timeout"]).unwrap().as_int(),
        Some(0)
    );
    assert_eq!(clients[0].held_permits() + clients[1].held_permits(), 0);
    crate::no_subscriptions(&[&clients[0], &clients[1]]).await;
    // A release's request key is deleted in the background once its reply came: it goes
    // within moments (a key kept for its time to live, after a reply that never came, fails).
    let only_the_count = wait_until(Duration::from_secs(3), "only the count left", || async {
        server.keys().unwrap() == ["p10"]
    })
    .await;
    assert!(
        only_the_count.is_ok(),
        "keys left: {:?}",
        server.keys().unwrap()
    );
    let _ = server.cmd(&["DEL", "p10"]).unwrap();
    assert_nothing_left(&server).await;
}

//! Implicit per-task re-entry (Redisson's thread model) is opt-in: with
//! `Reentrancy::PerTask` a task's second `lock()` re-enters its hold, and so (the documented
//! hazard) do `join!` branches of one task, which are then inside at the same time. A default
//! client's second `lock()` in the same task is a fresh acquisition that waits.

use std::cell::Cell;
use std::time::Duration;

use relock_tests::*;

use crate::support::hgetall;

#[tokio::test]
async fn per_task_reentry_is_opt_in() {
    let server = server();
    let per_task = relock::Client::builder()
        .url(server.url())
        .reentrancy(relock::Reentrancy::PerTask)
        .command_timeout(Duration::from_secs(1))
        .connect_timeout(Duration::from_secs(2))
        .build()
        .await
        .unwrap();
    let limit = Duration::from_secs(3);

    // Two lock() calls in one task: one hold, count 2.
    let lock = per_task.lock("o40:per-task");
    let g1 = lock.lock().await.unwrap();
    let g2 = bounded(limit, "per-task re-entry", lock.lock())
        .await
        .unwrap();
    assert_eq!(g2.fencing_token(), g1.fencing_token());
    assert_eq!(lock.hold_count().await.unwrap(), 2);
    let fields = hgetall(&server, "o40:per-task");
    assert_eq!(fields.len(), 1, "{fields:?}");
    assert_eq!(fields[0].1, "2");
    g2.unlock().await.unwrap();
    g1.unlock().await.unwrap();
    assert_eq!(per_task.held_locks(), 0);

    // The hazard: join! branches of one task re-enter each other's hold.
    let (inside, max) = (&Cell::new(0usize), &Cell::new(0usize));
    let lock = &lock;
    // The second branch calls lock() once the first holds (two fresh attempts sent at the
    // same moment are two acquisitions, and one waits).
    let branch = |second: bool| async move {
        while second && max.get() == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let g = lock.lock().await.unwrap();
        inside.set(inside.get() + 1);
        max.set(max.get().max(inside.get()));
        tokio::time::sleep(Duration::from_millis(200)).await;
        inside.set(inside.get() - 1);
        let t = g.fencing_token();
        g.unlock().await.unwrap();
        t
    };
    let (ta, tb) = bounded(limit, "join! under PerTask", async {
        tokio::join!(branch(false), branch(true))
    })
    .await;
    assert_eq!(max.get(), 2, "both branches inside at once under PerTask");
    assert_eq!(ta, tb, "one hold shared by both branches");
    per_task.shutdown().await;

    // The default client: the same task's second lock() waits.
    let scoped = client(&server).await;
    let lock = scoped.lock("o40:default");
    let g = lock.lock().await.unwrap();
    assert!(
        lock.try_lock().await.unwrap().is_none(),
        "try_lock re-entered"
    );
    let waited = tokio::time::timeout(Duration::from_millis(300), lock.lock()).await;
    assert!(
        waited.is_err(),
        "lock() did not wait: {:?}",
        waited.map(|r| r.map(|g| g.fencing_token()))
    );
    let fields = hgetall(&server, "o40:default");
    assert_eq!(fields.len(), 1, "{fields:?}");
    assert_eq!(fields[0].1, "1");
    // And join! branches exclude each other.
    max.set(0);
    let lock2 = &lock;
    let branch = |second: bool| async move {
        while second && max.get() == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let g = lock2.lock().await.unwrap();
        inside.set(inside.get() + 1);
        max.set(max.get().max(inside.get()));
        tokio::time::sleep(Duration::from_millis(200)).await;
        inside.set(inside.get() - 1);
        let t = g.fencing_token();
        g.unlock().await.unwrap();
        t
    };
    g.unlock().await.unwrap();
    let (ta, tb) = bounded(limit, "join! by default", async {
        tokio::join!(branch(false), branch(true))
    })
    .await;
    assert_eq!(max.get(), 1, "join! branches inside at once by default");
    assert_ne!(ta, tb);
    assert_eq!(scoped.held_locks(), 0);
    assert_nothing_left(&server).await;
}

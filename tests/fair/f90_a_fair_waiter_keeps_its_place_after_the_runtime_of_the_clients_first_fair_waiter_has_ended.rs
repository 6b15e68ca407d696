//! A client built on a long-lived runtime, whose first fair waiter ran on a short-lived runtime
//! (a `block_on` on a runtime of its own, then dropped): its later fair waiters must still be
//! kept alive by its heartbeat, so they keep their place in line.
//!
//! Before the restructure the heartbeat task was spawned when the client was built, on the
//! client's runtime. It is now spawned (once per client, `std::sync::Once`) by the first fair
//! waiter, on whatever runtime that waiter runs on: when that runtime ends, the task is gone,
//! and the `Once` never starts it again. Every later fair waiter of the client then lapses
//! after its heartbeat deadline; another client's heartbeat evicts it, and a waiter that came
//! after it gets the lock first.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fair_waiter_keeps_its_place_after_the_runtime_of_the_clients_first_fair_waiter_has_ended(
) {
    let server = server();
    let hb = Duration::from_millis(500);
    let holder_client = fair_client(&server, hb).await;
    let w_client = fair_client(&server, hb).await;
    let x_client = fair_client(&server, hb).await;

    // The first fair waiter of w_client, on a runtime of its own that then ends (another
    // lock name, so nothing it leaves behind touches "f90").
    let other = holder_client.fair_lock("f90-other").lock().await.unwrap();
    let lock = w_client.fair_lock("f90-other");
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let got = lock.try_lock_for(Duration::from_millis(200)).await.unwrap();
            assert!(got.is_none());
            // Let its leave of the line and unsubscribe run before the runtime goes.
            tokio::time::sleep(Duration::from_millis(300)).await;
        });
        drop(rt);
    })
    .join()
    .unwrap();
    other.unlock().await.unwrap();

    // Now, on the long-lived runtime: W (w_client) waits first, then X (x_client).
    let holder = holder_client.fair_lock("f90").lock().await.unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let w = {
        let (lock, order) = (w_client.fair_lock("f90"), order.clone());
        spawn_in_line(&server, "f90", 1, async move {
            let g = lock.lock().await.unwrap();
            order.lock().unwrap().push("W");
            g.unlock().await.unwrap();
        })
        .await
    };
    let x = {
        let (lock, order) = (x_client.fair_lock("f90"), order.clone());
        spawn_in_line(&server, "f90", 2, async move {
            let g = lock.lock().await.unwrap();
            order.lock().unwrap().push("X");
            g.unlock().await.unwrap();
        })
        .await
    };

    // Several heartbeat deadlines later both are still in line, W's deadline still ahead.
    tokio::time::sleep(hb * 5).await;
    let line = fair_line(&server, "f90");
    let beats = fair_heartbeats(&server, "f90");
    let now = server_ms(&server);
    let w_field = w_client.client_id().to_string();
    assert_eq!(
        line.len(),
        2,
        "a live waiter was evicted from the line: line {line:?}, heartbeats {beats:?} (now {now}), W's client id {w_field}"
    );
    for (field, deadline) in &beats {
        assert!(
            *deadline >= now,
            "the heartbeat deadline of live waiter {field} lapsed {} ms ago: heartbeats {beats:?}",
            now - deadline
        );
    }

    holder.unlock().await.unwrap();
    bounded(Duration::from_secs(5), "W served", w)
        .await
        .unwrap();
    bounded(Duration::from_secs(5), "X served", x)
        .await
        .unwrap();
    assert_eq!(*order.lock().unwrap(), ["W", "X"], "arrival order broken");
    for c in [&holder_client, &w_client, &x_client] {
        c.shutdown().await;
    }
}

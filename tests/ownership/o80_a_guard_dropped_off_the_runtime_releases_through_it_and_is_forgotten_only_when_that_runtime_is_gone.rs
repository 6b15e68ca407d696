//! A guard dropped on a thread with no tokio runtime (a `Drop` of a struct moved to
//! `std::thread`) releases through the runtime it was made on, as promptly as a drop inside it
//! (issue 22: it was forgotten and its lock waited out the whole lease). Only when that
//! runtime is gone is the hold forgotten locally (no zombie that the client's later calls trip
//! over) and the lock left to expire with its lease, after which it is acquired normally.

use std::time::{Duration, Instant};

use relock_tests::*;

use crate::support::hgetall;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guard_dropped_off_the_runtime_releases_through_it_and_is_forgotten_only_when_that_runtime_is_gone(
) {
    let server = server();
    let c = client(&server).await;
    for name in ["o80", "o80:fixed"] {
        let lock = if name == "o80" {
            c.lock(name)
        } else {
            c.lock(name).with_lease(Duration::from_secs(30))
        };
        let g = lock.lock().await.unwrap();
        assert_eq!(c.held_locks(), 1);
        let t0 = Instant::now();
        std::thread::spawn(move || drop(g)).join().unwrap();
        wait_until(
            Duration::from_secs(2),
            "the lock to be released",
            || async { server.cmd(&["EXISTS", name]).unwrap().as_int() == Some(0) },
        )
        .await
        .unwrap();
        assert!(
            t0.elapsed() < Duration::from_secs(1),
            "{name}: {:?}",
            t0.elapsed()
        );
        assert_eq!(c.held_locks(), 0, "{name}");
        let g = bounded(Duration::from_secs(2), "lock again", lock.lock())
            .await
            .unwrap();
        g.unlock().await.unwrap();
    }

    // The runtime the guard was made on has ended: forgotten, and expires with its lease.
    let per_task = relock::Client::builder()
        .url(server.url())
        .reentrancy(relock::Reentrancy::PerTask)
        .command_timeout(Duration::from_secs(1))
        .connect_timeout(Duration::from_secs(2))
        .build()
        .await
        .unwrap();
    for client in [&c, &per_task] {
        runtime_gone(&server, client, "o80:gone").await;
    }
    per_task.shutdown().await;
    c.shutdown().await;
    assert_nothing_left(&server).await;
}

async fn runtime_gone(server: &RedisServer, c: &relock::Client, name: &str) {
    let lease = Duration::from_millis(1000);
    let lock = c.lock(name).with_lease(lease);
    let acquired = Instant::now();
    let (g, first) = {
        let lock = lock.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let g = rt.block_on(lock.lock()).unwrap();
            let token = g.fencing_token();
            drop(rt);
            (g, token)
        })
        .join()
        .unwrap()
    };
    assert_eq!(c.held_locks(), 1);
    std::thread::spawn(move || drop(g)).join().unwrap();
    assert_eq!(
        c.held_locks(),
        0,
        "the dropped guard's hold is still counted"
    );

    // Still held on the server until the lease ends.
    let r = bounded(
        Duration::from_secs(3),
        "try_lock after the drop",
        lock.try_lock(),
    )
    .await;
    assert!(matches!(r, Ok(None)), "{name}: try_lock after the drop");
    let g = bounded(Duration::from_secs(3), "lock after the lease", lock.lock())
        .await
        .unwrap();
    let after = acquired.elapsed();
    assert!(
        after + Duration::from_millis(50) >= lease,
        "acquired after {after:?}, before the lease ran out"
    );
    assert!(g.fencing_token() > first);
    let fields = hgetall(server, name);
    assert_eq!(fields.len(), 1, "{fields:?}");
    g.unlock().await.unwrap();
    assert_eq!(c.held_locks(), 0);
}

//! A guard dropped on a thread with no tokio runtime cannot release on the server: the client
//! forgets the hold at once (no zombie that its own later calls trip over), and the lock
//! expires with its lease, after which it is acquired normally.

use std::time::{Duration, Instant};

use relock_tests::*;

use crate::support::hgetall;

#[tokio::test]
async fn a_guard_dropped_outside_a_runtime_is_forgotten_and_expires_with_its_lease() {
    let server = server();
    let c = client(&server).await;
    dropped_outside_a_runtime(&server, &c, "o80").await;
    // Also where the same task would re-enter its own live hold: the forgotten one is not.
    let per_task = relock::Client::builder()
        .url(server.url())
        .reentrancy(relock::Reentrancy::PerTask)
        .command_timeout(Duration::from_secs(1))
        .connect_timeout(Duration::from_secs(2))
        .build()
        .await
        .unwrap();
    dropped_outside_a_runtime(&server, &per_task, "o80:per-task").await;
}

async fn dropped_outside_a_runtime(server: &RedisServer, c: &relock::Client, name: &str) {
    let lease = Duration::from_millis(1000);
    let lock = c.lock(name).with_lease(lease);
    let g = lock.lock().await.unwrap();
    let acquired = Instant::now();
    let first = g.fencing_token();
    assert_eq!(c.held_locks(), 1);

    std::thread::spawn(move || drop(g)).join().unwrap();
    assert_eq!(
        c.held_locks(),
        0,
        "the dropped guard's hold is still counted"
    );

    // Still held on the server until the lease ends; the same task is refused at once.
    let t0 = Instant::now();
    let r = bounded(
        Duration::from_secs(3),
        "try_lock after the drop",
        lock.try_lock(),
    )
    .await;
    let took = t0.elapsed();
    assert!(
        matches!(r, Ok(None)),
        "{name}: try_lock after the drop: {:?}",
        r.map(|g| g.map(|g| g.fencing_token()))
    );
    assert!(
        took < Duration::from_millis(200),
        "{name}: try_lock took {took:?}"
    );

    // lock() gets it once the lease has run out.
    let g = bounded(Duration::from_secs(3), "lock after the lease", lock.lock())
        .await
        .unwrap();
    let after = acquired.elapsed();
    assert!(
        after < lease + Duration::from_millis(500),
        "acquired {after:?} after the first acquisition (lease {lease:?})"
    );
    assert!(
        after + Duration::from_millis(50) >= lease,
        "acquired after {after:?}, before the lease ran out"
    );
    assert!(g.fencing_token() > first);
    let fields = hgetall(server, name);
    assert_eq!(fields.len(), 1, "{fields:?}");
    assert_eq!(fields[0].1, "1", "{fields:?}");
    assert_eq!(c.held_locks(), 1);
    g.unlock().await.unwrap();
    assert_eq!(c.held_locks(), 0);
    assert_nothing_left(server).await;
}

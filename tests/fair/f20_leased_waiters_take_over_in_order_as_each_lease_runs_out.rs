//! 8 waiters with 1 s fixed leases that never unlock: each gets the lock, in arrival order,
//! when the lease before it runs out (not earlier, and without waiting much longer).

use std::time::{Duration, Instant};

use relock_tests::*;

#[tokio::test]
async fn leased_waiters_take_over_in_order_as_each_lease_runs_out() {
    let server = server();
    let (a, b) = (client(&server).await, client(&server).await);
    let lease = Duration::from_secs(1);
    let first = a.fair_lock("f20").with_lease(lease).lock().await.unwrap();
    let started = Instant::now();

    let mut waiters = Vec::new();
    for i in 0..8 {
        let lock = [&a, &b][i % 2].fair_lock("f20").with_lease(lease);
        waiters.push(
            spawn_in_line(&server, "f20", i + 1, async move {
                let g = lock.lock().await.unwrap();
                // Never unlocked: the guard lives until the test ends, long after its lease.
                (i, Instant::now(), g)
            })
            .await,
        );
    }
    let mut got = Vec::new();
    for w in waiters {
        got.push(
            bounded(Duration::from_secs(15), "leased waiter", w)
                .await
                .unwrap(),
        );
    }
    got.sort_by_key(|(_, at, _)| *at);
    let order: Vec<usize> = got.iter().map(|(i, _, _)| *i).collect();
    assert_eq!(order, (0..8).collect::<Vec<_>>());
    let mut prev = started;
    for (i, at, g) in &got {
        let gap = *at - prev;
        assert!(
            gap >= Duration::from_millis(900) && gap <= Duration::from_millis(1600),
            "waiter {i} got the lock {gap:?} after the previous lease began"
        );
        assert!(!g.is_renewed());
        prev = *at;
    }
    let tokens: Vec<u64> = got.iter().map(|(_, _, g)| g.fencing_token()).collect();
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "{tokens:?}");
    assert!(tokens[0] > first.fencing_token());
    drop(first);
    drop(got);
    assert_nothing_left(&server).await;
}

//! The client's own cost of the commonest call: an uncontended plain lock taken and released
//! (`lock().await` then `unlock().await`) makes at most a stated number of allocations in the
//! whole process (relock, fred and tokio together), averaged over many pairs after a warm-up.
//! A change that adds work per operation (a record, a string, a tracing field built when
//! nobody listens) shows here before it shows as CPU time in a benchmark.

use relock_tests::*;

/// Pairs measured, after as many to warm up.
const PAIRS: i64 = 2000;

/// Allocations per pair that the calls may make: 82 measured on Redis 7.0, fred 10.
const MOST: f64 = 90.0;

async fn per_pair(c: &relock::Client, try_lock: bool) -> f64 {
    let lock = c.lock("h20");
    let pair = || async {
        let guard = if try_lock {
            lock.try_lock().await.unwrap().expect("uncontended")
        } else {
            lock.lock().await.unwrap()
        };
        guard.unlock().await.unwrap();
    };
    for _ in 0..PAIRS {
        pair().await;
    }
    let before = crate::allocations_made();
    for _ in 0..PAIRS {
        pair().await;
    }
    (crate::allocations_made() - before) as f64 / PAIRS as f64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_uncontended_lock_and_unlock_allocate_a_bounded_number_of_times() {
    let _one = crate::ONE_AT_A_TIME.lock().await;
    let server = server();
    let c = client(&server).await;
    let lock = per_pair(&c, false).await;
    let try_lock = per_pair(&c, true).await;
    eprintln!("allocations per pair: lock {lock:.1}, try_lock {try_lock:.1}");
    assert!(
        lock <= MOST && try_lock <= MOST,
        "allocations per uncontended pair: lock {lock:.1}, try_lock {try_lock:.1}; at most {MOST}"
    );
    c.shutdown().await;
}

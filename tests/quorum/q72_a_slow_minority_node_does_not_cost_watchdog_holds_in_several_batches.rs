//! Watchdog holds of a quorum client, on locks pinned to both of its connections per node (so
//! every renewal round has two batches). One node of three turns slow: every reply of it
//! comes DELAY late, well within the node timeout (it still renews and passes its uptime
//! checks). A renewal round waits for every node's answer, so each batch takes DELAY. With
//! the rounds' batches sent at once, a round takes DELAY and each hold is renewed in time
//! (2 × DELAY + lease/3 < lease − drift). No hold may be lost while a majority answers.

use std::future::Future;
use std::time::{Duration, Instant};

use relock_testkit::{Direction, Mode};
use relock_tests::*;

const LEASE: Duration = Duration::from_millis(1500);
const DELAY: Duration = Duration::from_millis(430);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_minority_node_does_not_cost_watchdog_holds_in_several_batches() {
    let m = masters(3);
    let (proxy, urls) = urls_with_proxy(&m, 2);
    let c = quorum_builder(urls, Duration::from_millis(500))
        .watchdog_lease(LEASE)
        .build()
        .await
        .unwrap();
    warm_up(&c, "q72:warm").await;
    let mut guards = Vec::new();
    for i in 0..8 {
        guards.push(c.lock(format!("q72:{i}")).lock().await.unwrap());
    }
    proxy.set(Direction::Down, Mode::Delay(DELAY));
    let t = Instant::now();
    let lost = tokio::time::timeout(Duration::from_secs(8), futures_lost(&guards)).await;
    let after = t.elapsed();
    let lost_now: Vec<bool> = guards.iter().map(|g| g.is_lost()).collect();
    proxy.set(Direction::Down, Mode::Pass);
    assert!(
        lost.is_err(),
        "a watchdog hold was lost {after:?} after one node of three turned {DELAY:?} slow \
         (node timeout 500 ms, lease {LEASE:?}); lost: {lost_now:?}"
    );
    for g in guards {
        g.unlock().await.unwrap();
    }
    bounded(Duration::from_secs(10), "shutdown", c.shutdown()).await;
    assert_nothing_left_on(&[&m[0], &m[1], &m[2]]).await;
}

/// Resolves when any guard's hold is lost.
async fn futures_lost(guards: &[relock::LockGuard]) {
    let mut set = Vec::new();
    for g in guards {
        set.push(Box::pin(g.lost()));
    }
    std::future::poll_fn(|cx| {
        for f in &mut set {
            if f.as_mut().poll(cx).is_ready() {
                return std::task::Poll::Ready(());
            }
        }
        std::task::Poll::Pending
    })
    .await
}

//! Waiters A, B (client X) and C (client Y) in line; the holder releases (handing the
//! lock to A) while X shuts down. Shutdown is bounded, C gets the lock within 2 s of it
//! (the line's heartbeat is 30 s), and nothing is left.

use std::time::{Duration, Instant};

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_shut_down_as_a_release_hands_its_waiter_the_lock_passes_it_on_and_leaves_nothing()
{
    let server = server();
    let hb = Duration::from_secs(30);
    let h = fair_client(&server, hb).await;
    let y = fair_client(&server, hb).await;
    for round in 0..20u32 {
        let x = fair_client(&server, hb).await;
        let holder = h.fair_lock("h2").lock().await.unwrap();
        let la = x.fair_lock("h2");
        let a = spawn_in_line(&server, "h2", 1, async move {
            la.lock().await.map(|g| (Instant::now(), g))
        })
        .await;
        let lb = x.fair_lock("h2");
        let b = spawn_in_line(&server, "h2", 2, async move {
            lb.try_lock_for(Duration::from_secs(20))
                .await
                .map(|g| g.map(|g| (Instant::now(), g)))
        })
        .await;
        let lc = y.fair_lock("h2");
        let c = spawn_in_line(&server, "h2", 3, async move {
            lc.lock().await.map(|g| (Instant::now(), g))
        })
        .await;
        let rel = tokio::spawn(async move {
            holder.unlock().await.unwrap();
        });
        for _ in 0..(round % 8) {
            tokio::task::yield_now().await;
        }
        bounded(Duration::from_secs(5), "shutdown", x.shutdown()).await;
        let gone = Instant::now();
        rel.await.unwrap();
        let ra = bounded(Duration::from_secs(5), "A", a).await.unwrap();
        let rb = bounded(Duration::from_secs(5), "B", b).await.unwrap();
        drop((ra, rb));
        let (ct, cg) = bounded(Duration::from_secs(5), "C", c)
            .await
            .unwrap()
            .unwrap();
        let waited = ct.saturating_duration_since(gone);
        assert!(
            waited < Duration::from_secs(2),
            "round {round}: C waited {waited:?} after shutdown"
        );
        cg.unlock().await.unwrap();
        wait_until(Duration::from_secs(2), "line empty", || async {
            fair_line(&server, "h2").is_empty()
        })
        .await
        .unwrap_or_else(|e| panic!("round {round}: {e}: {:?}", fair_line(&server, "h2")));
    }
    for c in [&h, &y] {
        bounded(Duration::from_secs(5), "shutdown", c.shutdown()).await;
    }
    assert_nothing_left(&server).await;
}

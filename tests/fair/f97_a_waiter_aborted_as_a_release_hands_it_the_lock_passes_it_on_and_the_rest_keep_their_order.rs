//! Waiters A, B (one client) and C (another) in line; the holder releases (handing the
//! lock to A) and A's task is aborted at once, at varying points. B must get the lock within 2 s
//! (the line's heartbeat is 30 s: a lost wake-up would wait far longer), then C after B;
//! nothing is left afterwards.

use std::time::{Duration, Instant};

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_aborted_as_a_release_hands_it_the_lock_passes_it_on_and_the_rest_keep_their_order(
) {
    let server = server();
    let hb = Duration::from_secs(30);
    let h = fair_client(&server, hb).await;
    let x = fair_client(&server, hb).await;
    let y = fair_client(&server, hb).await;
    for round in 0..30u32 {
        let holder = h.fair_lock("h1").lock().await.unwrap();
        let la = x.fair_lock("h1");
        let a = spawn_in_line(&server, "h1", 1, async move {
            la.lock().await.map(|g| (Instant::now(), g))
        })
        .await;
        let lb = x.fair_lock("h1");
        let b = spawn_in_line(&server, "h1", 2, async move {
            lb.lock().await.map(|g| (Instant::now(), g))
        })
        .await;
        let lc = y.fair_lock("h1");
        let c = spawn_in_line(&server, "h1", 3, async move {
            let g = lc.lock().await.map(|g| (Instant::now(), g));
            g
        })
        .await;
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let rel = tokio::spawn(async move {
            holder.unlock().await.unwrap();
            let _ = tx.send(());
        });
        // Abort A at a varying point around the release.
        let spins = round % 10;
        if round % 3 == 0 {
            let _ = rx.await;
        }
        for _ in 0..spins {
            tokio::task::yield_now().await;
        }
        a.abort();
        let gone = Instant::now();
        rel.await.unwrap();
        let ra = a.await;
        if let Ok(Ok((_, g))) = ra {
            drop(g);
        }
        let (bt, bg) = bounded(Duration::from_secs(5), "B", b)
            .await
            .unwrap()
            .unwrap();
        let waited = bt.saturating_duration_since(gone);
        assert!(
            waited < Duration::from_secs(2),
            "round {round}: B waited {waited:?}"
        );
        assert!(!c.is_finished(), "round {round}: C got it while B holds it");
        let released = Instant::now();
        bg.unlock().await.unwrap();
        let (ct, cg) = bounded(Duration::from_secs(5), "C", c)
            .await
            .unwrap()
            .unwrap();
        let waited = ct.saturating_duration_since(released);
        assert!(
            waited < Duration::from_secs(2),
            "round {round}: C waited {waited:?}"
        );
        cg.unlock().await.unwrap();
        assert!(
            fair_line(&server, "h1").is_empty(),
            "round {round}: line {:?}",
            fair_line(&server, "h1")
        );
    }
    for c in [&h, &x, &y] {
        bounded(Duration::from_secs(5), "shutdown", c.shutdown()).await;
    }
    assert_nothing_left(&server).await;
}

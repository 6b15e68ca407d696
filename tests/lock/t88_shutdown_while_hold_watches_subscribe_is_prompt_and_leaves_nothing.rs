//! Shutdown while hold watches are settling, subscribing or listening (holds taken 0 to 200 ms
//! before it) is prompt and leaves no key, subscription or task behind.

use std::time::{Duration, Instant};

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_while_watches_subscribe_is_prompt_and_leaves_nothing() {
    let server = server();
    for settle in [0u64, 25, 30, 35, 200] {
        let a = client(&server).await;
        let mut guards = Vec::new();
        for i in 0..300 {
            guards.push(a.lock(format!("t8x:sd:{i}")).lock().await.unwrap());
        }
        tokio::time::sleep(Duration::from_millis(settle)).await;
        let t0 = Instant::now();
        bounded(Duration::from_secs(3), "shutdown", a.shutdown()).await;
        let took = t0.elapsed();
        assert!(guards.iter().all(|g| g.is_lost()));
        drop(guards);
        println!("settle {settle} ms: shutdown took {took:?}");
        assert_nothing_left(&server).await;
    }
}

//! `set_rate` without a keep-alive, on a limiter that had one, removes the keep-alive's time
//! to live: the limiter lives until deleted, and outlives the old keep-alive.

use std::time::Duration;

use relock::{RateConfig, RateType};
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_rate_without_a_keep_alive_after_one_with_a_keep_alive_keeps_the_limiter() {
    let server = server();
    let c = client(&server).await;
    let l = c.rate_limiter("rl91");
    let second = Duration::from_secs(1);
    l.set(RateConfig::new(RateType::Overall, 5, second).with_keep_alive(second))
        .await
        .unwrap();
    // The keep-alive is removed: the limiter should now live until deleted.
    l.set_rate(RateType::Overall, 5, second).await.unwrap();
    assert_eq!(l.config().await.unwrap().unwrap().keep_alive(), None);
    assert!(l.try_acquire(1).await.unwrap());
    let granted = server_ms(&server);
    let pttl = server.cmd(&["PTTL", "rl91"]).unwrap().as_int().unwrap();
    // Past the old keep-alive's second, on the server's clock.
    eventually(Duration::from_secs(3), "1.3 s after the grant", || async {
        (server_ms(&server) >= granted + 1300).then_some(())
    })
    .await;
    let r = l.try_acquire(1).await;
    c.shutdown().await;
    assert_eq!(
        pttl, -1,
        "the config keeps a TTL after set_rate without a keep-alive"
    );
    assert!(
        matches!(r, Ok(true)),
        "config PTTL after set_rate without a keep-alive: {pttl} ms; 1.3 s later try_acquire \
         returned {r:?}"
    );
}

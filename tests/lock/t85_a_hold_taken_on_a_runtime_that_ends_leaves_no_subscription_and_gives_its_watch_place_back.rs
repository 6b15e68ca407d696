//! The hold watch runs on the client's runtime, not the caller's: a hold taken inside a
//! short-lived runtime (a `block_on` on another thread) and released later leaves no channel
//! subscribed, and every watch gives its place back when its hold ends, so that no number of
//! such holds uses up the client's 10,000 watched places. (Found by review: the watch ran on
//! the caller's runtime, whose end left the subscription behind and the place taken.)

use std::time::Duration;

use relock_tests::*;

fn channel(name: &str) -> String {
    format!("redisson_lock__channel:{{{name}}}")
}

/// A hold taken inside a short-lived runtime, whose watch has subscribed, then released on
/// the client's runtime: once everything is released no channel may stay subscribed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hold_taken_on_a_runtime_that_ends_leaves_no_subscription_behind() {
    let server = server();
    let c = client(&server).await;
    let name = "t8x:rt";
    let lock = c.lock(name);
    let g = tokio::task::spawn_blocking(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let g = rt.block_on(async {
            let g = lock.lock().await.unwrap();
            // Long enough for its watch to subscribe (SETTLE is 30 ms).
            tokio::time::sleep(Duration::from_millis(300)).await;
            g
        });
        drop(rt);
        g
    })
    .await
    .unwrap();
    assert_eq!(
        server.pubsub_numsub(&channel(name)).unwrap(),
        1,
        "the watch subscribed"
    );
    g.unlock().await.unwrap();
    let left = wait_until(
        Duration::from_secs(3),
        "no channel left after the release",
        || async { server.pubsub_channels().unwrap().is_empty() },
    )
    .await;
    let channels = server.pubsub_channels().unwrap();
    c.shutdown().await;
    assert!(
        left.is_ok(),
        "every hold released, yet still subscribed on the server: {channels:?}"
    );
    assert_nothing_left(&server).await;
}

/// Holds taken inside short-lived runtimes and kept past the watch's settle time are watched
/// on the client's runtime, and once released every watch gives its place back
/// (`Client::watched_holds()` returns to 0), so no number of them uses up the client's 10,000
/// places.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_places_are_given_back_when_the_holds_end() {
    let server = server();
    let c = client(&server).await;
    let taker = c.clone();
    let guards = tokio::task::spawn_blocking(move || {
        (0..50)
            .map(|i| {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                let g = rt
                    .block_on(taker.lock(format!("t8x:leak:{i}")).lock())
                    .unwrap();
                drop(rt);
                g
            })
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    wait_until(Duration::from_secs(3), "every hold watched", || async {
        c.watched_holds() == 50 && server.pubsub_channels().unwrap().len() == 50
    })
    .await
    .unwrap();
    drop(guards);
    wait_until(
        Duration::from_secs(3),
        "every watch's place given back",
        || async { c.watched_holds() == 0 && server.pubsub_channels().unwrap().is_empty() },
    )
    .await
    .unwrap_or_else(|e| panic!("{e}: {} places still taken", c.watched_holds()));
    c.shutdown().await;
    assert_nothing_left(&server).await;
}

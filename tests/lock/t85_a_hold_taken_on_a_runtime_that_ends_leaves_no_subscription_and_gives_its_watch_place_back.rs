//! The hold watch runs on the client's runtime, not the caller's: a hold taken inside a
//! short-lived runtime (a `block_on` on another thread) and released later leaves no channel
//! subscribed, and a watch task dropped before it ran gives its place back, so that 10,000 such
//! holds do not use up the client's 10,000 watched places. (Found by review: the watch ran on
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

/// 10,000 holds taken by `block_on`s that return with the hold (their runtime then dropped,
/// its watch task never polled): the watch's place (`PubSub::watched`) is taken before the
/// spawn but given back by a `Slot` made inside the task, so it is never given back. After
/// 10,000 of them no hold of this client is watched any more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_places_are_given_back_when_the_watch_task_never_ran() {
    let server = server();
    let c = client(&server).await;
    let other = client(&server).await;
    let h = tokio::runtime::Handle::current();
    let lock = c.lock("t8x:leak");
    let t0 = std::time::Instant::now();
    tokio::task::spawn_blocking(move || {
        for _ in 0..10_000 {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let g = rt.block_on(lock.lock()).unwrap();
            drop(rt);
            // Released on the client's runtime.
            h.block_on(g.unlock()).unwrap();
        }
    })
    .await
    .unwrap();
    println!("10,000 block_on holds in {:?}", t0.elapsed());

    // A hold on the client's own runtime, held long enough to be watched.
    let name = "t8x:probe";
    let g = c.lock(name).lock().await.unwrap();
    let listening = wait_until(
        Duration::from_secs(2),
        "the probe hold to listen",
        || async { server.pubsub_numsub(&channel(name)).unwrap() == 1 },
    )
    .await;
    let t = std::time::Instant::now();
    assert!(other.lock(name).force_unlock().await.unwrap());
    let heard = tokio::time::timeout(Duration::from_secs(2), g.lost()).await;
    println!(
        "probe: listening {listening:?}, lost() after force_unlock: {:?}",
        heard.as_ref().map(|_| t.elapsed())
    );
    drop(g);
    c.shutdown().await;
    other.shutdown().await;
    assert!(
        listening.is_ok() && heard.is_ok(),
        "no hold of this client is watched any more (watched places leaked)"
    );
}

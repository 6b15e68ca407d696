//! Review of the hold watch: waiters on the holder's own client and on another one, with
//! holds that end just before, around and after the watch subscribes (30 ms), never miss a
//! release (a miss would show as a wait of the holder's whole lease, 30 s); and what a
//! subscriber reconnect costs once many holds are watched.

use std::time::{Duration, Instant};

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zz_review_waiters_beside_watched_holds_never_miss_a_release() {
    let server = server();
    let a = client(&server).await;
    let b = client(&server).await;
    let name = "zz:review:pingpong";
    let mut tasks = Vec::new();
    for t in 0..6u64 {
        let c = if t % 2 == 0 { a.clone() } else { b.clone() };
        tasks.push(tokio::spawn(async move {
            let mut worst = Duration::ZERO;
            let mut misses = 0;
            for i in 0..25u64 {
                let t0 = Instant::now();
                match c.lock(name).try_lock_for(Duration::from_secs(5)).await.unwrap() {
                    Some(g) => {
                        worst = worst.max(t0.elapsed());
                        // Around the watch's SETTLE (30 ms): 0..60 ms.
                        tokio::time::sleep(Duration::from_millis((t * 7 + i * 13) % 61)).await;
                        if i % 3 == 0 {
                            drop(g);
                        } else {
                            g.unlock().await.unwrap();
                        }
                    }
                    None => misses += 1,
                }
            }
            (worst, misses)
        }));
    }
    let mut worst = Duration::ZERO;
    let mut misses = 0;
    for t in tasks {
        let (w, m) = t.await.unwrap();
        worst = worst.max(w);
        misses += m;
    }
    println!("worst wait {worst:?}, timed out {misses}");
    a.shutdown().await;
    b.shutdown().await;
    assert_eq!(misses, 0, "a waiter missed a release (worst wait {worst:?})");
    assert_nothing_left(&server).await;
}

/// Every subscriber error and reconnect wakes every watch (`wake_all`), each of which sends
/// an HEXISTS: how many does one `CLIENT KILL TYPE pubsub` cost with 500 watched holds?
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zz_review_a_subscriber_reconnect_with_many_watched_holds() {
    let server = server();
    let a = client(&server).await;
    let mut guards = Vec::new();
    for i in 0..500 {
        guards.push(a.lock(format!("zz:review:many:{i}")).lock().await.unwrap());
    }
    wait_until(Duration::from_secs(10), "every hold to listen", || async {
        server.pubsub_channels().unwrap().len() == 500
    })
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    server.reset_stats().unwrap();
    let t0 = Instant::now();
    assert_eq!(server.client_kill_type("pubsub").unwrap(), 1);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let hexists = server.command_calls("hexists").unwrap();
    let subscribes = server.command_calls("subscribe").unwrap();
    println!(
        "after one subscriber kill ({:?}): {hexists} HEXISTS, {subscribes} SUBSCRIBE, channels {}",
        t0.elapsed(),
        server.pubsub_channels().unwrap().len()
    );
    assert!(guards.iter().all(|g| !g.is_lost()));
    drop(guards);
    a.shutdown().await;
    assert_nothing_left(&server).await;
}

//! Waiters on the holder's own client and on another one, with holds that end just before,
//! around and after their watch subscribes (30 ms), never miss a release; and one subscriber
//! reconnect costs each watched hold one check, once its channels are confirmed again (found by
//! review: three wake-ups per reconnect, three HEXISTS per hold).

use std::time::{Duration, Instant};

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_beside_watched_holds_never_miss_a_release() {
    let server = server();
    let a = client(&server).await;
    let b = client(&server).await;
    let name = "t8x:pingpong";
    let mut tasks = Vec::new();
    for t in 0..6u64 {
        let c = if t % 2 == 0 { a.clone() } else { b.clone() };
        tasks.push(tokio::spawn(async move {
            let mut worst = Duration::ZERO;
            let mut misses = 0;
            for i in 0..25u64 {
                let t0 = Instant::now();
                match c
                    .lock(name)
                    .try_lock_for(Duration::from_secs(5))
                    .await
                    .unwrap()
                {
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
    assert_eq!(
        misses, 0,
        "a waiter missed a release (worst wait {worst:?})"
    );
    assert_nothing_left(&server).await;
}

/// One `CLIENT KILL TYPE pubsub` with 500 watched holds: every channel is subscribed again,
/// and each hold is checked once (500 HEXISTS), not once per event of the reconnect.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_reconnect_with_many_watched_holds_costs_each_one_check() {
    let server = server();
    let a = client(&server).await;
    let mut guards = Vec::new();
    for i in 0..500 {
        guards.push(a.lock(format!("t8x:many:{i}")).lock().await.unwrap());
    }
    // Every hold listens, and has made its first check.
    wait_until(Duration::from_secs(10), "every hold to listen", || async {
        server.pubsub_channels().unwrap().len() == 500
            && server.command_calls("hexists").unwrap() >= 500
    })
    .await
    .unwrap();
    server.reset_stats().unwrap();
    let t0 = Instant::now();
    assert_eq!(server.client_kill_type("pubsub").unwrap(), 1);
    wait_until(
        Duration::from_secs(10),
        "every hold checked again",
        || async {
            server.pubsub_channels().unwrap().len() == 500
                && server.command_calls("hexists").unwrap() >= 500
        },
    )
    .await
    .unwrap();
    let hexists = server.command_calls("hexists").unwrap();
    println!(
        "after one subscriber kill ({:?}): {hexists} HEXISTS, {} SUBSCRIBE",
        t0.elapsed(),
        server.command_calls("subscribe").unwrap()
    );
    // One check per hold (a few more if a reconnect event came twice), never three.
    assert!(
        hexists <= 600,
        "{hexists} checks for 500 holds after one reconnect"
    );
    assert!(guards.iter().all(|g| !g.is_lost()));
    drop(guards);
    a.shutdown().await;
    assert_nothing_left(&server).await;
}

//! Many tasks of one client contend for one quorum lock while one node is slow
//! and script caches are flushed now and then (releases and votes meet NOSCRIPT, the second
//! vote path runs). No two holders at once, tokens rise, and nothing is left after shutdown.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use relock_testkit::Mode;
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_tasks_of_one_client_contending_with_noscript_and_a_slow_node_never_overlap_nor_leave_a_hold(
) {
    let m = Arc::new(masters(5));
    let (p4, urls) = urls_with_proxy(&m, 3);
    let client = warm_quorum_client(urls, Duration::from_millis(400), "q101:warm").await;
    p4.set_both(Mode::Delay(Duration::from_millis(3)));
    let inside = Arc::new(AtomicUsize::new(0));
    let last_token = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (client, inside, last_token, done) = (
            client.clone(),
            inside.clone(),
            last_token.clone(),
            done.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let lock = client.lock("q101").with_lease(Duration::from_secs(5));
            for _ in 0..25 {
                let g = tokio::time::timeout(Duration::from_secs(30), lock.lock())
                    .await
                    .expect("lock() within 30 s")
                    .expect("lock()");
                assert_eq!(inside.fetch_add(1, SeqCst), 0, "two holders at once");
                let t = g.fencing_token();
                let prev = last_token.swap(t, SeqCst);
                assert!(t > prev, "token went down: {prev} then {t}");
                tokio::task::yield_now().await;
                inside.fetch_sub(1, SeqCst);
                g.unlock().await.expect("unlock");
                done.fetch_add(1, SeqCst);
            }
        }));
    }
    let flusher = {
        let (done, m) = (done.clone(), m.clone());
        tokio::spawn(async move {
            let mut k = 0usize;
            while done.load(SeqCst) < 200 {
                tokio::time::sleep(Duration::from_millis(37)).await;
                let _ = m[k % 5].script_flush();
                k += 1;
            }
        })
    };
    for t in tasks {
        t.await.unwrap();
    }
    flusher.await.unwrap();
    p4.heal();
    client.shutdown().await;
    let all: Vec<&RedisServer> = m.servers().iter().collect();
    assert_nothing_left_on(&all).await;
}

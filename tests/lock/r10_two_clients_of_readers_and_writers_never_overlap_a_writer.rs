//! Exclusion and sharing: 2 clients × 8 tasks, half readers and half writers, 15 holds each.
//! A writer never overlaps anyone (reader or writer), readers do overlap each other, every
//! hold is counted, every write token is above every token handed out before it, and nothing
//! is left behind (hash, readers' timeout keys, channel).

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clients_of_readers_and_writers_never_overlap_a_writer() {
    let server = server();
    let clients = [client(&server).await, client(&server).await];
    // > 0: readers inside; -1: a writer inside.
    let inside = Arc::new(AtomicI64::new(0));
    let most_readers = Arc::new(AtomicI64::new(0));
    let overlaps = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicU64::new(0));
    let tokens = Arc::new(Mutex::new(Vec::<(u64, bool)>::new()));
    let mut tasks = Vec::new();
    for c in &clients {
        for t in 0..8u64 {
            let rw = c.read_write_lock("r10");
            let (inside, most, overlaps, done, tokens) = (
                inside.clone(),
                most_readers.clone(),
                overlaps.clone(),
                done.clone(),
                tokens.clone(),
            );
            let writer = t % 2 == 0;
            tasks.push(tokio::spawn(async move {
                for _ in 0..15 {
                    if writer {
                        let g = rw.write_lock().lock().await.unwrap();
                        tokens.lock().unwrap().push((g.fencing_token(), true));
                        if inside.swap(-1, Ordering::SeqCst) != 0 {
                            overlaps.fetch_add(1, Ordering::SeqCst);
                        }
                        tokio::time::sleep(Duration::from_millis(1)).await;
                        if inside.swap(0, Ordering::SeqCst) != -1 {
                            overlaps.fetch_add(1, Ordering::SeqCst);
                        }
                        g.unlock().await.unwrap();
                    } else {
                        let g = rw.read_lock().lock().await.unwrap();
                        tokens.lock().unwrap().push((g.fencing_token(), false));
                        let now = inside.fetch_add(1, Ordering::SeqCst);
                        if now < 0 {
                            overlaps.fetch_add(1, Ordering::SeqCst);
                        }
                        most.fetch_max(now + 1, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(3)).await;
                        inside.fetch_sub(1, Ordering::SeqCst);
                        g.unlock().await.unwrap();
                    }
                    done.fetch_add(1, Ordering::SeqCst);
                }
            }));
        }
    }
    bounded(Duration::from_secs(25), "240 holds", async {
        for t in tasks {
            t.await.unwrap();
        }
    })
    .await;
    assert_eq!(done.load(Ordering::SeqCst), 2 * 8 * 15);
    assert_eq!(
        overlaps.load(Ordering::SeqCst),
        0,
        "a writer overlapped a hold"
    );
    let most = most_readers.load(Ordering::SeqCst);
    assert!(
        most > 1,
        "readers never shared the lock (at most {most} at once)"
    );
    // Tokens are unique; each write token is above every token recorded before it.
    let tokens = tokens.lock().unwrap().clone();
    let mut seen: Vec<u64> = tokens.iter().map(|(t, _)| *t).collect();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), tokens.len(), "a token was handed out twice");
    for (i, (t, write)) in tokens.iter().enumerate() {
        if *write {
            let before = tokens[..i].iter().map(|(t, _)| *t).max().unwrap_or(0);
            assert!(
                *t > before,
                "write token {t} not above earlier token {before}"
            );
        }
    }
    for c in &clients {
        c.shutdown().await;
    }
    assert_nothing_left(&server).await;
}

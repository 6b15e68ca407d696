//! The hold watch never reports a live hold lost: readers among busy readers (whose releases
//! publish on the shared channel), a waiting writer, a downgrade, fair handoffs across two
//! clients with nested re-entries: every check of a live hold finds its field.

use std::time::Duration;

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_among_busy_readers_are_never_reported_lost() {
    let server = server();
    let a = client(&server).await;
    let b = client(&server).await;
    let name = "t8x:rw";
    let long = a.read_write_lock(name).read_lock().lock().await.unwrap();
    let mut tasks = Vec::new();
    for t in 0..4u64 {
        let c = if t % 2 == 0 { a.clone() } else { b.clone() };
        tasks.push(tokio::spawn(async move {
            let mut wrong = Vec::new();
            for i in 0..30u64 {
                let rl = c.read_write_lock(name).read_lock();
                // Every 5th a short fixed lease that runs out unreleased (others' releases
                // then drop it and publish).
                let fixed = i % 5 == 4;
                let rl = if fixed {
                    rl.with_lease(Duration::from_millis(40))
                } else {
                    rl
                };
                let g = rl.lock().await.unwrap();
                tokio::time::sleep(Duration::from_millis((t * 11 + i * 7) % 50)).await;
                if fixed {
                    tokio::time::sleep(Duration::from_millis(60)).await;
                    std::mem::forget(g);
                    continue;
                }
                if g.is_lost() {
                    wrong.push(format!("reader {t}/{i} lost"));
                }
                if let Err(e) = g.unlock().await {
                    wrong.push(format!("reader {t}/{i}: {e}"));
                }
            }
            wrong
        }));
    }
    // A writer waiting all along (its attempts and the readers' messages interleave).
    let wa = b.clone();
    let writer = tokio::spawn(async move {
        wa.read_write_lock(name)
            .write_lock()
            .try_lock_for(Duration::from_millis(1500))
            .await
    });
    let mut wrong = Vec::new();
    for t in tasks {
        wrong.extend(t.await.unwrap());
    }
    assert!(!long.is_lost(), "the long reader was reported lost");
    long.unlock().await.unwrap();
    if let Ok(Some(w)) = writer.await.unwrap() {
        // Downgrade: a read inside the write hold's scope, then the write released.
        let r = w
            .scope(b.read_write_lock(name).read_lock().lock())
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(60)).await;
        w.unlock().await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        if r.is_lost() {
            wrong.push("the downgraded read hold was reported lost".into());
        }
        r.unlock().await.unwrap();
    }
    a.shutdown().await;
    b.shutdown().await;
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fair_handoffs_and_reentries_are_never_reported_lost() {
    let server = server();
    let a = client(&server).await;
    let b = client(&server).await;
    let name = "t8x:fair";
    let mut tasks = Vec::new();
    for t in 0..4u64 {
        let c = if t % 2 == 0 { a.clone() } else { b.clone() };
        tasks.push(tokio::spawn(async move {
            let mut wrong = Vec::new();
            for i in 0..12u64 {
                let l = c.fair_lock(name);
                let g = l.lock().await.unwrap();
                // Re-entered, nested guard released while the hold is watched.
                let n = g.scope(l.lock()).await.unwrap();
                tokio::time::sleep(Duration::from_millis(20 + (t * 5 + i * 3) % 30)).await;
                n.unlock().await.unwrap();
                tokio::time::sleep(Duration::from_millis(20)).await;
                if g.is_lost() {
                    wrong.push(format!("{t}/{i} lost"));
                }
                if let Err(e) = g.unlock().await {
                    wrong.push(format!("{t}/{i}: {e}"));
                }
            }
            wrong
        }));
    }
    let mut wrong = Vec::new();
    for t in tasks {
        wrong.extend(t.await.unwrap());
    }
    a.shutdown().await;
    b.shutdown().await;
    assert!(wrong.is_empty(), "{wrong:#?}");
    assert_nothing_left(&server).await;
}

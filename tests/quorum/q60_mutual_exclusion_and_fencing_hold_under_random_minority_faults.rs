//! 3 clients × 3 workers increment a non-atomic counter under a quorum lock for 5 s while a
//! fault task kills (and restarts empty) or pauses (and resumes) one random node at a time.
//! The total is exact, never two holders at once, and fencing tokens strictly increase.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_exclusion_and_fencing_hold_under_random_minority_faults() {
    let m = Arc::new(masters(5));
    let lease = Duration::from_millis(1500);
    let mut clients = Vec::new();
    for _ in 0..3 {
        // Default quarantine (the longest lease): restarted-empty nodes stay out of the vote.
        clients.push(
            relock::QuorumClient::builder()
                .urls(m.urls())
                .node_timeout(Duration::from_millis(50))
                .watchdog_lease(lease)
                .build()
                .await
                .unwrap(),
        );
    }
    // Fresh servers are in quarantine for one lease.
    wait_until(
        Duration::from_secs(5),
        "the nodes to leave their start-up quarantine",
        || async { matches!(clients[0].lock("q60:probe").try_lock().await, Ok(Some(_))) },
    )
    .await
    .unwrap();

    let counter = Arc::new(Mutex::new(0u64));
    let inside = Arc::new(AtomicUsize::new(0));
    let overlaps = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicU64::new(0));
    let last_token = Arc::new(Mutex::new(0u64));
    let stop = Arc::new(AtomicBool::new(false));
    let mut workers = Vec::new();
    for c in &clients {
        for _ in 0..3 {
            let lock = c.lock("q60");
            let (counter, inside, overlaps, done, last_token, stop) = (
                counter.clone(),
                inside.clone(),
                overlaps.clone(),
                done.clone(),
                last_token.clone(),
                stop.clone(),
            );
            workers.push(tokio::spawn(async move {
                while !stop.load(Ordering::SeqCst) {
                    let g = match lock.try_lock_for(Duration::from_millis(500)).await {
                        Ok(Some(g)) => g,
                        Ok(None) | Err(relock::Error::QuorumNotReached { .. }) => continue,
                        Err(e) => panic!("{e}"),
                    };
                    if inside.fetch_add(1, Ordering::SeqCst) != 0 {
                        overlaps.fetch_add(1, Ordering::SeqCst);
                    }
                    {
                        let mut last = last_token.lock().unwrap();
                        assert!(
                            g.fencing_token() > *last,
                            "token {} after {}",
                            g.fencing_token(),
                            *last
                        );
                        *last = g.fencing_token();
                    }
                    let v = *counter.lock().unwrap();
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    *counter.lock().unwrap() = v + 1;
                    inside.fetch_sub(1, Ordering::SeqCst);
                    done.fetch_add(1, Ordering::SeqCst);
                    let _ = g.unlock().await;
                }
            }));
        }
    }

    // One random node at a time: kill + restart empty, or pause + resume.
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    println!("fault seed {seed}");
    let mut next = move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        seed >> 33
    };
    let start = Instant::now();
    let mut faults = (0, 0);
    while start.elapsed() < Duration::from_secs(5) {
        let i = (next() % 5) as usize;
        let m2 = m.clone();
        if next() % 2 == 0 {
            faults.0 += 1;
            tokio::task::spawn_blocking(move || {
                m2[i].kill().unwrap();
                std::thread::sleep(Duration::from_millis(150));
                m2[i].restart_empty().unwrap();
            })
            .await
            .unwrap();
        } else {
            faults.1 += 1;
            m[i].pause().unwrap();
            tokio::time::sleep(Duration::from_millis(200)).await;
            m[i].resume().unwrap();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop.store(true, Ordering::SeqCst);
    for w in workers {
        bounded(Duration::from_secs(10), "worker", w).await.unwrap();
    }
    let n = done.load(Ordering::SeqCst);
    println!(
        "{n} increments, {} kills+restarts, {} pauses, {} overlaps",
        faults.0,
        faults.1,
        overlaps.load(Ordering::SeqCst)
    );
    assert!(n > 20, "progress under faults: {n}");
    assert_eq!(*counter.lock().unwrap(), n, "exact total");
    assert_eq!(overlaps.load(Ordering::SeqCst), 0, "never two holders");
    for c in &clients {
        c.shutdown().await;
    }
    let all: Vec<&RedisServer> = m.servers().iter().collect();
    assert_nothing_left_on(&all).await;
}

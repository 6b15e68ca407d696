//! Permit semaphore conservation under faults: two clients of six tasks each acquire and
//! release one of four permits (with the watchdog) over and over, while every command
//! connection is killed (CLIENT KILL) every 150 ms. An acquire cut off with its connection is
//! retried under its permit id, and a release names its id: at the end all four permits are
//! available, and no call failed.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permits_with_ids_are_neither_created_nor_destroyed_while_connections_are_killed() {
    let server = server();
    let (a, b) = (client(&server).await, client(&server).await);
    assert!(a
        .permit_expirable_semaphore("p92")
        .try_set_permits(4)
        .await
        .unwrap());
    let (acquired, released) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let failures = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let held = Arc::new(AtomicU64::new(0));
    let most = Arc::new(AtomicU64::new(0));
    let until = Instant::now() + Duration::from_secs(5);
    let mut tasks = Vec::new();
    for c in [&a, &b] {
        for _ in 0..6 {
            let sem = c.permit_expirable_semaphore("p92");
            let (acquired, released, failures) =
                (acquired.clone(), released.clone(), failures.clone());
            let (held, most) = (held.clone(), most.clone());
            tasks.push(tokio::spawn(async move {
                while Instant::now() < until {
                    let permit = match sem.try_acquire_for(Duration::from_secs(3), None).await {
                        Ok(Some(p)) => p,
                        Ok(None) => continue,
                        Err(e) => {
                            failures.lock().unwrap().push(format!("acquire: {e}"));
                            continue;
                        }
                    };
                    let n = acquired.fetch_add(1, Ordering::SeqCst);
                    let now = held.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(n % 3)).await;
                    held.fetch_sub(1, Ordering::SeqCst);
                    match permit.release().await {
                        Ok(()) => {
                            released.fetch_add(1, Ordering::SeqCst);
                        }
                        Err(e) => failures.lock().unwrap().push(format!("release: {e}")),
                    }
                }
            }));
        }
    }
    let mut kills = 0;
    while Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(150)).await;
        kills += server.client_kill_type("normal").unwrap();
    }
    for t in tasks {
        bounded(Duration::from_secs(20), "a task to finish", t)
            .await
            .unwrap();
    }
    let failures = failures.lock().unwrap().clone();
    let available = a
        .permit_expirable_semaphore("p92")
        .available()
        .await
        .unwrap();
    let (acquired, released) = (
        acquired.load(Ordering::SeqCst),
        released.load(Ordering::SeqCst),
    );
    assert!(kills > 10, "only {kills} connections killed");
    assert!(acquired > 50, "only {acquired} acquisitions");
    assert!(
        failures.is_empty(),
        "{} calls failed: {failures:?}",
        failures.len()
    );
    assert_eq!(acquired, released);
    assert!(
        most.load(Ordering::SeqCst) <= 4,
        "more than 4 permits held at once"
    );
    assert_eq!(
        available, 4,
        "{acquired} acquired and released, {kills} connections killed"
    );
    a.shutdown().await;
    b.shutdown().await;
    let _ = server.cmd(&["DEL", "p92"]).unwrap();
    let _ = server.cmd(&["DEL", "{p92}:permits"]).unwrap();
    // Request keys of calls cut off with their connection expire by themselves.
    for key in server.keys().unwrap() {
        assert!(key.starts_with("relock_request:{p92}:"), "{key} left");
        let ttl = server.cmd(&["PTTL", &key]).unwrap().as_int().unwrap();
        assert!(ttl > 0, "{key}: PTTL {ttl}");
        server.cmd(&["DEL", &key]).unwrap();
    }
    assert_nothing_left(&server).await;
}

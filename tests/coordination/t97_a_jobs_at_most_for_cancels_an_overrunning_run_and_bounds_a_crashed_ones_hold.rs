//! `at_most_for` caps a job's run: a body still running when it ends is cancelled (it never
//! reaches its end) with `LockLost`, and a run whose process stops finishing (its guard
//! forgotten, as a crash leaves it) holds the occurrence no longer than `at_most_for`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use relock::Error;
use relock_tests::*;

#[tokio::test]
async fn a_jobs_at_most_for_cancels_an_overrunning_run_and_bounds_a_crashed_ones_hold() {
    let server = server();
    let (a, b) = (client(&server).await, client(&server).await);
    let at_most = Duration::from_millis(400);

    let reached_end = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let r = {
        let reached_end = reached_end.clone();
        bounded(
            Duration::from_secs(3),
            "the overrunning run",
            a.job("t97", at_most).run(async move |_| {
                tokio::time::sleep(Duration::from_secs(5)).await;
                reached_end.store(true, Ordering::SeqCst);
            }),
        )
        .await
    };
    assert!(matches!(r, Err(Error::LockLost { .. })), "{r:?}");
    assert!(!reached_end.load(Ordering::SeqCst));
    assert!(started.elapsed() >= at_most - Duration::from_millis(20));
    assert_eq!(server.cmd(&["EXISTS", "t97"]).unwrap().as_int(), Some(0));

    // A crashed run: nothing finishes it; its hold ends with at_most_for.
    let job = a
        .job("t97:crash", at_most)
        .at_least_for(Duration::from_millis(100));
    let g = job.try_start().await.unwrap().expect("free");
    let started = Instant::now();
    std::mem::forget(g);
    let other = b.job("t97:crash", at_most);
    assert!(other.try_start().await.unwrap().is_none());
    wait_until(
        Duration::from_secs(3),
        "the crashed run's hold to end",
        || async { server.cmd(&["EXISTS", "t97:crash"]).unwrap().as_int() == Some(0) },
    )
    .await
    .unwrap();
    assert!(started.elapsed() < at_most + Duration::from_millis(500));
    assert_eq!(other.run(async |_| 1).await.unwrap(), Some(1));
    a.shutdown().await;
    b.shutdown().await;
}

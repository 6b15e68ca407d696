//! Waiters on a job's lock (other nodes' `try_start_for` and `start`, and a plain lock's
//! `try_lock_for` on `Job::lock()`) parked while the run held it with its 10 s `at_most_for`
//! lease. The run finishes early and the lock is kept until `at_least_for` (2 s) after its
//! start: every waiter gets the lock within moments of that end, not when the 10 s lease it
//! read would have ended (nor at its own 8 s deadline), also a waiter whose client's other
//! waiter gave up before that end.

use std::time::{Duration, Instant};

use relock_tests::*;

#[tokio::test]
async fn job_waiters_get_the_lock_when_the_kept_time_ends_not_at_the_lease_they_read() {
    let server = server();
    // Its hold does not subscribe to the channel: the subscribers counted are the waiters.
    let owner = client_not_watching_holds(&server, Duration::from_secs(30)).await;
    let at_most = Duration::from_secs(10);
    let at_least = Duration::from_secs(2);
    let run = owner
        .job("t101", at_most)
        .at_least_for(at_least)
        .try_start()
        .await
        .unwrap()
        .expect("the first run starts");
    let started = Instant::now();

    // Three other nodes wait, each its own way. Each lets go at once when it gets the lock
    // (its job keeps nothing), so that the next one can take it.
    let mut waiters = Vec::new();
    for way in ["try_start_for", "start", "lock().try_lock_for"] {
        let c = client(&server).await;
        let job = c.job("t101", at_most);
        waiters.push(tokio::spawn(async move {
            let got = match way {
                "try_start_for" => job
                    .try_start_for(Duration::from_secs(8))
                    .await
                    .unwrap()
                    .map(|g| (Instant::now(), tokio::spawn(g.finish()))),
                "start" => {
                    let g = job.start().await.unwrap();
                    Some((Instant::now(), tokio::spawn(g.finish())))
                }
                _ => job
                    .lock()
                    .try_lock_for(Duration::from_secs(8))
                    .await
                    .unwrap()
                    .map(|g| (Instant::now(), tokio::spawn(g.unlock()))),
            };
            let (at, released) = got.unwrap_or_else(|| panic!("{way}: not granted"));
            released.await.unwrap().unwrap();
            c.shutdown().await;
            (way, at)
        }));
    }
    // Two more waiters share one client: the first gives up before the kept time ends, and
    // the wake-up must still reach the second.
    let shared = client(&server).await;
    let quitter = {
        let lock = shared.job("t101", at_most).lock().clone();
        tokio::spawn(async move { lock.try_lock_for(Duration::from_millis(1200)).await })
    };
    wait_until(
        Duration::from_secs(3),
        "the first shared waiter to park",
        || async { shared.parked_waiters() == 1 },
    )
    .await
    .unwrap();
    let stayer = {
        let job = shared.job("t101", at_most);
        tokio::spawn(async move {
            let g = job.start().await.unwrap();
            let at = Instant::now();
            g.finish().await.unwrap();
            at
        })
    };
    wait_until(
        Duration::from_secs(3),
        "the second shared waiter to park",
        || async { shared.parked_waiters() == 2 },
    )
    .await
    .unwrap();
    wait_until(Duration::from_secs(3), "three parked waiters", || async {
        server
            .pubsub_numsub("redisson_lock__channel:{t101}")
            .unwrap()
            >= 4 // one per waiting client
    })
    .await
    .unwrap();

    // The run's work took 500 ms: finished, the lock is kept until 2 s after its start.
    tokio::time::sleep_until((started + Duration::from_millis(500)).into()).await;
    run.finish().await.unwrap();
    let pttl = server.cmd(&["PTTL", "t101"]).unwrap().as_int().unwrap();
    assert!(pttl > 1000 && pttl <= 1500, "kept for {pttl} ms");

    for w in waiters {
        let (way, at) = bounded(Duration::from_secs(12), "a waiter", w)
            .await
            .unwrap();
        let after = at - started;
        // Not before the kept time ends; within moments of it (before: 8-10 s).
        assert!(
            after >= at_least - Duration::from_millis(50),
            "{way} got it early: {after:?}"
        );
        assert!(
            after < at_least + Duration::from_millis(900),
            "{way} slept through the free lock: {after:?}"
        );
    }
    let gave_up = bounded(Duration::from_secs(3), "the waiter that gives up", quitter)
        .await
        .unwrap()
        .unwrap();
    assert!(gave_up.is_none(), "it gave up before the kept time ended");
    let at = bounded(
        Duration::from_secs(12),
        "the shared client's other waiter",
        stayer,
    )
    .await
    .unwrap();
    let after = at - started;
    assert!(
        after < at_least + Duration::from_millis(900),
        "a waiter beside one that gave up slept through the free lock: {after:?}"
    );
    shared.shutdown().await;
    owner.shutdown().await;
    assert_nothing_left(&server).await;
}

//! Wire compatibility: what Redisson's `RSemaphore.release` and `RCountDownLatch.countDown`
//! send (INCRBY then PUBLISH of the new count on `redisson_sc:{name}`; DECR, DEL and PUBLISH
//! `0` on `redisson_countdownlatch__channel__{name}`), sent by hand, wakes relock's waiters
//! through their messages (counted by `relock_wakeups_total`); Redisson's "new count" message
//! `1` wakes nobody.

use std::time::Duration;

use metrics_util::debugging::DebuggingRecorder;
use relock_tests::*;

// A current-thread runtime: the local recorder sees what every task records.
#[tokio::test]
async fn redisson_messages_written_by_hand_wake_relock_waiters() {
    let recorder = DebuggingRecorder::new();
    let _local = metrics::set_default_local_recorder(&recorder);
    let server = server();
    let a = client(&server).await;

    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let sem = a.semaphore("s85");
            tokio::spawn(async move { sem.acquire(1).await.map(kept) })
        })
        .collect();
    wait_until(Duration::from_secs(3), "3 parked waiters", || async {
        a.parked_waiters() == 3
    })
    .await
    .unwrap();
    crate::wakeups(&recorder); // resets the counter
    assert_eq!(
        server.cmd(&["INCRBY", "s85", "2"]).unwrap().as_int(),
        Some(2)
    );
    let _ = server.cmd(&["PUBLISH", "redisson_sc:{s85}", "2"]).unwrap();
    wait_until(
        Duration::from_secs(1),
        "two waiters to get a permit",
        || async { waiters.iter().filter(|w| w.is_finished()).count() == 2 },
    )
    .await
    .unwrap();
    assert_eq!(crate::wakeups(&recorder), 2);
    assert_eq!(
        server.cmd(&["INCRBY", "s85", "1"]).unwrap().as_int(),
        Some(1)
    );
    let _ = server.cmd(&["PUBLISH", "redisson_sc:{s85}", "1"]).unwrap();
    for w in waiters {
        bounded(Duration::from_secs(2), "the waiters", w)
            .await
            .unwrap()
            .unwrap();
    }
    assert_eq!(crate::get(&server, "s85").as_deref(), Some("0"));

    let _ = server.cmd(&["SET", "s85:latch", "1"]).unwrap();
    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let latch = a.count_down_latch("s85:latch");
            tokio::spawn(async move { latch.wait().await })
        })
        .collect();
    wait_until(Duration::from_secs(3), "3 parked latch waiters", || async {
        a.parked_waiters() == 3
    })
    .await
    .unwrap();
    let channel = "redisson_countdownlatch__channel__{s85:latch}";
    crate::wakeups(&recorder); // resets the counter
    let _ = server.cmd(&["PUBLISH", channel, "1"]).unwrap();
    assert_eq!(
        server.cmd(&["DECR", "s85:latch"]).unwrap().as_int(),
        Some(0)
    );
    let _ = server.cmd(&["DEL", "s85:latch"]).unwrap();
    let _ = server.cmd(&["PUBLISH", channel, "0"]).unwrap();
    for w in waiters {
        bounded(Duration::from_secs(2), "the latch waiters", w)
            .await
            .unwrap()
            .unwrap();
    }
    assert_eq!(
        crate::wakeups(&recorder),
        1,
        "`1` woke someone, or `0` did not"
    );
    crate::no_subscriptions(&[&a]).await;
    let _ = server.cmd(&["DEL", "s85"]).unwrap();
    assert_nothing_left(&server).await;
}

//! Waiters that time out, and waiters whose futures are dropped, leave the line at once (well
//! before their heartbeat deadline could evict them); deadlines never drift as waiters come
//! and go; a client's shutdown takes its waiters out; and nothing is left afterwards.

use std::time::Duration;

use relock_tests::*;

#[tokio::test]
async fn waiters_that_time_out_or_are_cancelled_leave_the_line() {
    let server = server();
    let heartbeat = Duration::from_secs(5);
    let (a, b) = (
        fair_client(&server, heartbeat).await,
        fair_client(&server, heartbeat).await,
    );
    let holder = a.fair_lock("f40").lock().await.unwrap();

    // Timeouts: 5 waiters on b give up after 300 ms.
    let mut timeouts = Vec::new();
    for i in 0..5 {
        let lock = b.fair_lock("f40");
        timeouts.push(
            spawn_in_line(&server, "f40", i + 1, async move {
                lock.try_lock_for(Duration::from_millis(300)).await
            })
            .await,
        );
    }
    for t in timeouts {
        let r = bounded(Duration::from_secs(2), "timed-out waiter", t)
            .await
            .unwrap();
        assert!(matches!(r, Ok(None)), "{r:?}");
    }
    let left = wait_until(
        Duration::from_secs(1),
        "timed-out waiters to leave",
        || async {
            fair_line(&server, "f40").is_empty() && fair_heartbeats(&server, "f40").is_empty()
        },
    )
    .await
    .unwrap();
    println!("timed-out waiters left the line {left:?} after giving up");

    // Cancellation: 5 waiters on a and b are aborted mid-wait.
    let mut cancelled = Vec::new();
    for i in 0..5 {
        let lock = [&a, &b][i % 2].fair_lock("f40");
        cancelled
            .push(spawn_in_line(&server, "f40", i + 1, async move { lock.lock().await }).await);
    }
    for c in &cancelled {
        c.abort();
    }
    for c in cancelled {
        assert!(c.await.unwrap_err().is_cancelled());
    }
    wait_until(
        Duration::from_secs(1),
        "cancelled waiters to leave",
        || async {
            fair_line(&server, "f40").is_empty() && fair_heartbeats(&server, "f40").is_empty()
        },
    )
    .await
    .unwrap();
    assert_eq!((a.queued_waiters(), b.queued_waiters()), (0, 0));

    // No drift: 40 short waits come and go; every deadline stays within now + heartbeat, and
    // a waiter that stays keeps its place at the front.
    let stayer_lock = a.fair_lock("f40");
    let stayer = spawn_in_line(&server, "f40", 1, async move { stayer_lock.lock().await }).await;
    let stayer_field = fair_line(&server, "f40")[0].clone();
    for round in 0..20 {
        // Spawned: the test task itself owns the held lock and would re-enter it.
        let short = |lock: relock::Lock| {
            tokio::spawn(async move { lock.try_lock_for(Duration::from_millis(20)).await })
        };
        let (r1, r2) = tokio::join!(short(a.fair_lock("f40")), short(b.fair_lock("f40")));
        assert!(
            matches!((r1.unwrap(), r2.unwrap()), (Ok(None), Ok(None))),
            "round {round}"
        );
        let now = server_ms(&server);
        for (who, deadline) in fair_heartbeats(&server, "f40") {
            assert!(
                deadline <= now + heartbeat.as_millis() as i64,
                "{who}'s deadline {deadline} drifted past now {now} + heartbeat"
            );
        }
    }
    wait_until(Duration::from_secs(1), "short waiters to leave", || async {
        fair_line(&server, "f40") == vec![stayer_field.clone()]
    })
    .await
    .unwrap();
    // Shutdown takes a client's waiters out of every line (they get `Shutdown`).
    let doomed_lock = b.fair_lock("f40");
    let doomed = spawn_in_line(&server, "f40", 2, async move { doomed_lock.lock().await }).await;
    bounded(Duration::from_secs(3), "shutdown", b.shutdown()).await;
    let r = bounded(
        Duration::from_secs(2),
        "waiter told of the shutdown",
        doomed,
    )
    .await
    .unwrap();
    assert!(matches!(r, Err(relock::Error::Shutdown)), "{r:?}");
    assert_eq!(fair_line(&server, "f40"), vec![stayer_field.clone()]);

    holder.unlock().await.unwrap();
    let g = bounded(Duration::from_secs(2), "the waiter that stayed", stayer)
        .await
        .unwrap()
        .unwrap();
    g.unlock().await.unwrap();
    assert_no_waiters(&server, &a, "f40").await;
    assert_nothing_left(&server).await;
}

//! The cost of one handoff to a parked waiter, counted exactly (issue 25's hop count, as far as
//! the meters can see): a plain handoff is one release call, one message that wakes exactly
//! one waiter, and the waiter's one acquire call; a fair handoff is one release call that
//! grants, and one message that wakes the waiter it names, who needs no call of its own. A
//! wake-up or a server call added back to either path fails here.

use std::time::Duration;

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use metrics_util::MetricKind;
use relock_tests::*;

fn wakeups(recorder: &DebuggingRecorder) -> (u64, u64) {
    let mut woken = 0;
    let mut wasted = 0;
    for (key, _, _, value) in recorder.snapshotter().snapshot().into_vec() {
        let (kind, key) = key.into_parts();
        if let (MetricKind::Counter, DebugValue::Counter(n)) = (kind, value) {
            match key.name() {
                "relock_wakeups_total" => woken += n,
                "relock_wakeups_wasted_total" => wasted += n,
                _ => {}
            }
        }
    }
    (woken, wasted)
}

async fn quiet_client(server: &relock_testkit::RedisServer) -> relock::Client {
    // No hold watches (their one check per hold would land in the window) and heartbeats far
    // apart: only the handoff's own traffic is counted.
    relock::Client::builder()
        .url(server.url())
        .watch_holds(false)
        .fair_heartbeat(Duration::from_secs(60))
        .build()
        .await
        .unwrap()
}

/// One handoff of `make`'s lock from a holder on one client to a waiter parked on another:
/// (wake-ups, wasted wake-ups, EVALSHA calls on the server) from the release to the waiter's
/// guard.
async fn handoff(
    server: &relock_testkit::RedisServer,
    recorder: &DebuggingRecorder,
    make: impl Fn(&relock::Client) -> relock::Lock,
) -> (u64, u64, u64) {
    let (a, b) = (quiet_client(server).await, quiet_client(server).await);
    // Warm both: scripts cached, connections up, subscriptions made once.
    make(&a).lock().await.unwrap().unlock().await.unwrap();
    make(&b).lock().await.unwrap().unlock().await.unwrap();
    let held = make(&a).lock().await.unwrap();
    let waiter = {
        let lock = make(&b);
        tokio::spawn(async move { lock.lock().await })
    };
    wait_until(Duration::from_secs(2), "the waiter to park", || async {
        b.parked_waiters() == 1
    })
    .await
    .unwrap();
    let before = wakeups(recorder);
    server.reset_stats().unwrap();
    held.unlock().await.unwrap();
    let guard = bounded(Duration::from_secs(2), "the handoff", waiter)
        .await
        .unwrap()
        .unwrap();
    let evalsha = server.command_calls("evalsha").unwrap();
    // No call of another form either (a read-only script, a script sent whole).
    for other in ["evalsha_ro", "eval", "eval_ro"] {
        assert_eq!(server.command_calls(other).unwrap(), 0, "{other}");
    }
    let after = wakeups(recorder);
    guard.unlock().await.unwrap();
    a.shutdown().await;
    b.shutdown().await;
    (after.0 - before.0, after.1 - before.1, evalsha)
}

#[tokio::test]
async fn one_handoff_costs_one_wake_up_and_only_the_server_calls_it_needs() {
    let server = server();
    let recorder = DebuggingRecorder::new();
    let _local = metrics::set_default_local_recorder(&recorder);

    let plain = handoff(&server, &recorder, |c| c.lock("t99:plain")).await;
    assert_eq!(
        plain,
        (1, 0, 2),
        "plain: (wake-ups, wasted, EVALSHA): the release, one wake-up, the waiter's acquire"
    );
    let fair = handoff(&server, &recorder, |c| c.fair_lock("t99:fair")).await;
    assert_eq!(
        fair,
        (1, 0, 1),
        "fair: (wake-ups, wasted, EVALSHA): the release that grants, one wake-up, no call of the waiter's"
    );
}

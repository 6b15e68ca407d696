//! A fresh `lock()` (here `try_lock_for`) that waits on a hold its own task took outside any
//! scope is not re-entry: it waits, gives up at its bound, and emits exactly one warning
//! naming the lock and the fix (`scope` / `with`), however often it is woken meanwhile. The
//! same wait from another task emits none.

use std::time::{Duration, Instant};

use fred::interfaces::PubsubInterface;
use relock_tests::*;

use crate::support::raw_redis;

/// Warning lines about waiting on one's own hold of `name`.
fn own_hold_warnings(log: &str, name: &str) -> Vec<String> {
    log.lines()
        .filter(|l| {
            l.contains("WARN") && l.contains(&format!("lock={name}")) && l.contains("scope")
        })
        .map(str::to_string)
        .collect()
}

/// Publishes `n` release messages on the lock's channel, 100 ms apart: each wakes a waiter,
/// which then tries again (and must not warn again).
fn spawn_wakeups(
    redis: fred::clients::Client,
    name: &str,
    n: usize,
) -> tokio::task::JoinHandle<()> {
    let channel = format!("redisson_lock__channel:{{{name}}}");
    tokio::spawn(async move {
        for _ in 0..n {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let _: i64 = redis.publish(channel.as_str(), "0").await.unwrap();
        }
    })
}

fn script_calls(server: &RedisServer) -> u64 {
    server.command_calls("evalsha").unwrap() + server.command_calls("eval").unwrap()
}

#[tokio::test]
async fn a_lock_waiting_on_its_own_tasks_hold_warns_once_and_stays_bounded() {
    let captured = capture_traces(tracing::Level::WARN, "");

    let server = server();
    let c = client(&server).await;
    let redis = raw_redis(&server).await;
    let lock = c.lock("o50");
    let held = lock.lock().await.unwrap();
    captured.take();

    // The holder's own task waits, woken three times meanwhile.
    server.reset_stats().unwrap();
    let wakeups = spawn_wakeups(redis.clone(), "o50", 3);
    let t0 = Instant::now();
    let r = bounded(
        Duration::from_secs(3),
        "try_lock_for from the holder's task",
        lock.try_lock_for(Duration::from_millis(400)),
    )
    .await;
    let took = t0.elapsed();
    assert!(
        matches!(r, Ok(None)),
        "the holder's own task: {:?}",
        r.map(|g| g.map(|g| g.fencing_token()))
    );
    assert!(
        took >= Duration::from_millis(390) && took < Duration::from_millis(900),
        "try_lock_for(400 ms) took {took:?}"
    );
    wakeups.await.unwrap();
    let attempts = script_calls(&server);
    assert!(
        attempts >= 3,
        "the waiter tried {attempts} times (woken 3 times)"
    );
    let log = captured.take();
    let warnings = own_hold_warnings(&log, "o50");
    assert_eq!(warnings.len(), 1, "expected one warning, log:\n{log}");
    assert!(
        warnings[0].contains("with"),
        "the warning names the fix: {}",
        warnings[0]
    );

    // Another task waits the same way: no such warning.
    let wakeups = spawn_wakeups(redis.clone(), "o50", 3);
    let other = tokio::spawn({
        let lock = lock.clone();
        async move {
            let t0 = Instant::now();
            let r = lock.try_lock_for(Duration::from_millis(400)).await;
            (r.map(|g| g.map(|g| g.fencing_token())), t0.elapsed())
        }
    });
    let (r, took) = bounded(
        Duration::from_secs(3),
        "try_lock_for from another task",
        other,
    )
    .await
    .unwrap();
    assert!(matches!(r, Ok(None)), "another task: {r:?}");
    assert!(took < Duration::from_millis(900), "{took:?}");
    wakeups.await.unwrap();
    let log = captured.take();
    assert_eq!(
        own_hold_warnings(&log, "o50"),
        Vec::<String>::new(),
        "log:\n{log}"
    );

    held.unlock().await.unwrap();
    assert_nothing_left(&server).await;
}

//! What the server runs for one fair handoff with a live head of line, command by command
//! (SLOWLOG with every command logged, the commands a script runs each under its own name):
//! the holder's release, which hands the lock to the waiter first in line; and then the
//! releaser asking again until it is in line: with nobody else of its client waiting, its
//! first attempt (which never joins) and its join; and, as in a benchmark's steady state,
//! with another waiter of its client already subscribed, its join alone. The holder was itself
//! handed the lock, so that its grant record is there to be replaced, as on every handoff but
//! the first.
//!
//! The fencing counter is persistent, so that it never expires between two grants and is
//! seeded again inside a counted script (two more commands, on a lock idle for a second).

use std::time::Duration;

use relock_testkit::Value;
use relock_tests::*;

/// A client whose first lease (the heartbeat deadline, 60 s) is shorter than its watchdog
/// lease, so that no settle call follows a handoff, and whose heartbeat never beats inside a
/// count.
async fn steady_client(server: &RedisServer) -> relock::Client {
    relock::Client::builder()
        .url(server.url())
        .fair_heartbeat(Duration::from_secs(60))
        .watchdog_lease(Duration::from_secs(120))
        .persistent_fencing_counters(true)
        .command_timeout(Duration::from_secs(1))
        .connect_timeout(Duration::from_secs(2))
        .build()
        .await
        .expect("connect")
}

/// Every command logged since the last reset, oldest first: each command a script ran by its
/// own name, then the script as `evalsha` (logged once it has run);
/// the log's own commands and pub/sub's left out.
fn logged(server: &RedisServer) -> Vec<String> {
    let Value::Array(Some(entries)) = server.cmd(&["SLOWLOG", "GET", "-1"]).unwrap() else {
        panic!("SLOWLOG GET replied no array");
    };
    let mut names: Vec<String> = entries
        .iter()
        .filter_map(|e| match e {
            Value::Array(Some(fields)) => match fields.get(3) {
                Some(Value::Array(Some(args))) => args.first().and_then(Value::as_string),
                _ => None,
            },
            _ => None,
        })
        .map(|c| c.to_lowercase())
        .filter(|c| {
            !matches!(
                c.as_str(),
                "slowlog" | "config" | "ping" | "info" | "client" | "hello"
            ) && !c.ends_with("subscribe")
        })
        .collect();
    names.reverse();
    names
}

fn start_logging(server: &RedisServer) {
    server
        .cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "0"])
        .unwrap();
    server
        .cmd(&["CONFIG", "SET", "slowlog-max-len", "10000"])
        .unwrap();
    server.cmd(&["SLOWLOG", "RESET"]).unwrap();
}

#[tokio::test]
async fn a_handoff_to_a_live_head_of_line_runs_a_counted_list_of_commands_on_the_server() {
    let server = server();
    let (a, b) = (steady_client(&server).await, steady_client(&server).await);
    // Warm-up, so that no NOSCRIPT fallback is logged.
    lock_and_unlock(&a.fair_lock("f130")).await;
    let first = a.fair_lock("f130").lock().await.unwrap();
    let lock = b.fair_lock("f130");
    let b_waits = spawn_in_line(
        &server,
        "f130",
        1,
        async move { lock.lock().await.unwrap() },
    )
    .await;
    wait_until(Duration::from_secs(3), "b parked", || async {
        b.parked_waiters() == 1
    })
    .await
    .unwrap();
    first.unlock().await.unwrap();
    let held = bounded(Duration::from_secs(5), "b handed the lock", b_waits)
        .await
        .unwrap();
    let lock = a.fair_lock("f130");
    let a_waits = spawn_in_line(
        &server,
        "f130",
        1,
        async move { lock.lock().await.unwrap() },
    )
    .await;
    wait_until(Duration::from_secs(3), "a parked", || async {
        a.parked_waiters() == 1
    })
    .await
    .unwrap();

    // The handoff: b (handed the lock) releases, a (alive, first) is handed it.
    start_logging(&server);
    held.unlock().await.unwrap();
    let a_holds = bounded(Duration::from_secs(5), "a handed the lock", a_waits)
        .await
        .unwrap();
    let handoff = logged(&server);

    // The releaser asks again: its first attempt, then its join.
    server.cmd(&["SLOWLOG", "RESET"]).unwrap();
    // Waited for on the client's side only: no command of the test's own in the log.
    let lock = b.fair_lock("f130");
    let b_waits = tokio::spawn(async move { lock.lock().await.unwrap() });
    wait_until(Duration::from_secs(3), "b parked again", || async {
        b.parked_waiters() == 1
    })
    .await
    .unwrap();
    let rejoin = logged(&server);

    // The line had one waiter: it goes with the ZREM that takes the waiter out (a sorted set
    // with no member left is gone), and the releaser's join starts a new one (a ticket from
    // the clock, and one PEXPIRE for the line it made).
    let expected_handoff = [
        "hdel", "exists", "time", "zrange", "zmscore", "incr", "zrem", "hset", "pexpire", "set",
        "publish", "evalsha",
    ];
    assert_eq!(
        handoff,
        expected_handoff,
        "the handoff ran {} commands in its script: {handoff:?}",
        handoff.len() - 1
    );
    let expected_rejoin = [
        "pttl",
        "hrandfield",
        "evalsha",
        "pttl",
        "hrandfield",
        "zrange",
        "time",
        "zadd",
        "pexpire",
        "evalsha",
    ];
    assert_eq!(
        rejoin,
        expected_rejoin,
        "asking again ran {} commands in its 2 scripts: {rejoin:?}",
        rejoin.len() - 2
    );

    // The steady state: a's client has a second waiter in line (behind b), so a's next lock()
    // joins at once, without a first attempt.
    let lock = a.fair_lock("f130");
    let a2_waits = spawn_in_line(
        &server,
        "f130",
        2,
        async move { lock.lock().await.unwrap() },
    )
    .await;
    wait_until(
        Duration::from_secs(3),
        "a's second waiter parked",
        || async { a.parked_waiters() == 1 },
    )
    .await
    .unwrap();
    start_logging(&server);
    a_holds.unlock().await.unwrap();
    let b_holds = bounded(Duration::from_secs(5), "b handed the lock", b_waits)
        .await
        .unwrap();
    let lock = a.fair_lock("f130");
    let a3_waits = tokio::spawn(async move { lock.lock().await.unwrap() });
    wait_until(
        Duration::from_secs(3),
        "a's third waiter parked",
        || async { a.parked_waiters() == 2 },
    )
    .await
    .unwrap();
    let steady = logged(&server);
    server
        .cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "10000"])
        .unwrap();
    // The release (a waiter stays behind the one handed the lock, and keeps the line), then the
    // join.
    let expected_steady = [
        "hdel",
        "exists",
        "time",
        "zrange",
        "zmscore",
        "incr",
        "zrem",
        "hset",
        "pexpire",
        "set",
        "publish",
        "evalsha",
        "pttl",
        "hrandfield",
        "zrange",
        "time",
        "zadd",
        "pexpire",
        "evalsha",
    ];
    assert_eq!(
        steady,
        expected_steady,
        "a handoff and the releaser's join ran {} commands in their 2 scripts (expected 17: 11 + 6): {steady:?}",
        steady.len() - 2
    );

    b_holds.unlock().await.unwrap();
    let a2_holds = bounded(Duration::from_secs(5), "a2 handed the lock", a2_waits)
        .await
        .unwrap();
    a2_holds.unlock().await.unwrap();
    let a3_holds = bounded(Duration::from_secs(5), "a3 handed the lock", a3_waits)
        .await
        .unwrap();
    a3_holds.unlock().await.unwrap();
    a.shutdown().await;
    b.shutdown().await;
    server.cmd(&["DEL", "redisson_lock_token:{f130}"]).unwrap();
    assert_nothing_left(&server).await;
}

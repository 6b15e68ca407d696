//! The first waiter (a process) is stopped, and the lock released: the release hands the lock
//! to it (it is alive as far as the server knows), with a first lease cut at its heartbeat
//! deadline. `try_lock` from anyone else gets `None` and does not join the line; once that
//! first lease ends `try_lock` succeeds. Resumed, the process finds its grant gone and rejoins
//! at its old ticket, under a new field (a field is handed the lock at most once). A live
//! waiter whose entry vanishes (as after a stall past its deadline) rejoins at its old place,
//! also under a new field.

use std::process::Command;
use std::time::Duration;

use relock_tests::*;

const LINE: &str = "relock_fair_line:{f70}";

#[tokio::test]
async fn try_lock_never_joins_or_jumps_the_line_and_a_stalled_waiter_rejoins_at_its_place() {
    let server = server();
    let heartbeat = Duration::from_millis(1000);
    let (a, b) = (
        fair_client(&server, heartbeat).await,
        fair_client(&server, heartbeat).await,
    );
    let holder = a.fair_lock("f70").lock().await.unwrap();
    let mut child = spawn_waiter_process(
        env!("CARGO_BIN_EXE_relock-test-holder"),
        &server,
        "f70",
        1000,
        1,
    )
    .await;
    let pid = child.id().to_string();
    let signal = |sig: &str| {
        let ok = Command::new("kill")
            .args([sig, &pid])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill {sig} {pid}");
    };
    signal("-STOP");
    let stopped = fair_line(&server, "f70");
    let stopped_ticket = ticket(&server, &stopped[0]);
    holder.unlock().await.unwrap();
    let released = std::time::Instant::now();

    // The release handed the lock to the stopped process: try_lock neither jumps nor joins.
    assert_eq!(lock_fields(&server), stopped);
    assert!(b.fair_lock("f70").try_lock().await.unwrap().is_none());
    assert!(a.fair_lock("f70").is_locked().await.unwrap());
    assert!(fair_line(&server, "f70").is_empty());

    // After its first lease (at most its heartbeat deadline), it no longer blocks anyone.
    let got = bounded(
        Duration::from_secs(3),
        "the stopped waiter's eviction",
        b.fair_lock("f70").try_lock_for(Duration::from_secs(2)),
    )
    .await
    .unwrap()
    .expect("acquired after the stopped waiter's first lease");
    assert!(released.elapsed() <= heartbeat + Duration::from_millis(500));
    assert!(fair_line(&server, "f70").is_empty());

    // Resumed, the process finds its grant gone and rejoins the line at its old ticket,
    // under a new field of the same client.
    signal("-CONT");
    let client_id = stopped[0].rsplit_once(':').unwrap().0.to_string();
    wait_until(
        Duration::from_secs(3),
        "the resumed process to rejoin",
        || async { fair_line(&server, "f70").len() == 1 },
    )
    .await
    .unwrap();
    let rejoined = fair_line(&server, "f70");
    assert_ne!(rejoined, stopped);
    assert_eq!(rejoined[0].rsplit_once(':').unwrap().0, client_id);
    assert_eq!(ticket(&server, &rejoined[0]), stopped_ticket);

    // Two live waiters behind it; the middle one's entry vanishes; it rejoins in the middle.
    let w1 = {
        let l = a.fair_lock("f70");
        spawn_in_line(&server, "f70", 2, async move {
            l.lock().await.map(|g| g.fencing_token())
        })
        .await
    };
    let w2 = {
        let l = b.fair_lock("f70");
        spawn_in_line(&server, "f70", 3, async move {
            l.lock().await.map(|g| g.fencing_token())
        })
        .await
    };
    let line = fair_line(&server, "f70");
    let tickets: Vec<i64> = line.iter().map(|f| ticket(&server, f)).collect();
    let gone = server
        .cmd(&[
            "ZREM",
            LINE,
            &line[1],
            &format!("alive:{}", line[1]),
            &format!("lease:{}", line[1]),
        ])
        .unwrap()
        .as_int();
    assert_eq!(
        gone,
        Some(3),
        "the middle waiter's ticket, deadline and first lease"
    );
    assert_eq!(fair_line(&server, "f70").len(), 2);
    wait_until(
        Duration::from_secs(2),
        "the vanished waiter to rejoin at its place",
        || async { fair_line(&server, "f70").len() == 3 },
    )
    .await
    .unwrap();
    let after = fair_line(&server, "f70");
    assert_eq!((&after[0], &after[2]), (&line[0], &line[2]));
    assert_ne!(after[1], line[1], "rejoined under a new field");
    let after_tickets: Vec<i64> = after.iter().map(|f| ticket(&server, f)).collect();
    assert_eq!(after_tickets, tickets);

    child.kill().unwrap();
    child.wait().unwrap();
    got.unlock().await.unwrap();
    let t1 = bounded(Duration::from_secs(4), "waiter 1", w1)
        .await
        .unwrap()
        .unwrap();
    let t2 = bounded(Duration::from_secs(4), "waiter 2", w2)
        .await
        .unwrap()
        .unwrap();
    assert!(t1 < t2, "served in line order");
    assert_nothing_left(&server).await;
}

/// A waiter's ticket in the f70 line.
fn ticket(server: &RedisServer, field: &str) -> i64 {
    let v = server.cmd(&["ZSCORE", LINE, field]).unwrap();
    v.as_string()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no ticket for {field}: {v:?}"))
}

/// The fields of the f70 lock hash (its holder).
fn lock_fields(server: &RedisServer) -> Vec<String> {
    match server.cmd(&["HKEYS", "f70"]).unwrap() {
        relock_testkit::Value::Array(Some(items)) => {
            items.iter().filter_map(|v| v.as_string()).collect()
        }
        _ => Vec::new(),
    }
}

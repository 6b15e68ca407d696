//! While the first waiter (a stopped process) has the right to the free lock, `try_lock` from
//! anyone else gets `None` and does not join the line; after the stopped waiter's heartbeat
//! deadline it is evicted and `try_lock` succeeds. A live waiter whose entry vanishes (as after
//! a stall past its deadline) rejoins at its old place.

use std::process::Command;
use std::time::Duration;

use relock_tests::*;

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
    holder.unlock().await.unwrap();

    // The lock is free but the stopped process is first: try_lock neither jumps nor joins.
    let stopped = fair_line(&server, "f70");
    assert!(b.fair_lock("f70").try_lock().await.unwrap().is_none());
    assert!(!a.fair_lock("f70").is_locked().await.unwrap());
    assert_eq!(fair_line(&server, "f70"), stopped);

    // After its heartbeat deadline, it no longer blocks anyone.
    let got = bounded(
        Duration::from_secs(3),
        "the stopped waiter's eviction",
        b.fair_lock("f70").try_lock_for(Duration::from_secs(2)),
    )
    .await
    .unwrap()
    .expect("acquired after the eviction");
    assert!(fair_line(&server, "f70").is_empty());

    // Resumed, the process finds itself evicted and rejoins the line.
    signal("-CONT");
    wait_until(
        Duration::from_secs(3),
        "the resumed process to rejoin",
        || async { fair_line(&server, "f70") == stopped },
    )
    .await
    .unwrap();

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
    server
        .cmd(&["ZREM", "relock_fair_queue:{f70}", &line[1]])
        .unwrap();
    server
        .cmd(&["ZREM", "relock_fair_alive:{f70}", &line[1]])
        .unwrap();
    assert_eq!(fair_line(&server, "f70").len(), 2);
    wait_until(
        Duration::from_secs(2),
        "the vanished waiter to rejoin at its place",
        || async { fair_line(&server, "f70") == line },
    )
    .await
    .unwrap();

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

//! A waiter process handed the lock and killed before taking it leaves a token record in
//! `relock_fair_handoff:{name}`. Only that field's own release or next acquire used to delete
//! it, and a dead process sends neither, while every acquire and heartbeat of the others kept
//! the hash alive: on a lock whose line is never idle, one record piled up per crashed waiter
//! (review of the handoff). The next handoff now drops the last one's record (the lock being
//! free, that hold has ended), so the hash never holds more than one.

use std::time::{Duration, Instant};

use relock_tests::*;

const HANDOFF: &str = "relock_fair_handoff:{f95}";

/// The records in the handoff hash: fields whose value is a token (>= 10^15), not a first
/// lease.
fn records(server: &RedisServer) -> Vec<String> {
    let items: Vec<String> = match server.cmd(&["HGETALL", HANDOFF]).unwrap() {
        relock_testkit::Value::Array(Some(a)) => a.iter().filter_map(|v| v.as_string()).collect(),
        _ => Vec::new(),
    };
    items
        .chunks(2)
        .filter(|kv| kv[1].parse::<f64>().is_ok_and(|v| v >= 1e15))
        .map(|kv| kv[0].clone())
        .collect()
}

#[tokio::test]
async fn a_dead_waiters_handoff_record_does_not_outlive_the_next_handoff() {
    let server = server();
    let heartbeat = Duration::from_secs(2);
    let (a, b, c) = (
        fair_client(&server, heartbeat).await,
        fair_client(&server, heartbeat).await,
        fair_client(&server, heartbeat).await,
    );
    let holder = a.fair_lock("f95").lock().await.unwrap();
    let mut child = spawn_waiter_process(
        env!("CARGO_BIN_EXE_relock-test-holder"),
        &server,
        "f95",
        2000,
        1,
    )
    .await;
    let dead = fair_line(&server, "f95")[0].clone();
    // b waits behind the waiter process, which is then killed.
    let behind = {
        let b = b.clone();
        tokio::spawn(async move { b.fair_lock("f95").lock().await })
    };
    wait_until(Duration::from_secs(3), "b in line", || async {
        fair_line(&server, "f95").len() == 2
    })
    .await
    .unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    holder.unlock().await.unwrap();
    assert_eq!(
        records(&server),
        vec![dead.clone()],
        "handed to the dead waiter"
    );

    // The dead grant runs out (at most its heartbeat deadline); b is handed the lock next.
    let guard = bounded(Duration::from_secs(5), "b's lock", behind)
        .await
        .unwrap()
        .unwrap();
    let left = records(&server);
    assert!(
        !left.contains(&dead),
        "the dead waiter's record outlived the next handoff: {left:?}"
    );
    guard.unlock().await.unwrap();

    // A busy line: b and c take turns; never more than one record.
    let stop = Instant::now() + Duration::from_secs(2);
    let mut tasks = Vec::new();
    for cl in [b.clone(), c.clone()] {
        tasks.push(tokio::spawn(async move {
            let mut turns = 0;
            while Instant::now() < stop {
                let g = cl.fair_lock("f95").lock().await.unwrap();
                tokio::time::sleep(Duration::from_millis(20)).await;
                g.unlock().await.unwrap();
                turns += 1;
            }
            turns
        }));
    }
    let mut most = 0;
    while Instant::now() < stop {
        most = most.max(records(&server).len());
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut turns = 0;
    for t in tasks {
        turns += bounded(Duration::from_secs(5), "turns", t).await.unwrap();
    }
    assert!(turns > 20, "only {turns} turns");
    assert!(most <= 1, "{most} records at once");
    a.shutdown().await;
    b.shutdown().await;
    c.shutdown().await;
    assert_nothing_left(&server).await;
}

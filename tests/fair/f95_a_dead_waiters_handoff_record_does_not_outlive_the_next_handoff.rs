//! A waiter process handed the lock and killed before taking it leaves a grant record
//! (`relock_fair_grant:{name}`, its field and token), and a dead process never releases. The
//! next handoff writes its own record in its place (the lock being free, the dead one's hold
//! has ended), so a line that is never idle never keeps a crashed waiter's record, and there is
//! never more than one.

use std::time::{Duration, Instant};

use relock_tests::*;

/// The fields the grant record names (none or one).
fn records(server: &RedisServer) -> Vec<String> {
    fair_grant(server, "f95")
        .map(|(f, _)| f)
        .into_iter()
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

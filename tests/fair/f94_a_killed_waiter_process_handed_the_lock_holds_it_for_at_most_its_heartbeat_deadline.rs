//! The first waiter is a process that is SIGKILLed while it waits; the release right after
//! hands it the lock (its heartbeat deadline has not passed, so the server cannot know it is
//! dead). That grant's lease is cut at its deadline: the next waiter gets the lock within the
//! heartbeat deadline (2 s) + 1 s of the kill, with a larger token.

use std::time::{Duration, Instant};

use relock_tests::*;

#[tokio::test]
async fn a_killed_waiter_process_handed_the_lock_holds_it_for_at_most_its_heartbeat_deadline() {
    let server = server();
    let heartbeat = Duration::from_secs(2);
    let (a, b) = (
        fair_client(&server, heartbeat).await,
        fair_client(&server, heartbeat).await,
    );
    let holder = a.fair_lock("f94").lock().await.unwrap();
    let mut child = spawn_waiter_process(
        env!("CARGO_BIN_EXE_relock-test-holder"),
        &server,
        "f94",
        2000,
        1,
    )
    .await;
    let dead = fair_line(&server, "f94")[0].clone();
    let lock = b.fair_lock("f94");
    let next = spawn_in_line(&server, "f94", 2, async move {
        let g = lock.lock().await.unwrap();
        (Instant::now(), g)
    })
    .await;

    child.kill().unwrap();
    child.wait().unwrap();
    let killed = Instant::now();
    holder.unlock().await.unwrap();
    // Handed to the dead process: its own hold, with its token recorded.
    let fields = match server.cmd(&["HKEYS", "f94"]).unwrap() {
        relock_testkit::Value::Array(Some(items)) => items
            .iter()
            .filter_map(|v| v.as_string())
            .collect::<Vec<_>>(),
        _ => Vec::new(),
    };
    assert_eq!(fields, vec![dead.clone()]);
    let (recorded, dead_token) = fair_grant(&server, "f94").expect("the grant record");
    assert_eq!(recorded, dead);
    let dead_token: u64 = dead_token.parse().unwrap();
    let pttl = server.cmd(&["PTTL", "f94"]).unwrap().as_int().unwrap();
    assert!(
        pttl > 0 && pttl <= 2000,
        "the first lease is cut at the deadline: {pttl}"
    );

    let (at, g) = bounded(Duration::from_secs(6), "the next waiter", next)
        .await
        .unwrap();
    let held_up = at - killed;
    assert!(
        held_up <= heartbeat + Duration::from_secs(1),
        "the dead waiter held the lock for {held_up:?}"
    );
    println!("a dead waiter handed the lock held it up for {held_up:?} (heartbeat deadline {heartbeat:?})");
    assert!(g.fencing_token() > dead_token);
    g.unlock().await.unwrap();
    a.shutdown().await;
    b.shutdown().await;
    assert_nothing_left(&server).await;
}

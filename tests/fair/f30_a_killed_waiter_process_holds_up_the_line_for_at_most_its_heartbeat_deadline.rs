//! The line is [waiter 0, a waiter process, waiter 2]. The process is SIGKILLed and the lock
//! is released at once: waiter 0 gets it, then the dead waiter is first in line while the lock
//! is free. Waiter 2 still gets the lock within the heartbeat deadline (2 s) + 1 s of the kill.

use std::time::{Duration, Instant};

use relock_tests::*;

#[tokio::test]
async fn a_killed_waiter_process_holds_up_the_line_for_at_most_its_heartbeat_deadline() {
    let server = server();
    let heartbeat = Duration::from_secs(2);
    let (a, b) = (
        fair_client(&server, heartbeat).await,
        fair_client(&server, heartbeat).await,
    );
    let holder = a.fair_lock("f30").lock().await.unwrap();

    let lock0 = b.fair_lock("f30");
    let w0 = spawn_in_line(&server, "f30", 1, async move {
        let g = lock0.lock().await.unwrap();
        g.unlock().await.unwrap();
        Instant::now()
    })
    .await;
    let mut child = spawn_waiter_process(
        env!("CARGO_BIN_EXE_relock-test-holder"),
        &server,
        "f30",
        2000,
        2,
    )
    .await;
    let dead = fair_line(&server, "f30")[1].clone();
    let lock2 = a.fair_lock("f30");
    let w2 = spawn_in_line(&server, "f30", 3, async move {
        let g = lock2.lock().await.unwrap();
        let at = Instant::now();
        g.unlock().await.unwrap();
        at
    })
    .await;

    child.kill().unwrap();
    child.wait().unwrap();
    let killed = Instant::now();
    holder.unlock().await.unwrap();

    let t0 = bounded(Duration::from_secs(2), "waiter 0", w0)
        .await
        .unwrap();
    let t2 = bounded(Duration::from_secs(6), "waiter 2", w2)
        .await
        .unwrap();
    assert!(t0 < t2, "waiter 0 is served before waiter 2");
    let held_up = t2 - killed;
    assert!(
        held_up <= heartbeat + Duration::from_secs(1),
        "the dead waiter held up the line for {held_up:?}"
    );
    println!("dead waiter held up the line for {held_up:?} (heartbeat deadline {heartbeat:?})");
    assert!(!fair_line(&server, "f30").contains(&dead));
    assert_nothing_left(&server).await;
}

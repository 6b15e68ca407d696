//! A `lock()` waiting for a holder, when every node's command connections drop at once (a
//! network blip, an LB or NAT reset): node connections do not reconnect by themselves, so each
//! node's set is replaced (and checked) while the waiter waits. It must keep waiting, not fail
//! with `QuorumNotReached`, and get the lock once the holder releases. (Found by review: the
//! first version of the replacement made the waiter give up.) The 3 s after the blip are an
//! observation window, not a wait for a condition.

use std::time::{Duration, Instant};

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_lock_survives_a_blip_of_every_nodes_connections() {
    let m = masters(3);
    let a = quorum_client(&m, Duration::from_secs(30), Duration::ZERO).await;
    let b = quorum_client(&m, Duration::from_secs(30), Duration::ZERO).await;
    let held = a.lock("blip").try_lock().await.unwrap().expect("A gets it");
    let waiter = {
        let b = b.clone();
        tokio::spawn(async move { b.lock("blip").lock().await.map(|g| (Instant::now(), g)) })
    };
    let channel = "redisson_lock__channel:{blip}";
    wait_until(
        Duration::from_secs(3),
        "B subscribed on every node",
        || async {
            m.servers()
                .iter()
                .all(|s| s.pubsub_numsub(channel).unwrap() >= 1)
        },
    )
    .await
    .unwrap();
    let t0 = Instant::now();
    for s in m.servers() {
        s.client_kill_type("normal").unwrap();
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    if waiter.is_finished() {
        let r = waiter.await.unwrap();
        panic!(
            "B's waiting lock() ended during the blip: {:?}",
            r.map(|(at, _)| at - t0)
        );
    }
    held.unlock().await.unwrap();
    let (_, g) = bounded(Duration::from_secs(10), "B's lock()", waiter)
        .await
        .unwrap()
        .unwrap();
    g.unlock().await.unwrap();
    a.shutdown().await;
    b.shutdown().await;
}

//! A node that restarts empty between two of a client's uptime checks (so that no check and no
//! call of that client saw it down) must not vote before its quarantine: its connection comes
//! back by itself, and the first vote on it would otherwise count. A holds the lock on nodes 1
//! and 2 only; node 1 restarts empty; B, which has not talked to node 1 meanwhile, tries at
//! once and again and again: it must never get {1, 3} while A holds the lock. Node
//! connections no longer reconnect by themselves: a lost one is replaced, and the new set is
//! checked (run id, uptime) before the node votes.

use std::time::Duration;

use relock_tests::*;

#[tokio::test]
async fn a_node_restarted_between_uptime_checks_never_votes_before_its_quarantine() {
    let m = masters(3);
    let a = quorum_client(&m, Duration::from_secs(30), Duration::ZERO).await;
    let b = quorum_client(&m, Duration::from_secs(30), Duration::from_secs(10)).await;
    // B's start-up quarantine (fresh servers) must end first: wait until it can lock at all.
    eventually(
        Duration::from_secs(15),
        "B's start-up quarantine to end",
        || {
            let l = b.lock("q89:probe");
            async move { l.try_lock().await.ok().flatten().map(drop) }
        },
    )
    .await;
    let held = a
        .lock("q89")
        .with_lease(Duration::from_secs(20))
        .try_lock()
        .await
        .unwrap()
        .expect("A gets it");
    // As if A's request to node 3 had never arrived: A holds {1, 2}.
    m[2].cmd(&["DEL", "q89"]).unwrap();
    for round in 0..10u64 {
        m[0].restart_empty().unwrap();
        // Not a wait for a condition but the fault's timing: B's first try comes at a point
        // that moves across its 250 ms uptime-check period from round to round, so that some
        // rounds fall after a connection that reconnects by itself would be back and before
        // the check that would see the new run id. (Before the fix, round 0 already got it.)
        tokio::time::sleep(Duration::from_millis(20 + round * 25)).await;
        let started = std::time::Instant::now();
        while started.elapsed() < Duration::from_millis(300) {
            if let Ok(Some(g)) = b
                .lock("q89")
                .with_lease(Duration::from_secs(5))
                .try_lock()
                .await
            {
                panic!(
                    "round {round}: B got the lock on a node that restarted empty while A holds it (A lost: {}, B token {})",
                    held.is_lost(),
                    g.fencing_token()
                );
            }
        }
        // A's hold on node 1 is gone with the restart: put it back for the next round.
        m[0].cmd(&["HSET", "q89", held.owner(), "1"]).unwrap();
        m[0].cmd(&["PEXPIRE", "q89", "20000"]).unwrap();
    }
    drop(held);
    a.shutdown().await;
    b.shutdown().await;
}

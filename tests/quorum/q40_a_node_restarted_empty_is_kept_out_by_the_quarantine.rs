//! A holds the lock on nodes 1–3 (its requests to 4 and 5 were lost). Node 1 restarts empty and
//! nodes 2 and 3 become unreachable. While A's lease lasts, B (quarantine on) cannot acquire
//! on {1, 4, 5}: node 1 is in quarantine, and the error says so and how to change it. C, with
//! the quarantine off, acquires on {1, 4, 5}: the double grant the quarantine exists to stop.

use std::time::Duration;

use relock::{Error, Vote};
use relock_tests::*;

#[tokio::test]
async fn a_node_restarted_empty_is_kept_out_by_the_quarantine() {
    let m = masters(5);
    // A does not watch its hold (`watch_holds(false)`): with the watch, its first check finds
    // the hold gone from a majority (nodes 1, 4 and 5) and reports it lost at once. The danger
    // shown here is the window before a holder notices, which without the watch lasts until
    // its next renewal (and with it, whenever no check runs: nothing announces these losses).
    let a = relock::QuorumClient::builder()
        .urls(m.urls())
        .node_timeout(Duration::from_millis(50))
        .watchdog_lease(Duration::from_secs(30))
        .restart_quarantine(Duration::ZERO)
        .connect_timeout(Duration::from_secs(2))
        .watch_holds(false)
        .build()
        .await
        .expect("connect to the masters");
    let b = quorum_client(&m, Duration::from_secs(30), Duration::from_secs(3)).await;
    let c = quorum_client(&m, Duration::from_secs(30), Duration::ZERO).await;

    // Fresh servers are in B's quarantine too, until they have been up for 3 s.
    wait_until(Duration::from_secs(8), "every node up for 4 s", || async {
        m.servers().iter().all(|s| {
            s.cmd(&["INFO", "server"])
                .ok()
                .and_then(|v| v.as_string())
                .and_then(|i| {
                    i.lines()
                        .find_map(|l| l.strip_prefix("uptime_in_seconds:"))
                        .and_then(|v| v.trim().parse::<u64>().ok())
                })
                .is_some_and(|up| up >= 4)
        })
    })
    .await
    .unwrap();
    eventually(
        Duration::from_secs(6),
        "B's start-up quarantine to end",
        || {
            let l = b.lock("q40:probe");
            async move { l.try_lock().await.ok().flatten().map(drop) }
        },
    )
    .await;
    let held = a
        .lock("q40")
        .with_lease(Duration::from_secs(12))
        .try_lock()
        .await
        .unwrap()
        .expect("A gets it");
    for i in [3, 4] {
        // As if A's requests to nodes 4 and 5 had never arrived.
        m[i].cmd(&["DEL", "q40"]).unwrap();
    }
    m[0].restart_empty().unwrap();
    m[1].pause().unwrap();
    m[2].pause().unwrap();

    // B: node 1 is known to have restarted (run id and uptime) and may not vote.
    let (granted, votes, hint) = eventually(
        Duration::from_secs(5),
        "B to see node 1 in quarantine",
        || {
            let l = b.lock("q40");
            async move {
                match l.try_lock().await {
                    Err(Error::QuorumNotReached {
                        granted,
                        votes,
                        hint,
                        ..
                    }) if matches!(votes[0].vote, Vote::Quarantined { .. }) => {
                        Some((granted, votes, hint))
                    }
                    // Before B sees the restart, node 1 must not vote for it either.
                    Ok(Some(_)) => panic!("B got the lock while A holds it"),
                    _ => None,
                }
            }
        },
    )
    .await;
    // Nodes 4 and 5 grant it, unless nodes 2 and 3 were already known to be unreachable, in
    // which case nothing is sent at all (a quorum is impossible).
    assert!(granted == 2 || granted == 0, "{votes:?}");
    for v in &votes[3..] {
        assert!(matches!(v.vote, Vote::Granted | Vote::NotAwaited), "{v}");
    }
    let hint = hint.expect("the error says the quarantine is what prevents the quorum");
    assert!(hint.contains("restart_quarantine"), "{hint}");
    assert!(!held.is_lost() && held.remaining() > Duration::from_secs(3));

    // C: no quarantine, so {1, 4, 5} grant it while A still holds it: two holders.
    let second = eventually(Duration::from_secs(5), "C to acquire on {1, 4, 5}", || {
        let l = c.lock("q40").with_lease(Duration::from_secs(5));
        async move { l.try_lock().await.ok().flatten() }
    })
    .await;
    assert!(
        !held.is_lost(),
        "A still believes it holds the lock: the documented danger"
    );
    assert!(
        second.fencing_token() > held.fencing_token(),
        "fencing tells them apart"
    );

    m[1].resume().unwrap();
    m[2].resume().unwrap();
    drop(second);
    drop(held);
    for q in [a, b, c] {
        q.shutdown().await;
    }
    let all: Vec<&RedisServer> = m.servers().iter().collect();
    assert_nothing_left_on(&all).await;
}

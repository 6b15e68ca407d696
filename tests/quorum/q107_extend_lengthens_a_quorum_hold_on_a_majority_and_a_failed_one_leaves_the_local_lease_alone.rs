//! `guard.extend(lease)` on a quorum hold lengthens its lease on every node that answers and,
//! once a majority has, on the local clock; with a majority down it fails with
//! `QuorumNotReached`, naming the nodes, and leaves the local lease as it was; a hold deleted on
//! a majority answers `LockLost` and is re-created nowhere.

use std::time::Duration;

use relock::{Error, Vote};
use relock_tests::*;

fn pttls(m: &RedisMasters, key: &str, nodes: std::ops::Range<usize>) -> Vec<i64> {
    nodes
        .map(|i| m[i].cmd(&["PTTL", key]).unwrap().as_int().unwrap())
        .collect()
}

#[tokio::test]
async fn extend_lengthens_a_quorum_hold_on_a_majority_and_a_failed_one_leaves_the_local_lease_alone(
) {
    let m = masters(5);
    let client = quorum_client(&m, Duration::from_secs(2), Duration::ZERO).await;
    let lock = client.lock("q107").with_lease(Duration::from_secs(3));
    let long = Duration::from_secs(20);

    let g = bounded(Duration::from_secs(2), "lock", lock.lock())
        .await
        .unwrap();
    wait_held_on_every_node(&m, "q107").await;
    bounded(Duration::from_secs(2), "extend", g.extend(long))
        .await
        .unwrap();
    assert!(
        pttls(&m, "q107", 0..5).iter().all(|p| *p > 19_000),
        "{:?}",
        pttls(&m, "q107", 0..5)
    );
    // Less the drift allowance, still well past the first lease.
    assert!(
        g.remaining() > Duration::from_secs(18),
        "{:?}",
        g.remaining()
    );
    g.unlock().await.unwrap();

    // A majority down: QuorumNotReached naming each node, the local lease unchanged.
    let g = bounded(Duration::from_secs(2), "lock", lock.lock())
        .await
        .unwrap();
    wait_held_on_every_node(&m, "q107").await;
    let before = g.valid_until();
    for i in 2..5 {
        m[i].pause().unwrap();
    }
    let r = bounded(Duration::from_secs(2), "extend", g.extend(long)).await;
    for i in 2..5 {
        m[i].resume().unwrap();
    }
    match r {
        Err(Error::QuorumNotReached {
            granted,
            needed,
            votes,
            ..
        }) => {
            assert_eq!((granted, needed), (2, 3));
            assert_eq!(votes.len(), 5);
            let granted: Vec<bool> = votes.iter().map(|v| v.vote == Vote::Granted).collect();
            assert_eq!(granted, [true, true, false, false, false], "{votes:?}");
        }
        other => panic!("expected QuorumNotReached, got {other:?}"),
    }
    assert_eq!(g.valid_until(), before);
    assert!(!g.is_lost());
    g.unlock().await.unwrap();

    // Deleted on a majority: LockLost, and no node has it afterwards.
    let g = bounded(Duration::from_secs(2), "lock", lock.lock())
        .await
        .unwrap();
    wait_held_on_every_node(&m, "q107").await;
    for i in 0..3 {
        m[i].cmd(&["DEL", "q107"]).unwrap();
    }
    match bounded(Duration::from_secs(2), "extend", g.extend(long)).await {
        Err(Error::LockLost { name }) => assert_eq!(name, "q107"),
        other => panic!("expected LockLost, got {other:?}"),
    }
    assert!(g.is_lost());
    drop(g);
    client.shutdown().await;
    for i in 0..5 {
        assert_eq!(m[i].cmd(&["EXISTS", "q107"]).unwrap().as_int(), Some(0));
    }
}

//! A watchdog hold (lease 600 ms) is re-entered in its scope with a fixed lease of 5 s: the
//! re-entry lengthens the lease on the nodes, and the watchdog's renewals (600 ms) never
//! shorten it. Once the watchdog guard is gone, the fixed-lease guard still has its 5 s.

use std::time::{Duration, Instant};

use relock_tests::*;

const LEASE: Duration = Duration::from_millis(600);

fn pttls(m: &RedisMasters, key: &str) -> Vec<i64> {
    m.servers()
        .iter()
        .map(|s| s.cmd(&["PTTL", key]).unwrap().as_int().unwrap())
        .collect()
}

/// The PTTL that a majority (3 of 5) of the nodes have at least.
fn majority_pttl(m: &RedisMasters, key: &str) -> i64 {
    let mut p = pttls(m, key);
    p.sort_unstable_by(|a, b| b.cmp(a));
    p[2]
}

#[tokio::test]
async fn a_quorum_renewal_never_shortens_a_longer_fixed_lease_reentry() {
    let m = masters(5);
    let client = quorum_client(&m, LEASE, Duration::ZERO).await;
    let other = quorum_client(&m, LEASE, Duration::ZERO).await;
    let name = "q85";
    let lock = client.lock(name);
    let g = bounded(Duration::from_secs(2), "lock", lock.lock())
        .await
        .unwrap();
    let fixed = bounded(
        Duration::from_secs(2),
        "re-entry with a fixed lease",
        g.scope(lock.clone().with_lease(Duration::from_secs(5)).lock()),
    )
    .await
    .unwrap();
    assert_eq!(fixed.fencing_token(), g.fencing_token(), "a re-entry");
    assert!(!fixed.is_renewed());
    // Three renewal rounds on a majority (the only script calls from here on).
    for s in m.servers() {
        s.reset_stats().unwrap();
    }
    let since = Instant::now();
    wait_until(
        Duration::from_secs(4),
        "three renewal rounds on a majority",
        || async {
            since.elapsed() > LEASE
                && m.servers()
                    .iter()
                    .filter(|s| s.command_calls("evalsha").unwrap() >= 3)
                    .count()
                    >= 3
        },
    )
    .await
    .unwrap();
    let p = majority_pttl(&m, name);
    assert!(
        p >= 4000,
        "{:?} after the re-entry, PTTLs are {:?}: a renewal shortened the 5 s lease",
        since.elapsed(),
        pttls(&m, name)
    );
    assert!(!g.is_lost() && !fixed.is_lost());

    // The watchdog guard goes; the fixed-lease guard keeps its lease.
    g.unlock().await.unwrap();
    let dropped = Instant::now();
    wait_until(Duration::from_secs(2), "two more periods", || async {
        dropped.elapsed() > LEASE * 2 / 3
    })
    .await
    .unwrap();
    let p = majority_pttl(&m, name);
    assert!(p > 3000, "PTTLs {:?}", pttls(&m, name));
    // One count left on a majority. (A node that missed the acquire or the re-entry, which a
    // quorum call does not wait for, may differ: see q86.)
    let one_count =
        relock_testkit::Value::Array(Some(vec![relock_testkit::Value::Bulk(Some(b"1".to_vec()))]));
    let one = m
        .servers()
        .iter()
        .filter(|s| s.cmd(&["HVALS", name]).unwrap() == one_count)
        .count();
    assert!(one >= 3, "one count left on {one} of 5 nodes");
    assert!(
        fixed.remaining() > Duration::from_secs(3),
        "{:?}",
        fixed.remaining()
    );
    assert!(!fixed.is_lost());
    assert!(other.lock(name).try_lock().await.unwrap().is_none());
    fixed.unlock().await.unwrap();
    client.shutdown().await;
    other.shutdown().await;
    let all: Vec<&RedisServer> = m.servers().iter().collect();
    assert_nothing_left_on(&all).await;
}

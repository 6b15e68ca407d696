//! `relock_quorum_votes_total{vote}` counts the answers each acquire attempt waited for, by
//! outcome, exactly: on 3 masters an attempt stops at the second grant (the third answer is
//! not counted), so a paused node costs no vote while two others grant; when the attempt
//! needs the paused node's answer, it counts one `timeout`; a node held by another owner
//! counts `held`, a node that answers with an error (a key of the wrong type) counts `error`.
//! Answers that arrive after their attempt ended (the paused node's, once resumed) are never
//! counted; no lock name appears in a label; nothing is left. A node restarted empty and
//! still in quarantine is not asked, and counts `quarantined`.
//!
//! The recorder is local to the test's thread: a current-thread runtime runs relock's tasks
//! (and the spawned vote calls) on it.

use std::collections::HashMap;
use std::time::Duration;

use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use metrics_util::MetricKind;
use relock::Error;
use relock_tests::*;

/// Counter values by name and sorted labels.
type Counters = HashMap<(String, Vec<(String, String)>), u64>;

/// The recorder's snapshots drain its counters; this keeps the totals, and hands out what was
/// counted since the previous step.
struct Tally {
    snapshotter: Snapshotter,
    totals: Counters,
}

impl Tally {
    /// Quorum votes (by the `vote` label) counted since the previous step.
    fn votes_since(&mut self) -> HashMap<String, u64> {
        let mut delta = HashMap::new();
        for (key, _, _, value) in self.snapshotter.snapshot().into_vec() {
            let (kind, key) = key.into_parts();
            let mut labels: Vec<(String, String)> = key
                .labels()
                .map(|l| (l.key().to_string(), l.value().to_string()))
                .collect();
            labels.sort();
            let name = key.name().to_string();
            assert!(
                labels.iter().all(|(_, v)| !v.contains("q87")),
                "a lock name in a label of {name}: {labels:?}"
            );
            let (MetricKind::Counter, DebugValue::Counter(n)) = (kind, value) else {
                continue;
            };
            if n == 0 {
                continue;
            }
            if name == "relock_quorum_votes_total" {
                let [(key, vote)] = labels.as_slice() else {
                    panic!("one label: {labels:?}")
                };
                assert_eq!(key, "vote");
                delta.insert(vote.clone(), n);
            }
            *self.totals.entry((name, labels)).or_default() += n;
        }
        delta
    }

    fn total(&self, name: &str, labels: &[(&str, &str)]) -> u64 {
        let mut labels: Vec<(String, String)> = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        labels.sort();
        self.totals
            .get(&(name.to_string(), labels))
            .copied()
            .unwrap_or(0)
    }
}

fn expect(pairs: &[(&str, u64)]) -> HashMap<String, u64> {
    pairs.iter().map(|(k, n)| (k.to_string(), *n)).collect()
}

#[tokio::test]
async fn quorum_votes_are_counted_by_outcome_as_each_attempt_awaits_them() {
    let recorder = DebuggingRecorder::new();
    let _local = metrics::set_default_local_recorder(&recorder);
    let mut tally = Tally {
        snapshotter: recorder.snapshotter(),
        totals: Counters::new(),
    };
    let m = masters(3);
    // Node timeout 50 ms, no restart quarantine.
    let a = quorum_client(&m, Duration::from_secs(30), Duration::ZERO).await;
    // Another owner, on node 1 only (a quorum of one), for a `held` vote.
    let b = relock::QuorumClient::builder()
        .urls([m[1].url()])
        .node_timeout(Duration::from_millis(50))
        .restart_quarantine(Duration::ZERO)
        .connect_timeout(Duration::from_secs(2))
        .build()
        .await
        .expect("connect to node 1");
    assert_eq!(tally.votes_since(), expect(&[]), "connecting votes nothing");

    // All up: each attempt stops at the second grant; the third answer is not counted.
    let lock = a.lock("q87").with_lease(Duration::from_secs(5));
    lock.try_lock()
        .await
        .unwrap()
        .unwrap()
        .unlock()
        .await
        .unwrap();
    assert_eq!(tally.votes_since(), expect(&[("granted", 2)]));

    // Node 2 stopped: two grants still make each quorum, so its silence is never awaited.
    m[2].pause().unwrap();
    for _ in 0..2 {
        lock.try_lock()
            .await
            .unwrap()
            .unwrap()
            .unlock()
            .await
            .unwrap();
    }
    assert_eq!(tally.votes_since(), expect(&[("granted", 4)]));

    // b holds `q87:held` on node 1 (its own grant); then a: node 0 grants, node 1 says held,
    // and the attempt waits for node 2 until the node timeout.
    let held_by_b = b.lock("q87:held").try_lock().await.unwrap().unwrap();
    assert_eq!(tally.votes_since(), expect(&[("granted", 1)]));
    let contended = a.lock("q87:held").with_lease(Duration::from_secs(5));
    assert!(contended.try_lock().await.unwrap().is_none());
    assert_eq!(
        tally.votes_since(),
        expect(&[("granted", 1), ("held", 1), ("timeout", 1)])
    );

    // A string at the name on node 0: its script fails (WRONGTYPE), node 1 grants, node 2
    // times out: no quorum.
    m[0].cmd(&["SET", "q87:wrong", "not a lock"]).unwrap();
    let e = a
        .lock("q87:wrong")
        .with_lease(Duration::from_secs(5))
        .try_lock()
        .await
        .unwrap_err();
    assert!(
        matches!(e, Error::QuorumNotReached { granted: 1, .. }),
        "{e:?}"
    );
    assert_eq!(
        tally.votes_since(),
        expect(&[("error", 1), ("granted", 1), ("timeout", 1)])
    );

    // Node 2 answers everything it was sent: too late to count.
    m[2].resume().unwrap();
    held_by_b.unlock().await.unwrap();
    m[0].cmd(&["DEL", "q87:wrong"]).unwrap();
    a.shutdown().await;
    b.shutdown().await;
    let all: Vec<&RedisServer> = m.servers().iter().collect();
    assert_nothing_left_on(&all).await;
    assert_eq!(tally.votes_since(), expect(&[]), "no late vote");

    let votes = |vote| tally.total("relock_quorum_votes_total", &[("vote", vote)]);
    assert_eq!(
        [
            votes("granted"),
            votes("held"),
            votes("timeout"),
            votes("error")
        ],
        [9, 1, 2, 1]
    );
    assert_eq!(votes("quarantined"), 0);

    let quorum = [("kind", "quorum")];
    assert_eq!(tally.total("relock_acquisitions_total", &quorum), 4);
    for (cause, n) in [("held", 1), ("no_quorum", 1)] {
        assert_eq!(
            tally.total(
                "relock_failed_attempts_total",
                &[("kind", "quorum"), ("cause", cause)]
            ),
            n,
            "{cause}"
        );
    }

    // Node 0 restarted empty: a client with a quarantine leaves it out and counts it
    // `quarantined`, without asking it; nodes 1 and 2 grant.
    // A 2 s quarantine: nodes 1 and 2 (up at least that long) vote, node 0 does not.
    let uptime = |s: &RedisServer| {
        let info = s.cmd(&["INFO", "server"]).unwrap().as_string().unwrap();
        info.lines()
            .find_map(|l| l.strip_prefix("uptime_in_seconds:"))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap()
    };
    wait_until(Duration::from_secs(5), "nodes up for 2 s", || async {
        uptime(&m[1]) >= 2 && uptime(&m[2]) >= 2
    })
    .await
    .unwrap();
    m[0].restart_empty().unwrap();
    let c = quorum_client(&m, Duration::from_secs(30), Duration::from_secs(2)).await;
    let lock = c
        .lock("q87:after-restart")
        .with_lease(Duration::from_secs(5));
    // Until the client has read every node's uptime, a node may count `unavailable`.
    wait_until(Duration::from_secs(10), "nodes 1 and 2 grant", || async {
        match lock.try_lock().await {
            Ok(Some(g)) => g.unlock().await.is_ok(),
            _ => false,
        }
    })
    .await
    .expect("the quorum of nodes 1 and 2 grants");
    let _ = tally.votes_since();
    lock.try_lock()
        .await
        .unwrap()
        .unwrap()
        .unlock()
        .await
        .unwrap();
    assert_eq!(
        tally.votes_since(),
        expect(&[("granted", 2), ("quarantined", 1)])
    );
    c.shutdown().await;
    assert_nothing_left_on(&all).await;
}

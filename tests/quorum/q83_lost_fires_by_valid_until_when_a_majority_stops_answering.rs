//! A watchdog hold whose majority stops answering (3 of 5 masters SIGSTOPped right after a
//! renewal) can no longer be renewed; `lost()` must resolve when its validity ends
//! (`valid_until`), not at the end of the next failed renewal round after that.

use std::time::{Duration, Instant};

use relock_tests::*;

/// Resumes the paused servers when dropped, also when an assertion fails.
struct Paused<'a>(Vec<&'a RedisServer>);

impl Drop for Paused<'_> {
    fn drop(&mut self) {
        for s in &self.0 {
            let _ = s.resume();
        }
    }
}

#[tokio::test]
async fn lost_fires_by_valid_until_when_a_majority_stops_answering() {
    let m = masters(5);
    // Lease 9 s, node timeout 50 ms. The paused nodes fail their uptime check (INFO) within
    // ~0.5 s and stop being asked, so every failed renewal round is quick and they come every
    // lease/12 from the last renewal: the round that first sees valid_until passed ends at
    // about last renewal + lease, i.e. lease/100 + 2 ms (~92 ms) after valid_until. A
    // `lost()` driven by rounds is that late; one driven by valid_until is not.
    let lease = Duration::from_secs(9);
    let client = quorum_client(&m, lease, Duration::ZERO).await;
    let g = bounded(Duration::from_secs(2), "lock", client.lock("q83").lock())
        .await
        .unwrap();
    // Right after a renewal, so no round is in flight when the majority stops.
    let before = g.valid_until();
    wait_until(Duration::from_secs(5), "a renewal", || async {
        g.valid_until() != before
    })
    .await
    .unwrap();
    let paused = Paused(vec![&m[0], &m[1], &m[2]]);
    for s in &paused.0 {
        s.pause().unwrap();
    }
    let valid_until = g.valid_until();
    assert!(!g.is_lost());
    bounded(Duration::from_secs(12), "lost()", g.lost()).await;
    let lost_at = Instant::now();
    assert_eq!(
        g.valid_until(),
        valid_until,
        "no renewal can succeed with 3 of 5 paused"
    );
    assert!(
        lost_at + Duration::from_millis(5) >= valid_until,
        "lost() resolved {:?} before valid_until, with no node saying the hold is gone",
        valid_until - lost_at
    );
    let late = lost_at.saturating_duration_since(valid_until);
    assert!(
        late <= Duration::from_millis(60),
        "lost() resolved {late:?} after valid_until"
    );
    assert!(g.is_lost());
    drop(g);
    drop(paused);
    client.shutdown().await;
    let all: Vec<&RedisServer> = m.servers().iter().collect();
    assert_nothing_left_on(&all).await;
}

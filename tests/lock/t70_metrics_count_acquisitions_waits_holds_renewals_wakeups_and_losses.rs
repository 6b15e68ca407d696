//! With the `metrics` feature (on by default), relock records through the `metrics` facade:
//! exact counts of acquisitions, refused attempts, renewals, wake-ups, wasted wake-ups and lost
//! holds, wait and hold times as histograms, and the subscription gauge, labelled by lock kind
//! and never by lock name.

use std::collections::HashMap;
use std::time::Duration;

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use metrics_util::MetricKind;
use relock_tests::*;

type Seen = HashMap<(MetricKind, String, Vec<(String, String)>), DebugValue>;

fn snapshot(recorder: &DebuggingRecorder) -> Seen {
    recorder
        .snapshotter()
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value)| {
            let (kind, key) = key.into_parts();
            let mut labels: Vec<(String, String)> = key
                .labels()
                .map(|l| (l.key().to_string(), l.value().to_string()))
                .collect();
            labels.sort();
            ((kind, key.name().to_string(), labels), value)
        })
        .collect()
}

fn counter(seen: &Seen, name: &str, labels: &[(&str, &str)]) -> u64 {
    let mut labels: Vec<(String, String)> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    labels.sort();
    match seen.get(&(MetricKind::Counter, name.to_string(), labels)) {
        Some(DebugValue::Counter(n)) => *n,
        None => 0,
        other => panic!("{name}: {other:?}"),
    }
}

fn histogram_len(seen: &Seen, name: &str, kind: &str) -> usize {
    let labels = vec![("kind".to_string(), kind.to_string())];
    match seen.get(&(MetricKind::Histogram, name.to_string(), labels)) {
        Some(DebugValue::Histogram(v)) => v.len(),
        None => 0,
        other => panic!("{name}: {other:?}"),
    }
}

#[tokio::test]
async fn metrics_count_acquisitions_waits_holds_renewals_wakeups_and_losses() {
    let recorder = DebuggingRecorder::new();
    let _local = metrics::set_default_local_recorder(&recorder);
    let server = server();
    let (a, b) = (
        client_with_lease(&server, Duration::from_millis(600)).await,
        client_with_lease(&server, Duration::from_millis(600)).await,
    );

    // 3 uncontended plain acquisitions and 1 fair one.
    for _ in 0..3 {
        a.lock("t70").lock().await.unwrap().unlock().await.unwrap();
    }
    lock_and_unlock(&a.fair_lock("t70:fair")).await;
    // A contended one: b is refused once, parks, is woken by a's release.
    let held = a.lock("t70").lock().await.unwrap();
    assert!(b.lock("t70").try_lock().await.unwrap().is_none());
    let g = assert_release_wakes(&b, b.lock("t70"), held).await;
    // Renewed at least twice (lease 600 ms, every 200 ms).
    let since = std::time::Instant::now();
    wait_until(Duration::from_secs(2), "two renewal periods", || async {
        since.elapsed() > Duration::from_millis(500)
    })
    .await
    .unwrap();
    // Lost: deleted behind its back.
    server.cmd(&["DEL", "t70"]).unwrap();
    bounded(Duration::from_secs(2), "lost", g.lost()).await;
    drop(g);
    a.shutdown().await;
    b.shutdown().await;

    let seen = snapshot(&recorder);
    let plain = [("kind", "plain")];
    assert_eq!(
        counter(&seen, "relock_acquisitions_total", &plain),
        5,
        "{seen:?}"
    );
    assert_eq!(
        counter(&seen, "relock_acquisitions_total", &[("kind", "fair")]),
        1
    );
    assert_eq!(histogram_len(&seen, "relock_wait_seconds", "plain"), 5);
    assert_eq!(histogram_len(&seen, "relock_hold_seconds", "plain"), 5);
    assert_eq!(histogram_len(&seen, "relock_hold_seconds", "fair"), 1);
    // b's try_lock and its first attempt in lock() were refused.
    assert!(
        counter(
            &seen,
            "relock_failed_attempts_total",
            &[("kind", "plain"), ("cause", "held")]
        ) >= 2
    );
    assert!(
        counter(&seen, "relock_renewals_total", &plain) >= 2,
        "{seen:?}"
    );
    assert_eq!(counter(&seen, "relock_locks_lost_total", &plain), 1);
    assert!(counter(&seen, "relock_wakeups_total", &[]) >= 1);
    assert_eq!(
        seen.get(&(
            MetricKind::Gauge,
            "relock_subscriptions".to_string(),
            vec![]
        )),
        Some(&DebugValue::Gauge(0.0.into())),
        "no subscription left"
    );
    // Never a lock name in a label.
    for (_, name, labels) in seen.keys() {
        assert!(name.starts_with("relock_"), "{name}");
        assert!(
            labels.iter().all(|(_, v)| !v.contains("t70")),
            "{name}: {labels:?}"
        );
    }
    assert_nothing_left(&server).await;
}

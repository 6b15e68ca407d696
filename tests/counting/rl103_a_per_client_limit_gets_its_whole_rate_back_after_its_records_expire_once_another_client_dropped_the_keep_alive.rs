//! A `PerClient` limiter whose keep-alive another client removes (its `set_rate` without one
//! starts only its own state afresh) gives this client its whole rate back once its records'
//! interval has ended: its value and records must expire together or not at all, or the
//! permits of the records that expired with their key never come back.

use std::time::Duration;

use relock::{RateConfig, RateType};
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_per_client_limit_gets_its_whole_rate_back_after_its_records_expire_once_another_client_dropped_the_keep_alive(
) {
    let server = server();
    let (a, b) = (client(&server).await, client(&server).await);
    let (la, lb) = (a.rate_limiter("rl103"), b.rate_limiter("rl103"));
    let interval = Duration::from_secs(1);
    la.set(RateConfig::new(RateType::PerClient, 5, interval).with_keep_alive(interval))
        .await
        .unwrap();
    // b's first grant: its value, records and rate key live for the keep-alive.
    assert!(lb.try_acquire(3).await.unwrap());
    // a sets the same rate without a keep-alive: b's keys are no longer refreshed by it.
    la.set_rate(RateType::PerClient, 5, interval).await.unwrap();
    assert!(lb.try_acquire(1).await.unwrap());
    let id = b.client_id();
    let (value, records) = (
        format!("{{rl103}}:value:{id}"),
        format!("{{rl103}}:permits:{id}"),
    );
    let pttl = |key: &str| server.cmd(&["PTTL", key]).unwrap().as_int().unwrap();
    let ttls = (pttl(&value), pttl(&records));
    // b stays idle: its records' interval ends, and its records key expires with them.
    wait_until(
        Duration::from_secs(5),
        "b's records key to expire",
        || async { pttl(&records) == -2 },
    )
    .await
    .unwrap();
    let available = lb.available_permits().await.unwrap();
    let mut granted = 0;
    for _ in 0..5 {
        granted += u64::from(lb.try_acquire(1).await.unwrap());
    }
    let left = crate::get(&server, &value);
    a.shutdown().await;
    b.shutdown().await;
    assert_eq!(
        (available, granted),
        (5, 5),
        "b, idle past its interval, found {available} of 5 available and was granted {granted} \
         of 5 (value and records key TTLs after its last grant: {ttls:?} ms; value now {left:?})"
    );
}

//! A `PerClient` acquire does not read every record of its window on each call (that costs
//! the server time in their number): only the expired ones, and all of them once after
//! another client changed the rate its value was written under.
//! (Counted with `INFO commandstats`, which counts the commands scripts run.)

use std::time::Duration;

use relock::RateType;
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_per_client_acquire_reads_all_its_records_only_after_its_rate_changed() {
    let server = server();
    let (a, b) = (client(&server).await, client(&server).await);
    let (la, lb) = (a.rate_limiter("rl102"), b.rate_limiter("rl102"));
    let minute = Duration::from_secs(60);
    la.set_rate(RateType::PerClient, 100, minute).await.unwrap();
    let mut granted = 0;
    for _ in 0..40 {
        granted += u64::from(lb.try_acquire(1).await.unwrap());
    }
    // An acquire reads the expired records with one ZRANGEBYSCORE, the live ones with a
    // second only when its value must be recomputed, and the oldest with ZRANGE when it
    // refuses.
    let reads =
        || server.command_calls("zrange").unwrap() + server.command_calls("zrangebyscore").unwrap();
    let before = reads();
    for _ in 0..10 {
        granted += u64::from(lb.try_acquire(1).await.unwrap());
    }
    let steady = reads() - before;
    // a lowers the rate: b's next acquire recomputes its value from its 50 records, once.
    la.set_rate(RateType::PerClient, 55, minute).await.unwrap();
    let before = reads();
    let mut after_change = 0;
    for _ in 0..10 {
        after_change += u64::from(lb.try_acquire(1).await.unwrap());
    }
    let changed = reads() - before;
    a.shutdown().await;
    b.shutdown().await;
    assert_eq!(granted, 50);
    assert_eq!(
        after_change, 5,
        "50 permits in the window, the rate lowered to 55: 5 more of 10 asked"
    );
    assert_eq!(
        (steady, changed),
        (10, 10 + 1 + 5),
        "record reads for 10 acquires at an unchanged rate (the expired ones, once each), then \
         for 10 after the rate changed (the expired ones, once each; one recompute; and each \
         of the 5 refusals reads the oldest record)"
    );
}

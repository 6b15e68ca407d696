//! With a watchdog lease (1 s) shorter than the fair heartbeat that a handoff's first lease
//! comes from (5 s): a standby handed the leadership is brought to its own lease at once, so
//! that when it crashes (its connections go silent) the next standby leads within that lease
//! plus one renewal period, as after a fresh grant, not when the 5 s first lease ends.

use std::time::{Duration, Instant};

use relock_testkit::Mode;
use relock_tests::*;

#[tokio::test]
async fn a_leader_that_crashes_after_a_handoff_is_replaced_within_its_own_lease() {
    let server = server();
    let lease = Duration::from_secs(1);
    let proxy = relock_testkit::FaultProxy::start(&server.addr()).unwrap();
    let a = client_with_lease(&server, lease).await;
    let b = relock::Client::builder()
        .url(proxy.url())
        .watchdog_lease(lease)
        .command_timeout(Duration::from_millis(300))
        .connect_timeout(Duration::from_secs(2))
        .build()
        .await
        .unwrap();
    let c = client_with_lease(&server, lease).await;
    let name = "e8";
    let la = a.election(name).campaign("a").await.unwrap();
    let campaign = |client: &relock::Client, value: &'static str| {
        let e = client.election(name);
        tokio::spawn(async move { e.campaign(value).await })
    };
    let sb = campaign(&b, "b");
    wait_until(Duration::from_secs(2), "b in line", || async {
        fair_line(&server, name).len() == 1
    })
    .await
    .unwrap();
    let sc = campaign(&c, "c");
    wait_until(Duration::from_secs(2), "c in line behind b", || async {
        fair_line(&server, name).len() == 2
    })
    .await
    .unwrap();

    // a resigns: b leads by handoff, with the heartbeat's first lease...
    la.resign().await.unwrap();
    let lb = bounded(Duration::from_secs(3), "b to lead", sb)
        .await
        .unwrap()
        .unwrap();
    // ...brought to b's own lease at once (before: it counted down from about 5 s).
    wait_until(
        Duration::from_secs(1),
        "b's lock at its own lease",
        || async {
            let pttl = server.cmd(&["PTTL", name]).unwrap().as_int().unwrap();
            pttl > 0 && pttl <= 1000
        },
    )
    .await
    .unwrap();

    // b crashes.
    let crashed = Instant::now();
    proxy.set_both(Mode::Blackhole);
    let lc = bounded(Duration::from_secs(6), "c to take over", sc)
        .await
        .unwrap()
        .unwrap();
    let took = crashed.elapsed();
    assert!(
        took < lease + lease / 3 + Duration::from_millis(500),
        "c led {took:?} after b crashed (b's lease: {lease:?})"
    );
    assert!(lc.term() > lb.term());
    // b's own side knows by its (local, never later) lease end.
    bounded(Duration::from_secs(2), "b's loss", lb.lost()).await;
    lc.resign().await.unwrap();
    drop(lb);
    proxy.set_both(Mode::Pass);
    a.shutdown().await;
    b.shutdown().await;
    c.shutdown().await;
}

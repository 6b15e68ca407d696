//! A client connected through Sentinel locks on the master; after `SENTINEL FAILOVER` it
//! follows the new master: locks taken after the failover are on the new master, waiters are
//! woken by releases there, and fencing tokens keep rising.

use std::time::Duration;

use relock_testkit::RedisSentinel;
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_follows_a_sentinel_failover() {
    let set = RedisSentinel::start().unwrap();
    let connect = || async {
        relock::Client::builder()
            .url(set.url())
            .command_timeout(Duration::from_secs(1))
            .build()
            .await
            .unwrap()
    };
    let (a, b) = (connect().await, connect().await);
    let before = a.lock("s10").lock().await.unwrap();
    let t0 = before.fencing_token();
    assert_eq!(
        set.master()
            .unwrap()
            .cmd(&["EXISTS", "s10"])
            .unwrap()
            .as_int(),
        Some(1)
    );
    before.unlock().await.unwrap();

    let new_master = tokio::task::block_in_place(|| set.failover()).unwrap();
    let g = eventually(Duration::from_secs(10), "a lock after the failover", || {
        let l = a.lock("s10");
        async move { l.try_lock().await.ok().flatten() }
    })
    .await;
    assert_eq!(
        new_master.cmd(&["EXISTS", "s10"]).unwrap().as_int(),
        Some(1),
        "on the new master"
    );
    assert!(g.fencing_token() > t0);

    let g2 = assert_release_wakes(&b, b.lock("s10"), g).await;
    g2.unlock().await.unwrap();
    a.shutdown().await;
    b.shutdown().await;
    // The sentinels keep their own `__sentinel__:hello` channel; ours must be gone.
    wait_until(
        Duration::from_secs(5),
        "no keys and no lock channels left",
        || async {
            new_master.dbsize().unwrap() == 0
                && new_master
                    .pubsub_channels()
                    .unwrap()
                    .iter()
                    .all(|c| c.starts_with("__sentinel__"))
        },
    )
    .await
    .unwrap();
}

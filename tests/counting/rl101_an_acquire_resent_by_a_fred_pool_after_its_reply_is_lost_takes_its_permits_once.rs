//! An acquire whose reply is lost to a connection reset, and which a fred pool
//! (`build_with_pool`, fred's default resending) sends again, takes its permits once: the copy
//! finds its own record (same random id) and takes nothing more, so the rest of the rate is
//! still granted in the window.

use std::time::Duration;

use fred::interfaces::ClientLike;
use relock::fred;
use relock::RateType;
use relock_testkit::{Direction, FaultProxy};
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_resent_by_a_fred_pool_after_its_reply_is_lost_takes_its_permits_once() {
    let server = server();
    let proxy = FaultProxy::start(&server.addr()).unwrap();
    let (pool, from_pool) = crate::resending_pool_client(&proxy).await;
    let other = client(&server).await;
    let minute = Duration::from_secs(60);
    let limiter = other.rate_limiter("rl101");
    limiter
        .set_rate(RateType::Overall, 3, minute)
        .await
        .unwrap();
    // Load the acquire script on the pool's connection.
    let warm = from_pool.rate_limiter("rl101-warm");
    warm.set_rate(RateType::Overall, 1, minute).await.unwrap();
    assert!(warm.try_acquire(1).await.unwrap());
    let calls = server.command_calls("evalsha").unwrap();

    let frozen = proxy.freeze_existing(Direction::Down);
    let acquiring = {
        let l = from_pool.rate_limiter("rl101");
        tokio::spawn(async move { l.try_acquire(1).await })
    };
    wait_until(Duration::from_secs(3), "the acquire to run", || async {
        crate::get(&server, "{rl101}:value").as_deref() == Some("2")
    })
    .await
    .unwrap();
    for id in frozen {
        proxy.reset_conn(id);
    }
    let r = bounded(Duration::from_secs(10), "try_acquire", acquiring)
        .await
        .unwrap();
    // The pool's copy lands on a new connection.
    let resent = wait_until(Duration::from_secs(5), "the copy to land", || async {
        server.command_calls("evalsha").unwrap() >= calls + 2
    })
    .await;
    let mut granted = 0;
    for _ in 0..3 {
        granted += u64::from(limiter.try_acquire(1).await.unwrap());
    }
    from_pool.shutdown().await;
    other.shutdown().await;
    let _ = pool.quit().await;
    assert!(resent.is_ok(), "the pool never sent the acquire again");
    assert!(matches!(r, Ok(true)), "try_acquire(1) returned {r:?}");
    assert_eq!(
        granted, 2,
        "one try_acquire(1), sent twice, left {granted} of the rate of 3 to grant in the window"
    );
}

//! A rate limiter's `release` carries a request id: one `release(1)` whose reply is lost to a
//! connection reset, and which a fred pool (`build_with_pool`, fred's default resending)
//! sends again, gives back one permit, so no more than the rate is granted in the window.

use std::time::Duration;

use fred::interfaces::ClientLike;
use relock::fred;
use relock::RateType;
use relock_testkit::{Direction, FaultProxy};
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_release_on_a_resending_fred_pool_never_gives_back_twice() {
    let server = server();
    let proxy = FaultProxy::start(&server.addr()).unwrap();
    let (pool, from_pool) = crate::resending_pool_client(&proxy).await;
    let other = client(&server).await;
    let minute = Duration::from_secs(60);
    let limiter = other.rate_limiter("rl94");
    limiter
        .set_rate(RateType::Overall, 4, minute)
        .await
        .unwrap();
    assert!(limiter.try_acquire(4).await.unwrap());
    // Load the release script on the pool's connection.
    let warm = from_pool.rate_limiter("rl94-warm");
    warm.set_rate(RateType::Overall, 1, minute).await.unwrap();
    warm.release(1).await.unwrap();

    let calls = server.command_calls("evalsha").unwrap();
    let frozen = proxy.freeze_existing(Direction::Down);
    let releasing = {
        let l = from_pool.rate_limiter("rl94");
        tokio::spawn(async move { l.release(1).await })
    };
    wait_until(Duration::from_secs(3), "the release to run", || async {
        crate::get(&server, "{rl94}:value").as_deref() == Some("1")
    })
    .await
    .unwrap();
    for id in frozen {
        proxy.reset_conn(id);
    }
    let r = bounded(Duration::from_secs(10), "release", releasing)
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
    assert!(resent.is_ok(), "the pool never sent the release again");
    assert!(r.is_ok(), "release(1) returned {r:?}");
    assert_eq!(
        granted, 1,
        "one release(1) (it returned {r:?}) let {granted} more permits be granted in the window \
         of a full rate of 4"
    );
}

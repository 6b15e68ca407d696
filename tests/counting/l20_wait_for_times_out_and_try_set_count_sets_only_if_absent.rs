//! `try_set_count` sets only when the latch has no count; `wait_for` on a closed latch gives
//! up after about its timeout with `Ok(false)` and leaves no subscription; on an open one it
//! returns `Ok(true)` at once; a latch can be set again once open.

use std::time::{Duration, Instant};

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_times_out_and_try_set_count_sets_only_if_absent() {
    let server = server();
    let (a, b) = (client(&server).await, client(&server).await);
    let latch = a.count_down_latch("l20");
    assert_eq!(latch.count().await.unwrap(), 0);
    assert!(
        latch.wait_for(Duration::ZERO).await.unwrap(),
        "a missing latch is open"
    );

    assert!(latch.try_set_count(2).await.unwrap());
    assert!(!b.count_down_latch("l20").try_set_count(5).await.unwrap());
    assert_eq!(latch.count().await.unwrap(), 2);

    let other = b.count_down_latch("l20");
    assert!(!other.wait_for(Duration::ZERO).await.unwrap());
    for wait in [Duration::from_millis(100), Duration::from_millis(400)] {
        let t = Instant::now();
        assert!(!other.wait_for(wait).await.unwrap());
        let took = t.elapsed();
        assert!(took >= wait, "gave up after {took:?}, before its {wait:?}");
        assert!(
            took < wait + Duration::from_millis(300),
            "gave up after {took:?}, wait {wait:?}"
        );
    }
    crate::no_subscriptions(&[&b]).await;
    assert_eq!(crate::get(&server, "l20").as_deref(), Some("2"));

    latch.count_down().await.unwrap();
    latch.count_down().await.unwrap();
    assert!(other.wait_for(Duration::from_secs(1)).await.unwrap());
    crate::keys_become(&server, &[]).await;
    // Set again after it opened.
    assert!(latch.try_set_count(1).await.unwrap());
    assert_eq!(other.count().await.unwrap(), 1);
    assert!(latch.delete().await.unwrap());
    assert!(!latch.delete().await.unwrap());
    assert_nothing_left(&server).await;
}

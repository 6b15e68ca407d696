//! An `acquire` called inside a short-lived runtime (a `block_on` on another thread, the
//! client built on the main runtime) and dropped there while its attempt's reply is on its
//! way (the caller gave up, as a timeout would), after which that runtime ends. The attempt
//! took the permit; its reply arrives later. The permit must come back, as it does when the
//! caller's runtime lives on: the attempt must not die with the caller's runtime.

use std::time::Duration;

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_dropped_inside_a_runtime_that_then_ends_gives_back_the_permit_its_attempt_took()
{
    let server = server();
    let (proxy, c, sem, _frozen) = crate::one_permit_behind_a_proxy(&server, "s103").await;
    tokio::task::block_in_place(|| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut acquire = Box::pin(sem.acquire(1));
            assert!(poll_once(&mut acquire).await.is_pending());
            crate::permit_taken(&server, "s103").await;
            drop(acquire);
        });
        drop(rt);
    });
    // The attempt's reply (taken) is let through.
    proxy.clear_overrides();
    let _ = wait_until(Duration::from_secs(3), "the permit given back", || async {
        crate::get(&server, "s103").as_deref() == Some("1")
    })
    .await;
    let before = crate::get(&server, "s103");
    bounded(Duration::from_secs(15), "shutdown", c.shutdown()).await;
    assert_eq!(
        (before.as_deref(), crate::get(&server, "s103").as_deref()),
        (Some("1"), Some("1")),
        "the permit the dropped acquire's attempt took is not back (before shutdown, after it)"
    );
}

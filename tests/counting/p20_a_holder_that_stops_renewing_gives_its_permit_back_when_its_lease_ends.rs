//! A holder that dies without releasing cannot keep its permit: a forgotten guard with a fixed
//! lease of 400 ms, and a renewed guard (watchdog lease 600 ms) whose client is frozen behind a
//! proxy, each give their permit back when their lease ends, with no message: a waiter on
//! another client gets it within its bound (it sleeps at most until the first lease ends).

use std::time::{Duration, Instant};

use relock_testkit::FaultProxy;
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_that_stops_renewing_gives_its_permit_back_when_its_lease_ends() {
    let server = server();
    let proxy = FaultProxy::start(&server.addr()).unwrap();
    let holder = relock::Client::builder()
        .url(proxy.url())
        .watchdog_lease(Duration::from_millis(600))
        .command_timeout(Duration::from_millis(300))
        .connect_timeout(Duration::from_secs(2))
        .build()
        .await
        .unwrap();
    let waiter = client(&server).await;
    let held = holder.permit_expirable_semaphore("p20");
    let wanted = waiter.permit_expirable_semaphore("p20");
    assert!(wanted.try_set_permits(1).await.unwrap());

    // 1. A fixed lease, its guard forgotten (never released, never dropped).
    let guard = held
        .try_acquire(Some(Duration::from_millis(400)))
        .await
        .unwrap()
        .unwrap();
    let taken = Instant::now();
    std::mem::forget(guard);
    let got = bounded(
        Duration::from_secs(5),
        "the waiter",
        wanted.try_acquire_for(Duration::from_secs(4), Some(Duration::from_secs(10))),
    )
    .await
    .unwrap()
    .expect("the expired permit came back within the wait");
    let after = taken.elapsed();
    assert!(
        after >= Duration::from_millis(350),
        "got it {after:?} after a 400 ms lease was taken"
    );
    assert!(
        after < Duration::from_millis(1_500),
        "got it only {after:?} after the lease was taken"
    );
    got.release().await.unwrap();

    // 2. A renewed permit outlives several leases while its client runs...
    let guard = held.acquire(None).await.unwrap();
    assert!(
        wanted
            .try_acquire_for(Duration::from_millis(1_500), None)
            .await
            .unwrap()
            .is_none(),
        "the renewed permit was taken from its live holder"
    );
    assert!(!guard.is_lost());
    // ...and comes back one lease after its client freezes.
    proxy.set_both(relock_testkit::Mode::Freeze);
    let frozen = Instant::now();
    let got = bounded(
        Duration::from_secs(5),
        "the waiter",
        wanted.try_acquire_for(Duration::from_secs(4), None),
    )
    .await
    .unwrap()
    .expect("the frozen holder's permit came back within the wait");
    let after = frozen.elapsed();
    assert!(
        after < Duration::from_millis(1_600),
        "got it only {after:?} after the holder froze"
    );
    bounded(
        Duration::from_secs(2),
        "the frozen guard's lost()",
        guard.lost(),
    )
    .await;
    got.release().await.unwrap();
    assert_eq!(wanted.available().await.unwrap(), 1);
    assert_eq!(wanted.acquired().await.unwrap(), 0);
    drop(guard);
    proxy.set_both(relock_testkit::Mode::Pass);
    holder.shutdown().await;
    waiter.shutdown().await;
    assert_eq!(crate::get(&server, "p20").as_deref(), Some("1"));
}

//! A waiting `lock()` keeps waiting through a server outage longer than the command timeout
//! (its doc says it waits as long as it takes) and takes the lock once the server is back
//! empty; a plain and a fair waiter alike. A bounded call that gives up during the outage
//! returns a transient error that says it holds nothing, and leaves no grant behind.

use std::time::Duration;

use relock_tests::*;

#[tokio::test]
async fn a_waiter_keeps_waiting_through_an_outage_and_a_bounded_call_that_gives_up_holds_nothing() {
    let server = server();
    // Command timeout 1 s: the outage below lasts over twice that.
    let holder = client(&server).await;
    let waiters = client(&server).await;
    let plain = holder.lock("t90:plain").lock().await.unwrap();
    let fair = holder.fair_lock("t90:fair").lock().await.unwrap();
    let plain_waiter = spawn_parked_waiter(&server, &waiters, waiters.lock("t90:plain")).await;
    let fair_waiter = {
        let lock = waiters.fair_lock("t90:fair");
        let before = waiters.parked_waiters();
        let w = tokio::spawn(async move { lock.lock().await });
        wait_until(
            Duration::from_secs(2),
            "the fair waiter to park",
            || async { waiters.parked_waiters() > before },
        )
        .await
        .unwrap();
        w
    };

    server.kill().unwrap();
    // During the outage: a bounded wait gives up with a transient error that says it holds
    // nothing; a call that does not wait fails within about one command timeout.
    let t = std::time::Instant::now();
    let bounded_wait = waiters
        .lock("t90:bounded")
        .try_lock_for(Duration::from_millis(1500))
        .await;
    let e = bounded_wait.expect_err("no server: the bounded wait cannot succeed");
    assert!(e.is_transient(), "{e:?}");
    assert!(
        e.to_string().contains("holds nothing"),
        "the error must say the call holds nothing: {e}"
    );
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    let e = waiters
        .lock("t90:try")
        .try_lock()
        .await
        .expect_err("no server");
    assert!(e.is_transient(), "{e:?}");
    // The outage's length (a fault's parameter, not a synchronisation): over twice the command
    // timeout, which is where a waiter used to give up.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        !plain_waiter.is_finished() && !fair_waiter.is_finished(),
        "a waiting lock() must keep waiting through the outage"
    );

    server.restart_empty().unwrap();
    let (_, g) = bounded(
        Duration::from_secs(10),
        "plain waiter after restart",
        plain_waiter,
    )
    .await
    .unwrap()
    .expect("the plain waiter takes the lock once the server is back");
    let f = bounded(
        Duration::from_secs(10),
        "fair waiter after restart",
        fair_waiter,
    )
    .await
    .unwrap()
    .expect("the fair waiter takes the lock once the server is back");
    assert!(g.fencing_token() > plain.fencing_token());
    assert!(f.fencing_token() > fair.fencing_token());
    // The holder's holds were on the lost server.
    bounded(Duration::from_secs(5), "plain holder lost", plain.lost()).await;
    bounded(Duration::from_secs(5), "fair holder lost", fair.lost()).await;
    g.unlock().await.unwrap();
    f.unlock().await.unwrap();
    // Neither the bounded call nor the try left a grant.
    for name in ["t90:bounded", "t90:try"] {
        assert_eq!(
            server.cmd(&["EXISTS", name]).unwrap().as_int(),
            Some(0),
            "{name}"
        );
    }
    drop((plain, fair));
    waiters.shutdown().await;
    holder.shutdown().await;
    assert_nothing_left(&server).await;
}

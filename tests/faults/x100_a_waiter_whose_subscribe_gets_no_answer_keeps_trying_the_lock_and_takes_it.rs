//! A waiter's SUBSCRIBE gets no answer (its subscriber connection frozen client → server)
//! while the pool still works: `lock()` neither fails nor hangs on the subscription. It
//! keeps trying the lock between subscriptions, and takes it when the holder's lease ends.
//! (Found by review: a subscribe that timed out ended `lock()` with
//! `Timeout { operation: "subscribe" }` after one command timeout.)

use std::time::{Duration, Instant};

use relock_testkit::{Direction, FaultProxy, Mode};
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_whose_subscribe_gets_no_answer_keeps_trying_the_lock_and_takes_it() {
    let server = server();
    let proxy = FaultProxy::start(&server.addr()).unwrap();
    let holder = client(&server).await;
    let waiters = relock::Client::builder()
        .url(proxy.url())
        .command_timeout(Duration::from_secs(1))
        .connect_timeout(Duration::from_secs(2))
        .build()
        .await
        .unwrap();
    let lease = Duration::from_secs(3);
    // Taken before the call: the server starts the lease when it grants, after this, so the
    // lease cannot end sooner than `lease` from here (an instant taken after the reply can be
    // a few ms late).
    let granted = Instant::now();
    let g = holder.lock("x100").with_lease(lease).lock().await.unwrap();
    // The subscriber is among the connections that carry none of these script calls (the
    // others are pool connections these calls did not use): freeze them all.
    let before: Vec<_> = proxy
        .conns()
        .into_iter()
        .map(|c| (c, proxy.conn_bytes(c, Direction::Up)))
        .collect();
    for _ in 0..8 {
        assert!(waiters.lock("x100").try_lock().await.unwrap().is_none());
    }
    let idle: Vec<_> = before
        .iter()
        .filter(|(c, b)| proxy.conn_bytes(*c, Direction::Up) == *b)
        .map(|(c, _)| *c)
        .collect();
    assert!(!idle.is_empty());
    for c in &idle {
        proxy.set_conn(*c, Direction::Up, Some(Mode::Freeze));
    }

    let lock = waiters.lock("x100");
    let r = bounded(Duration::from_secs(10), "lock()", lock.lock()).await;
    let g2 = r.expect("lock() keeps trying through a subscription that gets no answer");
    // Not before the holder's lease ended (nobody released it).
    assert!(granted.elapsed() >= lease, "{:?}", granted.elapsed());
    assert!(g2.fencing_token() > g.fencing_token());
    bounded(
        Duration::from_secs(2),
        "the holder's lease to end",
        g.lost(),
    )
    .await;
    proxy.clear_overrides();
    g2.unlock().await.unwrap();
    drop(g);
    waiters.shutdown().await;
    holder.shutdown().await;
    assert_nothing_left(&server).await;
}

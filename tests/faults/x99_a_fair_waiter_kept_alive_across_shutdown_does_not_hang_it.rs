//! A fair `lock()` future whose "wait" attempt is in flight (holding its line entry's gate, its
//! grant's reply held back) and that is kept alive, unpolled, while the caller runs
//! `shutdown()`. Shutdown finishes (its leave of the line waits for the gate, which the
//! attempt gives back on its own), and nothing is left behind. (Found by review of a design
//! that ran attempts in the caller's task: there shutdown hung.)

use std::time::Duration;

use relock_testkit::{Direction, FaultProxy, Mode};
use relock_tests::*;

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fair_waiter_kept_alive_across_shutdown_does_not_hang_it() {
    let s = server();
    let name = "x99";
    // The holder, straight on the server, with a 1.5 s lease.
    let holder_client = client(&s).await;
    let _held = holder_client
        .fair_lock(name)
        .with_lease(Duration::from_millis(1500))
        .lock()
        .await
        .unwrap();
    let proxy = FaultProxy::start(&s.addr()).unwrap();
    let c = proxied_client(
        &proxy,
        "x99",
        Duration::from_secs(1),
        Duration::from_secs(20),
    )
    .await;
    let lock = c.fair_lock(name);
    // Boxed, not `tokio::pin!`ed, so that it can be dropped at a chosen moment.
    let mut acquire = Box::pin(lock.lock());
    tokio::select! {
        r = &mut acquire => panic!("acquired too early: {:?}", r.map(|_| ())),
        _ = async {
            eventually(Duration::from_secs(3), "in line", || async {
                (fair_line(&s, name).len() == 1).then_some(())
            }).await;
            // And parked: the join's reply has come back. (Freezing while that reply is still
            // on its way would hold it instead, and the client could not make its next
            // attempt at all.)
            eventually(Duration::from_secs(3), "parked", || async {
                (c.parked_waiters() == 1).then_some(())
            }).await;
            // From now on replies are held: the "wait" attempt after the holder's lease ends
            // is granted on the server, its reply does not come back yet.
            proxy.set(Direction::Down, Mode::Freeze);
            eventually(Duration::from_secs(5), "the grant to the waiter", || async {
                hgetall(&s, name).iter().any(|(f, _)| f.starts_with("x99:")).then_some(())
            }).await;
        } => {}
    }
    proxy.set(Direction::Down, Mode::Pass);
    let t = std::time::Instant::now();
    bounded(Duration::from_secs(10), "shutdown", c.shutdown()).await;
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "shutdown took {:?}",
        t.elapsed()
    );
    drop(acquire);
    holder_client.shutdown().await;
    assert_nothing_left(&s).await;
}

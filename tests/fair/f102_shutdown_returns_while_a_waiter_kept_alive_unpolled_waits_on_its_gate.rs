//! A fair waiter (a `try_lock_for` future) of client X is handed the lock while X shuts down.
//! Its future, polled once while shutdown's leave of the line holds the entry's gate, goes
//! (deadline passed) to take the handoff and queues on that gate; then the application keeps
//! the future alive without polling it (a `select!` branch that lost). Tokio's mutex hands
//! the gate to that queued, unpolled future when the leave ends. `shutdown()` must still
//! return: the late round of the kinds' shutdown steps leaves only waiters back in line, and
//! waits at most a command timeout for a gate (found by review: it waited for every entry's
//! gate without a bound, and shutdown hung until the future was dropped).

use std::time::Duration;

use relock_testkit::{Direction, Mode};
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_returns_while_a_waiter_kept_alive_unpolled_waits_on_its_gate() {
    let server = server();
    let h = client(&server).await;
    let proxy = relock_testkit::FaultProxy::start(&server.addr()).unwrap();
    let x = relock::Client::builder()
        .url(proxy.url())
        .fair_heartbeat(Duration::from_secs(10))
        .command_timeout(Duration::from_secs(3))
        .connect_timeout(Duration::from_secs(2))
        .build()
        .await
        .unwrap();
    // Warm X's scripts and subscriber.
    x.fair_lock("warm")
        .lock()
        .await
        .unwrap()
        .unlock()
        .await
        .unwrap();

    let holder = h.fair_lock("k").lock().await.unwrap();
    let lock = x.fair_lock("k");
    let mut w = Box::pin(lock.try_lock_for(Duration::from_millis(1000)));
    tokio::select! {
        r = &mut w => panic!("the waiter returned early: {r:?}"),
        r = wait_until(Duration::from_secs(3), "W in line", || async {
            fair_line(&server, "k").len() == 1
        }) => { r.unwrap(); }
    }
    // Replies to X are held: W's next attempt (when its deadline's timer fires) is sent and
    // its reply waits.
    proxy.set(Direction::Down, Mode::Freeze);
    tokio::select! {
        r = &mut w => panic!("the waiter returned early: {r:?}"),
        _ = tokio::time::sleep(Duration::from_millis(1300)) => {}
    }
    // The holder releases: the lock is handed to W (first in line); the message is held too.
    holder.unlock().await.unwrap();
    let shutdown = {
        let x = x.clone();
        tokio::spawn(async move { x.shutdown().await })
    };
    wait_until(Duration::from_secs(3), "shutdown to begin", || async {
        format!("{x:?}").contains("shut_down: true")
    })
    .await
    .unwrap();
    // Commands from X now take 1.5 s (the leave of the line holds W's gate that long); the
    // attempt's reply and the handoff message go through.
    proxy.set(Direction::Up, Mode::Delay(Duration::from_millis(1500)));
    proxy.set(Direction::Down, Mode::Pass);
    // Until the held replies and message are delivered and the leave waits in the delay.
    wait_until(
        Duration::from_secs(3),
        "the replies in, the leave held",
        || async { proxy.held(Direction::Down) == 0 && proxy.held(Direction::Up) > 0 },
    )
    .await
    .unwrap();
    // W polled once, then kept alive unpolled.
    assert!(poll_once(&mut w).await.is_pending(), "W returned");
    proxy.set(Direction::Up, Mode::Pass);

    let mut shutdown = shutdown;
    let hung = tokio::time::timeout(Duration::from_secs(10), &mut shutdown)
        .await
        .is_err();
    // Dropping the unpolled future lets go of the gate: shutdown then ends at once.
    drop(w);
    if hung {
        bounded(
            Duration::from_secs(2),
            "shutdown once W is dropped",
            shutdown,
        )
        .await
        .unwrap();
    }
    assert!(
        !hung,
        "shutdown() did not return within 10 s while a waiter's future was kept alive unpolled (it returned once that future was dropped)"
    );
}

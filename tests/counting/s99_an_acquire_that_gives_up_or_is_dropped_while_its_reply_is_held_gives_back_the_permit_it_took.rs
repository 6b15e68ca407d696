//! An acquire attempt whose script ran but whose reply never came (its connection was reset
//! with the reply on the way) may have taken the permits. If the `acquire` then gives up (its deadline
//! passed, or it returns the timeout) or its future is dropped, nobody will claim them: relock
//! gives them back under the acquire's request id, once, and a copy still on its way takes
//! nothing. Before, those permits were lost for good (the documented "cannot be undone" case).

use std::time::Duration;

use relock_testkit::Direction;
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_that_gives_up_or_is_dropped_while_its_reply_is_held_gives_back_the_permit_it_took(
) {
    let server = server();
    // A command timeout well above what a loaded machine can stall a healthy reply by: fred judges
    // a connection unresponsive after it and reconnects it, and a connection opened after the
    // freeze below would let the reply through (a CI run once saw `Ok(true)`).
    let (proxy, c) = client_behind_proxy(&server, Duration::from_secs(2)).await;
    let sem = c.semaphore("s99");
    assert!(sem.try_set_permits(1).await.unwrap());
    // Load the acquire script, so the attempts below need no NOSCRIPT round trip.
    assert!(sem.try_acquire(1).await.map(taken).unwrap());
    sem.release(1).await.unwrap();
    let count = || crate::get(&server, "s99");
    let connections = proxy.connections();

    // The attempt's reply is held on its connection until the script has run there; then
    // every frozen connection is reset, so the reply never comes.
    let proxy = &proxy;
    let lose_the_reply = |frozen: Vec<relock_testkit::ConnId>| async move {
        wait_until(
            Duration::from_secs(3),
            "the attempt to take the permit",
            || async { count().as_deref() == Some("0") },
        )
        .await
        .unwrap();
        lose_replies(proxy, &frozen);
    };
    let given_back = || async {
        wait_until(Duration::from_secs(3), "the permit given back", || async {
            count().as_deref() == Some("1")
        })
        .await
        .unwrap_or_else(|e| panic!("{e}: the semaphore of 1 holds {:?}", count()));
    };

    // 1. A `try_acquire` (no wait: it returns the error of its only attempt) whose attempt
    //    took the permit and lost its reply.
    let frozen = proxy.freeze_existing(Direction::Down);
    let (r, ()) = tokio::join!(sem.try_acquire(1), lose_the_reply(frozen));
    assert!(
        matches!(
            r,
            Err(relock::Error::Connection { .. } | relock::Error::Timeout { .. })
        ),
        "the attempt's reply was lost: {r:?}"
    );
    given_back().await;

    // The client's connections reset above are back (a command of each pool connection
    // answered), so that the next freeze holds the next attempt's reply, and so that no
    // command after it is written to a connection whose reset the client has not read yet
    // (that command fails with the reset: a CI run once saw it).
    let reconnected = || async {
        wait_until(Duration::from_secs(5), "the client reconnected", || async {
            proxy.connections() == connections
        })
        .await
        .unwrap();
        for _ in 0..16 {
            sem.available().await.unwrap();
        }
    };
    reconnected().await;

    // 2. An acquire whose future is dropped while its attempt's reply is held.
    let frozen = proxy.freeze_existing(Direction::Down);
    let dropped = tokio::time::timeout(Duration::from_millis(100), sem.acquire(1)).await;
    assert!(dropped.is_err(), "the reply was held: {dropped:?}");
    lose_the_reply(frozen).await;
    given_back().await;
    reconnected().await;

    // Afterwards the semaphore works as before.
    assert!(sem.try_acquire(1).await.map(taken).unwrap());
    assert_eq!(count().as_deref(), Some("0"));
    sem.release(1).await.unwrap();
    assert_eq!(count().as_deref(), Some("1"));
    c.shutdown().await;
    server.cmd(&["DEL", "s99"]).unwrap();
    // The request keys of the two abandoned acquires expire by themselves.
    let left = crate::only_expiring_request_keys_left(&server, "s99").await;
    assert!(left <= 2, "{left} request keys");
}

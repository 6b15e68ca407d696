//! With `persistent_fencing_counters(true)` the counter relock creates never expires (as
//! Redisson's `RFencedLock` keeps its own), so a Java client that comes long after relock's
//! release counts on from relock's token instead of starting again at 1; and a relock client
//! with the default 1 s counter life that uses the name later leaves that counter without an
//! expiry. Tokens rise for every client of the name, whichever side came first (issue 22).

use std::time::Duration;

use relock_tests::*;

const COUNTER: &str = "redisson_lock_token:{t81}";

#[tokio::test]
async fn persistent_fencing_counters_let_a_redisson_client_that_comes_later_count_on() {
    let server = server();
    let persistent = relock::Client::builder()
        .url(server.url())
        .persistent_fencing_counters(true)
        .command_timeout(Duration::from_secs(1))
        .build()
        .await
        .unwrap();
    let g = persistent.lock("t81").lock().await.unwrap();
    let first = g.fencing_token();
    g.unlock().await.unwrap();
    assert_eq!(server.cmd(&["PTTL", COUNTER]).unwrap().as_int(), Some(-1));
    // Redisson's RFencedLock takes it next: INCR on the counter relock left.
    let java = server.cmd(&["INCR", COUNTER]).unwrap().as_int().unwrap() as u64;
    assert_eq!(java, first + 1);

    // A default client later: counts on, and gives the counter no expiry.
    let default = client(&server).await;
    let g = default.lock("t81").lock().await.unwrap();
    assert_eq!(g.fencing_token(), java + 1);
    g.unlock().await.unwrap();
    assert_eq!(server.cmd(&["PTTL", COUNTER]).unwrap().as_int(), Some(-1));
    let java = server.cmd(&["INCR", COUNTER]).unwrap().as_int().unwrap() as u64;
    assert_eq!(java, first + 3);

    // The default client's own counters still expire (nothing left behind).
    let g = default.lock("t81:own").lock().await.unwrap();
    g.unlock().await.unwrap();
    let pttl = server
        .cmd(&["PTTL", "redisson_lock_token:{t81:own}"])
        .unwrap()
        .as_int()
        .unwrap();
    assert!((1..=1000).contains(&pttl), "{pttl}");
    persistent.shutdown().await;
    default.shutdown().await;
    server.cmd(&["DEL", COUNTER]).unwrap();
    assert_nothing_left(&server).await;
}

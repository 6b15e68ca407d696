//! The server stops answering (SIGSTOP) for 8 s while a waiter relies on the subscriber. The
//! keep-alive asks fred for at most one forced reconnect at a time (until fred reports it
//! reconnected), and none while fred is reconnecting already, so when the server answers again
//! the healthy subscriber is reconnected at most once. Found by review: before that, every
//! keep-alive failure during the outage queued a reconnect that fred replayed afterwards (3
//! reconnects of a healthy connection).

use std::time::Duration;

use relock_tests::*;

#[tokio::test(flavor = "current_thread")]
async fn a_long_server_outage_costs_one_subscriber_reconnect_not_a_storm() {
    let captured = capture_traces(tracing::Level::DEBUG, "relock");
    let s = server();
    let other = server();
    let c = relock::Client::builder()
        .url(s.url())
        .command_timeout(Duration::from_secs(1))
        .connect_timeout(Duration::from_secs(2))
        .build()
        .await
        .unwrap();
    // The holder's key is set directly: the waiter's lock stays held throughout.
    s.cmd(&["HSET", "r20", "someone:1", "1"]).unwrap();
    s.cmd(&["PEXPIRE", "r20", "60000"]).unwrap();
    let waiter = spawn_parked_waiter(&s, &c, c.lock("r20")).await;
    drop(other);
    s.pause().unwrap();
    tokio::time::sleep(Duration::from_secs(8)).await;
    let before = captured.count("subscriber (re)connected");
    s.resume().unwrap();
    tokio::time::sleep(Duration::from_secs(6)).await;
    let after = captured.count("subscriber (re)connected") - before;
    let pings = captured.count("did not answer a keep-alive PING");
    let numsub = s.pubsub_numsub("redisson_lock__channel:{r20}").unwrap();
    waiter.abort();
    bounded(Duration::from_secs(10), "shutdown", c.shutdown()).await;
    eprintln!("subscriber reconnects after the server answered again: {after}; keep-alive failures: {pings}; numsub {numsub}");
    assert!(
        after <= 1,
        "the subscriber reconnected {after} times in the 6 s after the server answered again \
         (one is expected); keep-alive failures logged: {pings}"
    );
}

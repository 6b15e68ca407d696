//! A fair waiter waits on its own wake-up, not the channel's: the message naming it wakes it,
//! and so must the moment its client's subscriber may have lost messages. Here the message
//! that hands it the lock is lost (its subscriber drops everything), then the subscriber's
//! connection is reset. The reconnect wakes every waiter, the fair ones included: the waiter
//! asks at once, learns it was handed the lock and returns the grant, long before its next
//! heartbeat (every 12 s here: a 60 s deadline) or the holder's lease would have woken it.

use std::time::{Duration, Instant};

use relock_testkit::{Direction, Mode};
use relock_tests::*;

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fair_waiter_whose_handoff_message_is_lost_is_woken_by_its_subscribers_reconnect() {
    let s = server();
    let name = "x102";
    let proxy = relock_testkit::FaultProxy::start(&s.addr()).unwrap();
    let waiter_client = relock::Client::builder()
        .url(proxy.url())
        .fair_heartbeat(Duration::from_secs(60))
        .command_timeout(Duration::from_secs(1))
        .connect_timeout(Duration::from_secs(2))
        .build()
        .await
        .expect("connect through the proxy");
    let probe = waiter_client.lock("x102:probe");
    let sub = subscriber_conn(&proxy, || {
        let p = probe.clone();
        async move {
            p.is_locked().await.unwrap();
        }
    })
    .await;
    let (holder_client, holder, waiter, field) =
        fair_waiter_behind_a_holder(&s, name, &waiter_client).await;

    proxy.set_conn(sub, Direction::Down, Some(Mode::Blackhole));
    holder.unlock().await.unwrap();
    let released = Instant::now();
    // Handed over on the server; the message saying so went nowhere.
    assert_eq!(hgetall(&s, name), vec![(field.clone(), "1".to_string())]);
    assert!(proxy.reset_conn(sub));

    let (at, g) = bounded(Duration::from_secs(20), "the waiter", waiter)
        .await
        .unwrap();
    let waited = at - released;
    println!("handoff message lost, subscriber reset: the waiter took its grant {waited:?} after the release");
    assert!(
        waited < Duration::from_secs(3),
        "the waiter took its grant {waited:?} after the release (next heartbeat within 12 s)"
    );
    assert_eq!(g.owner(), field);
    g.unlock().await.unwrap();
    proxy.clear_overrides();
    waiter_client.shutdown().await;
    holder_client.shutdown().await;
    assert_nothing_left(&s).await;
}

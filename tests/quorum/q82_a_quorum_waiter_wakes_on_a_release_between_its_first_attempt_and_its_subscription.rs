//! A quorum waiter whose first attempt was refused subscribes to the release channels; a
//! release that lands after that refusal but before the subscription is in place publishes to
//! nobody. The waiter must still get the lock at once (it retries right after subscribing),
//! not sleep out the holder's remaining lease. The waiter reaches every master through a
//! fault proxy that delays its commands, so its subscription takes a while; the holder is
//! direct.

use std::time::{Duration, Instant};

use relock_testkit::{Direction, FaultProxy, Mode};
use relock_tests::*;

const DELAY: Duration = Duration::from_millis(250);

#[tokio::test]
async fn a_quorum_waiter_wakes_on_a_release_between_its_first_attempt_and_its_subscription() {
    let m = masters(5);
    let proxies: Vec<FaultProxy> = m
        .servers()
        .iter()
        .map(|s| FaultProxy::start(&s.addr()).unwrap())
        .collect();
    let holder = quorum_client(&m, Duration::from_secs(30), Duration::ZERO).await;
    // Node timeout above the proxies' delay: the waiter's votes must count, only late.
    let waiter_client = relock::QuorumClient::builder()
        .urls(proxies.iter().map(FaultProxy::url))
        .node_timeout(Duration::from_secs(1))
        .watchdog_lease(Duration::from_secs(30))
        .restart_quarantine(Duration::ZERO)
        .connect_timeout(Duration::from_secs(5))
        .build()
        .await
        .unwrap();
    let name = "q82";
    let channel = format!("redisson_lock__channel:{{{name}}}");
    let held = holder
        .lock(name)
        .with_lease(Duration::from_secs(10))
        .lock()
        .await
        .unwrap();
    for p in &proxies {
        p.set(Direction::Up, Mode::Delay(DELAY));
    }
    // From here the only script calls on the servers are the waiter's (a fixed lease is not
    // renewed).
    for s in m.servers() {
        s.reset_stats().unwrap();
    }
    let waiter = {
        let lock = waiter_client.lock(name);
        tokio::spawn(async move { lock.lock().await.map(|g| (Instant::now(), g)) })
    };
    // The first attempt was refused by a majority: its replies are on their way back (replies
    // are not delayed), and its SUBSCRIBEs will take the proxies' delay to arrive.
    wait_until(
        Duration::from_secs(3),
        "the waiter's first attempt to be refused on a majority",
        || async {
            m.servers()
                .iter()
                .filter(|s| s.command_calls("evalsha").unwrap() >= 1)
                .count()
                >= 3
        },
    )
    .await
    .unwrap();
    let released = Instant::now();
    held.unlock().await.unwrap();
    // The release came before the waiter's subscription on every node: it woke nobody.
    for (i, s) in m.servers().iter().enumerate() {
        assert_eq!(
            s.pubsub_numsub(&channel).unwrap(),
            0,
            "node {i}: the waiter was already subscribed when the lock was released; the race was not set up"
        );
    }
    let (at, g) = bounded(Duration::from_secs(15), "the waiter", waiter)
        .await
        .unwrap()
        .unwrap();
    let took = at - released;
    assert!(
        took < Duration::from_secs(2),
        "the waiter got the lock {took:?} after the release (the holder's lease was 10 s)"
    );
    assert!(!g.is_lost());
    g.unlock().await.unwrap();
    for p in &proxies {
        p.heal();
    }
    waiter_client.shutdown().await;
    holder.shutdown().await;
    let all: Vec<&RedisServer> = m.servers().iter().collect();
    assert_nothing_left_on(&all).await;
}

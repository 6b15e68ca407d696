//! A Redisson `RLock` waiter decodes every message of `redisson_lock__channel:{name}` as a
//! number (Redisson's `LongCodec`), and logs "Unable to decode data" for anything else. relock's
//! fair lock names its waiters in its messages (`<field>`, `<field>=<token>`): those go on
//! relock's own `relock_fair_channel:{name}`, and the Redisson channel only ever carries `0`.
//! Fair waiters still get the lock in order by handoff, and a force-unlock of a fair lock with
//! waiters in line is announced on both (the holder's watch listens on Redisson's channel).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use fred::interfaces::{ClientLike, EventInterface, PubsubInterface};
use relock::fred;
use relock_tests::*;

/// A raw subscriber (as a Java service's would be) that records every message of `channels`.
async fn listen(
    server: &relock_testkit::RedisServer,
    channels: &[&str],
) -> (
    fred::clients::SubscriberClient,
    Arc<Mutex<Vec<(String, String)>>>,
) {
    let config = fred::types::config::Config::from_url(&server.url()).unwrap();
    let sub = fred::types::Builder::from_config(config)
        .build_subscriber_client()
        .unwrap();
    sub.init().await.unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let mut rx = sub.message_rx();
    tokio::spawn(async move {
        while let Ok(m) = rx.recv().await {
            let v = m.value.as_string().unwrap_or_default();
            s.lock().unwrap().push((m.channel.to_string(), v));
        }
    });
    for c in channels {
        sub.subscribe(*c).await.unwrap();
    }
    (sub, seen)
}

#[tokio::test]
async fn a_redisson_waiter_on_a_fair_locks_name_hears_only_numbers_and_fair_waiters_hear_their_own_channel(
) {
    let server = server();
    let redisson = "redisson_lock__channel:{f100}";
    let fair_channel = "relock_fair_channel:{f100}";
    let (sub, seen) = listen(&server, &[redisson, fair_channel]).await;
    let a = client(&server).await;
    let b = client(&server).await;
    let c = client(&server).await;

    let held = a.fair_lock("f100").lock().await.unwrap();
    // Two fair waiters in line, b first.
    let server = &server;
    #[allow(clippy::async_yields_async)]
    let wait_in_line = |client: relock::Client, n: usize| {
        let lock = client.fair_lock("f100");
        let before = client.parked_waiters();
        async move {
            let w = tokio::spawn(async move { lock.lock().await });
            wait_until(Duration::from_secs(3), "a fair waiter to park", || async {
                client.parked_waiters() > before && fair_line(server, "f100").len() == n
            })
            .await
            .unwrap();
            w
        }
    };
    // (A closure returning a future: the waiter's JoinHandle comes back once it is parked.)
    let wb = wait_in_line(b.clone(), 1).await;
    let wc = wait_in_line(c.clone(), 2).await;
    // The waiters listen on the fair channel, not on Redisson's.
    assert_eq!(
        server.pubsub_numsub(fair_channel).unwrap(),
        3,
        "b, c and our listener"
    );

    // a → b → c by handoff, each release naming the next on the fair channel.
    let t_a = held.fencing_token();
    held.unlock().await.unwrap();
    let gb = bounded(Duration::from_secs(3), "b takes the handoff", wb)
        .await
        .unwrap()
        .unwrap();
    let t_b = gb.fencing_token();
    gb.unlock().await.unwrap();
    let gc = bounded(Duration::from_secs(3), "c takes the handoff", wc)
        .await
        .unwrap()
        .unwrap();
    assert!(gc.fencing_token() > t_b && t_b > t_a);

    // A waiter in line while c's hold is force-unlocked: the waiter is told on the fair
    // channel, and Redisson's channel gets "0" (which c's watch hears).
    let wb = wait_in_line(b.clone(), 1).await;
    assert!(a.fair_lock("f100").force_unlock().await.unwrap());
    bounded(
        Duration::from_secs(2),
        "c hears of the force-unlock",
        gc.lost(),
    )
    .await;
    let gb = bounded(
        Duration::from_secs(3),
        "b takes the force-unlocked lock",
        wb,
    )
    .await
    .unwrap()
    .unwrap();
    // Released with nobody in line: Redisson's "0" wakes plain waiters of the name.
    gb.unlock().await.unwrap();

    let expect_on_fair = 3; // a→b and b→c handoffs, the force-unlock's word to b
    wait_until(
        Duration::from_secs(3),
        "every message to arrive",
        || async {
            let seen = seen.lock().unwrap();
            seen.iter().filter(|(ch, _)| ch == fair_channel).count() >= expect_on_fair
                && seen.iter().filter(|(ch, _)| ch == redisson).count() >= 2
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e}: {:?}", seen.lock().unwrap()));
    let seen = seen.lock().unwrap().clone();
    let on_redisson: Vec<&String> = seen
        .iter()
        .filter(|(ch, _)| ch == redisson)
        .map(|(_, m)| m)
        .collect();
    let on_fair: Vec<&String> = seen
        .iter()
        .filter(|(ch, _)| ch == fair_channel)
        .map(|(_, m)| m)
        .collect();
    for m in &on_redisson {
        assert!(
            m.parse::<i64>().is_ok(),
            "Redisson cannot decode {m:?} on {redisson}: {seen:?}"
        );
    }
    assert_eq!(
        on_redisson,
        ["0", "0"],
        "the force-unlock's and the last release's: {seen:?}"
    );
    assert_eq!(on_fair.len(), expect_on_fair, "{seen:?}");
    assert!(
        on_fair[0].contains('=') && on_fair[1].contains('='),
        "handoffs carry tokens: {seen:?}"
    );
    assert!(
        on_fair[2].contains(':') && !on_fair[2].contains('='),
        "the force-unlock names b: {seen:?}"
    );

    sub.quit().await.unwrap();
    for c in [a, b, c] {
        c.shutdown().await;
    }
    assert_nothing_left(server).await;
}

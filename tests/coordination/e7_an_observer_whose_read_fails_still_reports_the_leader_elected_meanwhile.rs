//! Review repro: `observe_into` treats a failed read as "transient (a reconnect): the
//! subscriber's reconnect wakes us again". When only a command connection fails (a read that
//! times out on a stalled pool connection, while the subscriber connection is fine), nothing
//! wakes the observer again: with no leader known before, it has no lease end to re-check at,
//! so the leader elected meanwhile is never reported (until the next change of the election).

use std::time::Duration;

use relock_testkit::{Direction, Mode};
use relock_tests::*;

#[tokio::test]
async fn an_observer_whose_read_fails_still_reports_the_leader_elected_meanwhile() {
    let server = server();
    let a = client(&server).await;
    let (proxy, d) = client_behind_proxy(&server, Duration::from_millis(500)).await;
    let name = "e7";
    let mut obs = d.election(name).observe();
    wait_until(
        Duration::from_secs(2),
        "the observer subscribed",
        || async {
            server
                .pubsub_numsub("relock_election_channel:{e7}")
                .unwrap()
                == 1
                && server.pubsub_numsub("redisson_lock__channel:{e7}").unwrap() == 1
        },
    )
    .await
    .unwrap();
    // The observer's client's subscriber connection: the one that carries no pool traffic.
    let probe = d.lock("e7:probe");
    let before: Vec<_> = proxy
        .conns()
        .into_iter()
        .map(|c| (c, proxy.conn_bytes(c, Direction::Up)))
        .collect();
    for _ in 0..24 {
        probe.is_locked().await.unwrap();
    }
    // Each read's bytes passed the proxy before its reply came back.
    let pool: Vec<_> = before
        .iter()
        .filter(|(c, b)| proxy.conn_bytes(*c, Direction::Up) != *b)
        .map(|(c, _)| *c)
        .collect();
    assert_eq!(pool.len(), before.len() - 1, "one subscriber connection");

    // The command connections stall (their replies held); the subscriber's is fine.
    for &c in &pool {
        proxy.set_conn(c, Direction::Down, Some(Mode::Freeze));
    }
    let la = a.election(name).campaign("a").await.unwrap();
    // The observer hears "elected", reads, and its read's reply is held...
    wait_until(
        Duration::from_secs(2),
        "the observer's read held",
        || async {
            pool.iter()
                .any(|c| proxy.conn_held(*c, Direction::Down) > 0)
        },
    )
    .await
    .unwrap();
    // ...past its 500 ms command timeout, on the server's clock (a probe key's TTL).
    server.cmd(&["SET", "e7:probe", "1", "PX", "800"]).unwrap();
    wait_until(
        Duration::from_secs(3),
        "past the read's timeout",
        || async { server.cmd(&["EXISTS", "e7:probe"]).unwrap().as_int() == Some(0) },
    )
    .await
    .unwrap();
    lose_replies(&proxy, &pool);
    // The observer's client reads the leader again.
    wait_until(Duration::from_secs(3), "the pool back", || async {
        matches!(d.election(name).leader().await, Ok(Some(_)))
    })
    .await
    .unwrap();

    let event = tokio::time::timeout(Duration::from_secs(5), obs.next()).await;
    assert!(
        matches!(&event, Ok(Some(Ok(relock::LeaderEvent::Elected(l)))) if l.term == la.term()),
        "5 s after the connections recovered, a leading since 2 s ago: the observer gave {event:?}"
    );
    drop(obs);
    la.resign().await.unwrap();
    a.shutdown().await;
    d.shutdown().await;
}

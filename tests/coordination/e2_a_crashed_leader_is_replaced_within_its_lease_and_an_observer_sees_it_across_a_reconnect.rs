//! A leader whose client stops answering (its connections frozen, as a crash or a partition)
//! is replaced within its lease plus one renewal period: the standby waiting in `campaign`
//! leads with a higher term, the old leader's `lost()` fires by its lease, and an observer sees
//! the term expire and the new one begin; after the observer's subscriber connection is killed,
//! it still sees the next change (it re-reads after the reconnect).

use std::time::{Duration, Instant};

use relock::LeaderEvent;
use relock_testkit::Mode;
use relock_tests::*;

async fn next(obs: &mut relock::Observation) -> LeaderEvent {
    bounded(Duration::from_secs(5), "an election event", obs.next())
        .await
        .expect("the observation goes on")
        .expect("no error")
}

#[tokio::test]
async fn a_crashed_leader_is_replaced_within_its_lease_and_an_observer_sees_it_across_a_reconnect()
{
    let server = server();
    let lease = Duration::from_millis(900);
    let proxy = relock_testkit::FaultProxy::start(&server.addr()).unwrap();
    let a = relock::Client::builder()
        .url(proxy.url())
        .watchdog_lease(lease)
        .command_timeout(Duration::from_millis(300))
        .connect_timeout(Duration::from_secs(2))
        .build()
        .await
        .unwrap();
    let b = client_with_lease(&server, lease).await;
    let d = client(&server).await;
    let name = "e2";
    let la = a.election(name).campaign("a").await.unwrap();
    let t1 = la.term();
    let mut obs = d.election(name).observe();
    assert!(matches!(next(&mut obs).await, LeaderEvent::Elected(l) if l.term == t1));
    let standby = {
        let e = b.election(name);
        tokio::spawn(async move { e.campaign("b").await })
    };
    wait_until(Duration::from_secs(2), "b in line", || async {
        fair_line(&server, name).len() == 1
    })
    .await
    .unwrap();

    // a's client goes silent.
    let frozen = Instant::now();
    proxy.set_both(Mode::Blackhole);
    let lb = bounded(Duration::from_secs(5), "b to take over", standby)
        .await
        .unwrap()
        .unwrap();
    let took = frozen.elapsed();
    assert!(
        took < lease + lease / 3 + Duration::from_millis(700),
        "{took:?}"
    );
    assert!(lb.term() > t1);
    bounded(Duration::from_secs(2), "a's loss", la.lost()).await;
    assert_eq!(next(&mut obs).await, LeaderEvent::Expired { term: t1 });
    assert!(matches!(next(&mut obs).await, LeaderEvent::Elected(l) if l.term == lb.term()));

    // The observer's subscriber connection is killed; the next change still reaches it.
    assert!(server.client_kill_type("pubsub").unwrap() >= 1);
    lb.proclaim("b2").await.unwrap();
    match next(&mut obs).await {
        LeaderEvent::ValueChanged(l) => assert_eq!(l.value, "b2"),
        e => panic!("expected the value change, got {e:?}"),
    }
    lb.resign().await.unwrap();
    assert!(matches!(next(&mut obs).await, LeaderEvent::Resigned { .. }));
    drop(la);
    drop(obs);
    proxy.set_both(Mode::Pass);
    a.shutdown().await;
    b.shutdown().await;
    d.shutdown().await;
}
